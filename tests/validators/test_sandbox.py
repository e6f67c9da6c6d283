"""The sandbox itself: the warm pool agrees with the one-shot reference, isolation is enforced."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import sample_scripts
from validators.cad.validate import validate_cad
from validators.sandbox import (
    Isolation,
    Limits,
    OneShot,
    SandboxPool,
    SandboxUnavailable,
    Status,
    isolation,
)

FAILING = {
    "exception": "x = 1\nraise ValueError('bad width')\n",
    "timeout": "while True:\n    pass\n",
    "crash": "import ctypes\nctypes.string_at(0)\n",
}


def test_pool_and_one_shot_give_the_same_reports(pool: SandboxPool) -> None:
    scripts = [p.read_text() for p in sample_scripts()[:3]] + list(FAILING.values())
    limits = Limits(wall_s=3.0)
    for source in scripts:
        warm = validate_cad(source, pool, limits=limits).to_dict()
        cold = validate_cad(source, OneShot(), limits=limits).to_dict()
        for report in (warm, cold):
            report["metrics"].pop("duration_s", None)
            report["metrics"].pop("peak_memory_mb", None)
            report["metrics"].get("handover", {}).pop("read_ms", None)
            report["checks"].get("executes", {}).get("detail", {}).pop("stderr", None)
        assert warm == cold


def test_result_carries_status_duration_memory_and_output(pool: SandboxPool) -> None:
    result = pool.run("python", "import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert result.status is Status.OK
    assert result.stdout == "out\n" and result.stderr == "err\n"
    assert 0 < result.duration_s < 5 and result.peak_memory_mb > 0
    assert result.to_dict()["status"] == "ok"


def test_bad_code_never_raises(pool: SandboxPool) -> None:
    for source in [
        "def (",
        "raise KeyboardInterrupt",
        "raise SystemExit(3)",
        "import os; os.abort()",
    ]:
        result = pool.run("python", source, limits=Limits(wall_s=2))
        assert result.status in (Status.ERROR, Status.KILLED)
        assert result.error and result.error["message"]


def test_program_runs_as_nobody_without_network_in_its_own_pid_namespace(pool: SandboxPool) -> None:
    result = pool.run(
        "python",
        "import os, socket\nprint(os.getuid(), os.getppid(), socket.if_nameindex())\n",
    )
    assert result.ok
    uid, parent, *_ = result.stdout.split(maxsplit=2)
    assert uid == "65534" and parent == "1"
    assert "eth" not in result.stdout


def test_it_refuses_to_run_without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    isolation.probe.cache_clear()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    try:
        with pytest.raises(SandboxUnavailable, match="GENSERVICE_UNSAFE_SANDBOX"):
            SandboxPool(size=1, preload=())
    finally:
        isolation.probe.cache_clear()


def test_unsafe_mode_runs_but_warns_loudly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.warns(RuntimeWarning, match="UNSAFE"):
        unsafe = SandboxPool(size=1, preload=(), isolation=Isolation("none"))
    with unsafe:
        result = unsafe.run(
            "python", "print(6 * 7)\nwhile True:\n    pass\n", limits=Limits(wall_s=1)
        )
    assert result.status is Status.TIMEOUT and result.stdout == "42\n"
    assert "UNSAFE" in capsys.readouterr().err


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="wall_s"):
        Limits(wall_s=float("nan"))
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)
    with pytest.raises(ValueError, match="isolation mode"):
        Isolation("docker")


def test_sandbox_dies_with_its_parent() -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.validators.hostile import _children, _pid_namespace

    host = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from validators.sandbox import SandboxPool\n"
            "pool = SandboxPool(size=1, preload=())\n"
            "pid = pool.run('python', 'import os; print(os.getpid())').stdout.strip()\n"
            "print(pid, flush=True)\n"
            "print('ready', flush=True)\n"
            "import time; time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert host.stdout is not None
    # The run is PID 3 under its worker, PID 1; PID 2 is the measurer waiting beside it.
    assert host.stdout.readline().strip() == "3"
    assert host.stdout.readline().strip() == "ready"
    tree, frontier = [], [host.pid]
    while frontier:
        kids = _children(frontier.pop())
        tree += kids
        frontier += kids
    sandbox_ns = {_pid_namespace(p) for p in tree} - {_pid_namespace(os.getpid()), None}
    before = {
        p for p in os.listdir("/proc") if p.isdigit() and _pid_namespace(int(p)) in sandbox_ns
    }
    assert before, "the sandbox's processes should be visible from the host"
    host.send_signal(signal.SIGKILL)
    host.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = {p for p in before if os.path.exists(f"/proc/{p}")}
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, "sandbox processes outlived the process that started them"


def _wait_until_dead(pid: int, timeout_s: float = 10.0) -> None:
    """Until the process has exited (a zombie or gone), at most timeout_s."""
    import time
    from pathlib import Path

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.02)


def test_a_worker_killed_from_outside_is_replaced() -> None:
    import os

    with SandboxPool(size=1, preload=()) as small:
        (victim,) = small.worker_pids()
        os.killpg(victim, 9)
        _wait_until_dead(victim)  # on a loaded machine a killed process takes a moment to exit
        result = small.run("python", "print('still serving')")
        if not result.ok:  # the run that met the dead worker fails cleanly; the next one works
            assert result.status is Status.SANDBOX_ERROR
            result = small.run("python", "print('still serving')")
        assert result.ok and result.stdout == "still serving\n"
        assert small.worker_pids() != [victim]
