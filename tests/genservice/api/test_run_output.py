"""What `genservice run` shows: one short block on the terminal (where to go, the key), the API's
and workers' own output in DATA_DIR/logs/run.log, warnings, errors and a dead child's last lines
on the terminal too; `--verbose` shows everything there, as before."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from genservice.cli.run import RESTART_LIMIT, echoed, mask_password
from tests.genservice.api.service import Service

# The Celery worker banner and the INFO records that used to flood the terminal.
BANNER = ("[config]", "[queues]", ".> transport:")
NOISE = (*BANNER, "celery@", "INFO", "Uvicorn running on")


def _wait_for(what: str, path: Path, timeout: float = 90, count: int = 1) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.is_file() else ""
        if text.count(what) >= count:
            return text
        time.sleep(0.2)
    raise AssertionError(f"{what!r} not in {path} after {timeout} s:\n{text[-3000:]}")


@pytest.mark.parametrize(
    ("line", "before", "shown"),
    [
        ("[2026-01-01 12:00:00,000: INFO/MainProcess] generate-1@vm ready.", True, False),
        ("[2026-01-01 12:00:00,000: WARNING/MainProcess] job j: lost", False, True),
        ("[2026-01-01 12:00:00,000: ERROR/MainProcess] Task failed", False, True),
        ("ERROR:    [Errno 98] address already in use", False, True),
        ("CRITICAL:root:out of disk", False, True),
        ('INFO:     127.0.0.1:5 - "GET /v1/ERROR HTTP/1.1" 404 Not Found', True, False),
        ("Traceback (most recent call last):", False, True),
        ('  File "x.py", line 1, in <module>', True, True),  # continues a traceback
        ("ValueError: bad", True, True),
        (" -------------- [queues]", False, False),  # banner lines follow no loud record
        ("[2026-01-01 12:00:00,000: WARNING/MainProcess] No hostname was supplied.", False, False),
    ],
)
def test_which_lines_reach_the_terminal(line: str, before: bool, shown: bool) -> None:
    assert echoed(line, before) is shown


def test_passwords_in_urls_are_masked() -> None:
    assert mask_password("redis://:s3cret@host:6379/0") == "redis://:****@host:6379/0"
    assert mask_password("postgresql+psycopg://me:pw@db/gs") == "postgresql+psycopg://me:****@db/gs"
    assert mask_password("amqp://guest@rabbit//") == "amqp://guest@rabbit//"
    assert mask_password("sqlite:////var/genservice/genservice.db") == (
        "sqlite:////var/genservice/genservice.db"
    )


@pytest.mark.slow
def test_the_terminal_gets_a_short_block_and_the_log_gets_the_rest(tmp_path: Path) -> None:
    service = Service(tmp_path / "data").start()
    run_log = service.data_dir / "logs" / "run.log"
    try:
        terminal = _wait_for("API docs", service.log)
        _wait_for("[queues]", run_log, count=2)  # both workers' banners
        time.sleep(1)  # anything else they say at start
        terminal = service.log.read_text()
        assert f"{service.url}\n" in terminal and f"{service.url}/docs" in terminal
        assert service.key in terminal and "first run: created a local API key" in terminal
        assert str(run_log) in terminal and str(service.data_dir) in terminal
        assert "broker          embedded" in terminal and "database        sqlite:///" in terminal
        assert [noise for noise in NOISE if noise in terminal] == []
        assert len(terminal.splitlines()) <= 15, terminal
        logged = run_log.read_text()
        assert all(part in logged for part in BANNER) and "Uvicorn running on" in logged
        # A child that dies says so on the terminal, with its last lines and where the rest is.
        os.kill(service.pid_of("--queues generate"), signal.SIGKILL)
        terminal = _wait_for("last lines", service.log)
        assert "worker[generate] exited with status -9; restarting it" in terminal
        assert f"(all in {run_log})" in terminal and "generate-" in terminal.split("last lines")[1]
        service.stop()
        assert service.process is not None and service.process.returncode == 0
    finally:
        service.stop()
    assert run_log.read_text().rstrip().endswith("genservice | stopped")


@pytest.mark.slow
def test_verbose_shows_the_workers_own_output(tmp_path: Path) -> None:
    service = Service(tmp_path / "data", args=("--verbose",)).start()
    try:
        terminal = _wait_for("[queues]", service.log, count=2)
        assert all(part in terminal for part in BANNER) and "Uvicorn running on" in terminal
        terminal = _wait_for("API docs", service.log)
        assert service.key in terminal and "on this terminal (--verbose)" in terminal
    finally:
        service.stop()
    assert not (service.data_dir / "logs" / "run.log").exists()


@pytest.mark.slow
def test_a_worker_that_keeps_dying_stops_the_service_with_status_1(tmp_path: Path) -> None:
    service = Service(tmp_path / "data").start()
    try:
        _wait_for("API docs", service.log)
        killed: set[int] = set()
        while "keeps exiting" not in service.log.read_text():
            assert len(killed) <= RESTART_LIMIT + 1, service.log.read_text()[-3000:]
            try:
                pid = service.pid_of("--queues generate", timeout=2)
            except AssertionError:  # between a death and its restart, or given up
                continue
            if pid not in killed:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            time.sleep(0.2)
        assert service.process is not None
        assert service.process.wait(timeout=60) == 1  # not a clean stop: the caller must know
    finally:
        service.stop()
