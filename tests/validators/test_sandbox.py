"""The sandbox itself: the warm pool agrees with the one-shot reference, isolation is enforced."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import sample_scripts
from validators.cad.validate import validate_cad
from validators.sandbox import (
    Isolation,
    Limits,
    SandboxPool,
    SandboxResult,
    SandboxUnavailable,
    Status,
    isolation,
    run_once,
)

FAILING = {
    "exception": "x = 1\nraise ValueError('bad width')\n",
    "timeout": "while True:\n    pass\n",
    "crash": "import ctypes\nctypes.string_at(0)\n",
}


class OneShot:
    """The reference path behind the same interface as the pool."""

    def run(self, runner, program, options=None, limits=None) -> SandboxResult:  # type: ignore[no-untyped-def]
        return run_once(runner, program, options, limits)


def test_pool_and_one_shot_give_the_same_reports(pool: SandboxPool) -> None:
    scripts = [p.read_text() for p in sample_scripts()[:3]] + list(FAILING.values())
    limits = Limits(wall_s=3.0)
    for source in scripts:
        warm = validate_cad(source, pool, limits=limits).to_dict()
        cold = validate_cad(source, OneShot(), limits=limits).to_dict()
        for report in (warm, cold):
            report["metrics"].pop("duration_s", None)
            report["metrics"].pop("peak_memory_mb", None)
            report["checks"].get("executes", {}).get("detail", {}).pop("stderr", None)
        assert warm == cold


def test_result_carries_status_duration_memory_and_output(pool: SandboxPool) -> None:
    result = pool.run("python", "import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert result.status is Status.OK
    assert result.stdout == "out\n" and result.stderr == "err\n"
    assert 0 < result.duration_s < 5 and result.peak_memory_mb > 0
    assert result.to_dict()["status"] == "ok"


def test_bad_code_never_raises(pool: SandboxPool) -> None:
    for source in ["def (", "raise KeyboardInterrupt", "raise SystemExit(3)", "import os; os.abort()"]:
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
        result = unsafe.run("python", "print(6 * 7)\nwhile True:\n    pass\n",
                            limits=Limits(wall_s=1))
    assert result.status is Status.TIMEOUT and result.stdout == "42\n"
    assert "UNSAFE" in capsys.readouterr().err


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="wall_s"):
        Limits(wall_s=float("nan"))
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)
    with pytest.raises(ValueError, match="isolation mode"):
        Isolation("docker")
