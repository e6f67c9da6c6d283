"""`genservice run`: the whole service on one machine, quietly.

The embedded default: SQLite and a broker in the data directory, the API and one worker per queue
group as child processes that it restarts when they die and stops on Ctrl-C. The terminal gets a
short block (where everything is, the first-run key) and what needs a person: warnings, errors,
tracebacks, a child that died. The children's own output goes to DATA_DIR/logs/run.log
(`--verbose` shows it on the terminal instead).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from genservice.cli.common import UsageError, cli_device
from genservice.cli.service import QUEUE_GROUPS, open_database, service_settings

RESTART_WINDOW_S, RESTART_LIMIT = 60.0, 5
RUN_LOG, LOG_ROTATE_BYTES, TAIL_LINES = "run.log", 20 * 1024 * 1024, 20


@dataclass
class Child:
    """A supervised child process, its recent restarts and its last lines of output."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    restarts: list[float] = field(default_factory=list)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    reader: threading.Thread | None = None

    def start(self, env: dict[str, str], output: RunLog | None) -> None:
        """Start (or restart) the process in its own process group; its output goes to
        `output` when given, else to this terminal."""
        if output is None:
            self.process = subprocess.Popen(self.argv, env=env, start_new_session=True)
            return
        self.tail = deque(maxlen=TAIL_LINES)  # this run's lines only
        self.process = subprocess.Popen(
            self.argv,
            env={**env, "PYTHONUNBUFFERED": "1"},  # lines reach the log as they are written
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.reader = output.follow(self)

    def stop(self, sig: int) -> None:
        """Signal the child's whole process group."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass

    def drained(self, timeout: float) -> None:
        """Wait (a little) until its output has been read to the end."""
        if self.reader is not None:
            self.reader.join(timeout)


class RunLog:
    """The children's output: every line into the run log, and the lines at WARNING or above
    (and tracebacks) echoed on this terminal. One reader thread per child drains its pipe, so a
    child never blocks on a full pipe."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size > LOG_ROTATE_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        self.path = path
        self.lock = threading.Lock()
        self.file = path.open("a", encoding="utf-8", buffering=1)
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        self.file.write(f"==== genservice run started {started} (pid {os.getpid()})\n")

    def follow(self, child: Child) -> threading.Thread:
        """Start the thread that drains the child's output."""
        assert child.process is not None and child.process.stdout is not None
        reader = threading.Thread(
            target=self._drain, args=(child, child.process.stdout), name=child.name, daemon=True
        )
        reader.start()
        return reader

    def _drain(self, child: Child, stream: IO[bytes]) -> None:
        echoing = False
        with stream:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                echoing = echoed(line, echoing)
                with self.lock:
                    child.tail.append(line)
                    try:
                        self.file.write(f"{child.name} | {line}\n")
                    except ValueError:  # closed on shutdown; stop echoing too
                        return
                    if echoing:
                        with contextlib.suppress(OSError):  # no terminal: keep draining
                            print(f"[{child.name}] {line}", file=sys.stderr, flush=True)

    def say(self, message: str) -> None:
        """Our own message: on the terminal and in the log."""
        with self.lock:
            if not self.file.closed:
                self.file.write(f"genservice | {message}\n")
            _say(message)

    def show(self, block: str) -> None:
        """Print a block on stdout, not in the middle of a child's echoed lines."""
        with self.lock:
            print(block, flush=True)

    def show_tail(self, child: Child) -> None:
        """A child's last lines of output on stderr, after it exited unexpectedly."""
        lines = "\n".join(f"    {line}" for line in child.tail) or "    (no output)"
        with self.lock:
            print(f"{child.name}'s last lines (all in {self.path}):\n{lines}", file=sys.stderr)

    def close(self) -> None:
        """Say that the service stopped and close the log (call after the children stopped)."""
        with self.lock:
            self.file.write("genservice | stopped\n")
            self.file.close()
            _say("stopped")


# "[2026-01-01 12:00:00,000: WARNING/MainProcess] ..." (Celery), "ERROR:    ..." (uvicorn) and
# "WARNING:name:..." (logging's default format).
RECORD = re.compile(
    r"^(?:\[[^\]]*: (?P<celery>[A-Z]+)/[^\]]*\]|(?P<plain>DEBUG|INFO|WARNING|ERROR|CRITICAL):)"
)
LOUD = {"WARNING", "ERROR", "CRITICAL"}
# Warnings that every start logs and that need nobody's attention (still in the log).
HARMLESS = ("No hostname was supplied",)  # kombu, about the folder broker's unused hostname


def echoed(line: str, echoing: bool) -> bool:
    """Whether a child's output line goes to the terminal too: log records at WARNING or above
    and tracebacks; a line that starts no record (a continuation) goes where the last one went."""
    record = RECORD.match(line)
    if record:
        level = record["celery"] or record["plain"]
        return level in LOUD and not any(text in line for text in HARMLESS)
    if line.startswith("Traceback (most recent call last)"):
        return True
    return echoing


def run_command(args: argparse.Namespace) -> int:
    """Run `genservice run`: the API and workers, supervised, until Ctrl-C."""
    env = _run_environment(args)
    settings = service_settings()
    env["GENSERVICE_DATA_DIR"] = str(settings.data_path)  # children may start elsewhere
    settings.data_path.mkdir(parents=True, exist_ok=True)
    db = open_database(settings)
    key_line = _first_run_key(db, settings.data_path)
    children = _children(args.no_workers)
    output = None if args.verbose else RunLog(settings.data_path / "logs" / RUN_LOG)
    say = output.say if output is not None else _say
    workers = len(children) - 1
    starting = "starting the API" + (f" and {workers} workers" if workers else "")
    say(starting + (f"; their output goes to {output.path}" if output is not None else ""))
    stopping = False

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)  # before the first child: none is left behind
    signal.signal(signal.SIGTERM, on_signal)
    url = f"http://{settings.host}:{settings.port}"
    announced = gave_up = False
    try:
        for child in children:
            child.start(env, output)
        while not stopping:
            time.sleep(0.5)
            if not announced and _healthy(url):
                announced = True
                block = _ready_block(settings, url, key_line, output.path if output else None)
                if output is None:
                    print(block, flush=True)
                else:
                    output.show(block)
            for child in children:
                assert child.process is not None
                code = child.process.poll()
                if code is None or stopping:
                    continue
                now = time.monotonic()
                child.restarts = [t for t in child.restarts if now - t < RESTART_WINDOW_S]
                giving_up = len(child.restarts) >= RESTART_LIMIT
                if giving_up:
                    say(f"{child.name} keeps exiting (status {code}); stopping the service")
                else:
                    say(f"{child.name} exited with status {code}; restarting it")
                if output is not None and (giving_up or not child.restarts):
                    child.drained(timeout=2)
                    output.show_tail(child)
                if giving_up:
                    stopping = gave_up = True
                    break
                child.restarts.append(now)
                child.start(env, output)
    finally:
        say("stopping")
        for child in children:
            child.stop(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            if child.process is None:
                continue
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.stop(signal.SIGKILL)
                child.process.wait()
        if output is not None:
            for child in children:
                child.drained(timeout=2)  # a grandchild may hold the pipe open: don't wait for it
            output.close()
    return 1 if gave_up else 0  # a service that could not keep running did not succeed


def _children(no_workers: bool) -> list[Child]:
    """The API, and a worker per queue group unless --no-workers."""
    genservice = [sys.executable, "-m", "genservice"]
    children = [Child("api", [*genservice, "api"])]
    for group in () if no_workers else QUEUE_GROUPS:
        queues = ",".join(group)
        children.append(Child(f"worker[{queues}]", [*genservice, "worker", "--queues", queues]))
    return children


def _run_environment(args: argparse.Namespace) -> dict[str, str]:
    """The environment for the children, with the command line's choices as settings."""
    env = dict(os.environ)
    if args.data_dir is not None:
        env["GENSERVICE_DATA_DIR"] = str(args.data_dir)
    if args.model is not None:
        from genservice.generation.loader import ModelNotFoundError, check_model_dir

        try:
            env["GENSERVICE_MODEL_DIR"] = str(check_model_dir(args.model))
        except ModelNotFoundError as exc:
            raise UsageError(str(exc)) from exc
    if args.host:
        env["GENSERVICE_HOST"] = args.host
    if args.port is not None:
        env["GENSERVICE_PORT"] = str(args.port)
    if args.device:
        env["GENSERVICE_DEVICE"] = cli_device(args.device)
    os.environ.update(env)
    return env


def _ready_block(settings: Any, url: str, key_line: str | None, log: Path | None) -> str:
    """What `genservice run` prints once the API answers: where everything is."""
    broker = "embedded (a folder in the data directory)"
    if not settings.embedded_broker:
        broker = mask_password(settings.broker_url)
    lines = [
        "genservice is running (Ctrl-C stops it)",
        f"  editor and API  {url}",
        f"  API docs        {url}/docs",
        f"  data            {settings.data_path}",
        f"  broker          {broker}",
        f"  database        {mask_password(settings.database)}",
        f"  log             {log or 'on this terminal (--verbose)'}",
    ]
    if key_line:
        lines += ["  " + line for line in key_line.splitlines()]
    return "\n".join(lines)


def mask_password(url: str) -> str:
    """The URL with its password, if any, replaced by ****."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:****@{host}{slash}{path}"


def _first_run_key(db: Any, data_dir: Path) -> str | None:
    """Create the local key on first run (kept, readable by the owner only, in the data dir)."""
    from genservice.store.keys import create_key, list_keys

    key_file = data_dir / "local-api-key"
    if list_keys(db):
        if key_file.is_file():
            return f"local API key (in {key_file}): {key_file.read_text().strip()}"
        return None
    made = create_key(db, "local")
    key_file.touch(mode=0o600)
    key_file.write_text(made.key + "\n")
    return f"first run: created a local API key (kept in {key_file}):\n{made.key}"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _say(message: str) -> None:
    print(f"[genservice] {message}", file=sys.stderr, flush=True)
