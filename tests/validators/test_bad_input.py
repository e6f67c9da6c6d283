"""Hostile and broken programs: each gets a clear invalid Report in bounded time, and afterwards
the host has no new files, no leftover processes, and the validator still serves."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.validators.hostile import host_files, sandbox_process_counts
from validators.cad.validate import validate_cad
from validators.report import Report
from validators.sandbox import Limits, SandboxPool

GOOD = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n"
LIMITS = Limits(wall_s=3.0, memory_mb=512, max_file_mb=8, tmp_mb=64)
BOUND_S = LIMITS.wall_s + 8  # the run's limit plus generous slack for a loaded machine


@pytest.fixture
def guarded(pool: SandboxPool) -> Iterator[SandboxPool]:
    """The shared pool, with the host checked for leftovers after the test."""
    before = host_files()
    yield pool
    left = host_files() - before
    assert not left, f"the program left files on the host: {left}"
    # A worker forks its next spare right after replying, and the child counts until it has
    # renamed itself: judge on one sample that is clean, not on a fresh one taken after it.
    deadline = time.monotonic() + 5
    counts = sandbox_process_counts(pool)
    while any(c > 1 for c in counts) and time.monotonic() < deadline:
        time.sleep(0.1)
        counts = sandbox_process_counts(pool)
    assert all(c == 1 for c in counts), f"processes outlived the run: {counts}"
    report = validate_cad(GOOD, pool)
    assert report.valid, f"the validator stopped serving: {report.error}"


def invalid(pool: SandboxPool, source: str, **kwargs: object) -> Report:
    started = time.monotonic()
    report = validate_cad(source, pool, limits=LIMITS, **kwargs)  # type: ignore[arg-type]
    assert time.monotonic() - started < BOUND_S
    assert not report.valid
    assert report.error is not None and report.error.message
    assert report.reward == 0.0
    return report


def test_syntax_error_reports_its_line(guarded: SandboxPool) -> None:
    report = invalid(guarded, "import cadquery as cq\nx = 1\nresult = cq.Workplane(.box(1, 1, 1)\n")
    assert report.error and report.error.kind == "syntax" and report.error.line == 3


def test_exception_reports_line_and_message(guarded: SandboxPool) -> None:
    report = invalid(guarded, "import cadquery as cq\n\nwidth = 0\nresult = 10 / width\n")
    assert report.error and report.error.kind == "exception" and report.error.line == 4
    assert "ZeroDivisionError" in report.error.message


def test_no_result(guarded: SandboxPool) -> None:
    report = invalid(guarded, "import cadquery as cq\nbox = cq.Workplane().box(1, 2, 3)\n")
    assert report.error and report.error.kind == "no_result"
    assert "show_object" in report.error.message


def test_wrong_result_type(guarded: SandboxPool) -> None:
    report = invalid(guarded, "result = 42\n")
    assert report.error and report.error.kind == "result_type" and "int" in report.error.message


def test_sketch_without_solid(guarded: SandboxPool) -> None:
    report = invalid(guarded, "import cadquery as cq\nresult = cq.Workplane().rect(10, 20)\n")
    assert report.error and report.error.kind == "no_solid"
    assert not report.checks["solid"].passed


def test_empty_result_after_boolean(guarded: SandboxPool) -> None:
    source = (
        "import cadquery as cq\n"
        "result = cq.Workplane().box(10, 10, 10).cut(cq.Workplane().box(20, 20, 20))\n"
    )
    report = invalid(guarded, source)
    assert report.error and report.error.kind == "no_solid"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_parameter_is_rejected(guarded: SandboxPool, value: str) -> None:
    report = invalid(
        guarded,
        "size = 10.0\nimport cadquery as cq\nresult = cq.Workplane().box(size, 1, 1)\n",
        parameters={"size": value},
    )
    assert report.error and report.error.kind == "parameter" and "finite" in report.error.message


def test_nan_in_the_script_is_invalid(guarded: SandboxPool) -> None:
    invalid(guarded, "import cadquery as cq\nresult = cq.Workplane().box(float('nan'), 1, 1)\n")


def test_infinite_loop_times_out(guarded: SandboxPool) -> None:
    report = invalid(guarded, "while True:\n    pass\n")
    assert report.error and report.error.kind == "timeout"


def test_sleeping_forever_times_out(guarded: SandboxPool) -> None:
    report = invalid(guarded, "import time\ntime.sleep(10**9)\n")
    assert report.error and report.error.kind == "timeout"


def test_memory_bomb(guarded: SandboxPool) -> None:
    report = invalid(
        guarded, "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))\n"
    )
    assert report.error and report.error.kind == "memory"


def test_fork_bomb(guarded: SandboxPool) -> None:
    source = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    report = invalid(guarded, source)
    assert report.error and report.error.kind in ("timeout", "exit", "exception", "killed")


def test_thread_bomb(guarded: SandboxPool) -> None:
    source = (
        "import threading, time\n"
        "while True:\n"
        "    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\n"
    )
    report = invalid(guarded, source)
    assert report.error and report.error.kind in ("exception", "memory", "timeout")


def test_exhausting_file_descriptors(guarded: SandboxPool) -> None:
    report = invalid(guarded, "files = [open('/dev/null') for _ in range(100000)]\n")
    assert report.error and "Too many open files" in report.error.message


def test_writing_a_huge_file(guarded: SandboxPool) -> None:
    source = "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)\n"
    report = invalid(guarded, source)
    assert report.error and report.error.kind == "killed" and "larger than" in report.error.message


def test_filling_the_temp_dir_with_many_files(guarded: SandboxPool) -> None:
    source = (
        "i = 0\n"
        "while True:\n"
        "    with open(f'f{i}', 'wb') as f:\n"
        "        f.write(b'x' * 4 * 2**20)\n"
        "    i += 1\n"
    )
    report = invalid(guarded, source)
    assert report.error and report.error.kind == "killed" and "to disk" in report.error.message


def test_huge_output_is_capped(guarded: SandboxPool) -> None:
    result = guarded.run(
        "python", "import sys\nfor _ in range(2000):\n    print('x' * 10000)\n", limits=LIMITS
    )
    assert result.ok and result.stdout_truncated
    assert len(result.stdout.encode()) <= LIMITS.output_bytes
    report = invalid(guarded, "for _ in range(5000):\n    print('y' * 10000)\nresult = 1\n")
    assert report.error and report.error.kind == "result_type"


@pytest.mark.parametrize(
    "target",
    [
        "/usr/evil.txt",
        "/etc/evil.txt",
        "/work/genservice-evil.txt",
        "/dev/evil.txt",
        str(os.path.expanduser("~/genservice-evil.txt")),
        "/var/tmp/evil.txt",
    ],
)
def test_writes_outside_the_temp_dir_fail(guarded: SandboxPool, target: str) -> None:
    report = invalid(guarded, f"open({target!r}, 'w').write('pwned')\n")
    assert report.error and report.error.kind == "exception"
    assert not os.path.exists(target)


def test_reads_of_host_files_fail(
    guarded: SandboxPool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    secret = tmp_path_factory.mktemp("host") / "secret.txt"
    secret.write_text("host-secret-123")
    project_file = os.path.join(os.path.dirname(__file__), "test_bad_input.py")
    for path in (
        str(secret),
        project_file,
        os.path.expanduser("~/.bashrc"),
        "/etc/passwd",
        "/etc/shadow",
    ):
        result = guarded.run("python", f"print(open({path!r}).read())\n", limits=LIMITS)
        assert result.status.value == "error", path
        assert "FileNotFoundError" in (result.error or {}).get("message", ""), path
        assert "host-secret-123" not in result.stdout


def test_host_environment_is_invisible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENSERVICE_TEST_SECRET", "env-secret-456")
    with SandboxPool(size=1, preload=()) as fresh:
        result = fresh.run(
            "python",
            "import os\nprint(dict(os.environ))\nprint(open('/proc/self/environ').read())\n"
            "try:\n    print(open('/proc/1/environ').read())\n"
            "except OSError as exc:\n    print(exc)\n",
            limits=LIMITS,
        )
    assert result.ok, result.error
    assert "env-secret-456" not in result.stdout
    assert "GENSERVICE_TEST_SECRET" not in result.stdout


@pytest.mark.parametrize(
    "address", [("127.0.0.1", 5432), ("127.0.0.1", 6379), ("::1", 5432), ("93.184.216.34", 80)]
)
def test_network_is_unreachable(guarded: SandboxPool, address: tuple[str, int]) -> None:
    source = f"import socket\nsocket.create_connection({address!r}, timeout=2)\n"
    report = invalid(guarded, source)
    assert report.error and report.error.kind == "exception"
    assert "Error" in report.error.message


def test_killing_the_parent_does_not_hurt_the_worker(guarded: SandboxPool) -> None:
    workers = set(guarded.worker_pids())
    source = (
        "import os, signal\n"
        "for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):\n"
        "    for pid in (os.getppid(), 1, -1):\n"
        "        try:\n"
        "            os.kill(pid, sig)\n"
        "        except OSError:\n"
        "            pass\n" + GOOD
    )
    report = validate_cad(source, guarded, limits=LIMITS)
    assert report.valid, report.error
    assert set(guarded.worker_pids()) == workers


def test_segfault_through_ctypes(guarded: SandboxPool) -> None:
    report = invalid(guarded, "import ctypes\nctypes.string_at(0)\n")
    assert report.error and report.error.kind == "killed" and "SIGSEGV" in report.error.message


def test_ignoring_sigterm_does_not_help(guarded: SandboxPool) -> None:
    report = invalid(
        guarded,
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n",
    )
    assert report.error and report.error.kind == "timeout"


def test_processes_cannot_outlive_the_run(guarded: SandboxPool) -> None:
    source = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "result = 'daemon started'\n"
    )
    invalid(guarded, source)  # the fixture checks that nothing is left in the sandbox


@pytest.mark.parametrize(
    "exit_call", ["import sys; sys.exit(0)", "import os; os._exit(0)", "raise SystemExit(0)"]
)
def test_exiting_early_is_not_success(guarded: SandboxPool, exit_call: str) -> None:
    report = invalid(
        guarded, f"{exit_call}\nimport cadquery as cq\nresult = cq.Workplane().box(1, 1, 1)\n"
    )
    assert report.error and report.error.kind == "exit"


def test_nothing_leaks_from_one_run_to_the_next(guarded: SandboxPool) -> None:
    writer = (
        "import os\nopen('/tmp/left-behind', 'w').write('x')\nos.mkdir('/tmp/dir')\n"
        "os.environ['LEAK'] = '1'\nimport builtins\nbuiltins.LEAK = 1\n"
    )
    assert guarded.run("python", writer, limits=LIMITS).ok
    reader = (
        "import os, builtins\nprint(os.path.exists('/tmp/left-behind'), "
        "os.path.exists('/tmp/dir'), 'LEAK' in os.environ, hasattr(builtins, 'LEAK'))\n"
    )
    for _ in range(guarded.size):  # whichever worker served the writer
        result = guarded.run("python", reader, limits=LIMITS)
        assert result.ok and result.stdout.split() == ["False"] * 4


@pytest.mark.parametrize(
    "patch",
    [
        "cq.Shape.Volume = lambda self: 5.0",
        "cq.Shape.isValid = lambda self: False",
        "import validators.cad.measurer as m\nm.describe_part = lambda part, options: {}",
    ],
)
def test_patching_what_measures_the_shape_changes_no_fact(guarded: SandboxPool, patch: str) -> None:
    # The builder measures nothing: the measurer, which never ran the script, reads its B-rep.
    report = validate_cad(f"import cadquery as cq\n{patch}\n" + GOOD, guarded, limits=LIMITS)
    assert report.valid, report.error
    assert report.metrics["volume_mm3"] == pytest.approx(1000.0)


def test_replacing_the_handover_code_is_caught(guarded: SandboxPool) -> None:
    # Defence in depth only (a new __code__ is not caught, and is harmless: test_forgery.py).
    patch = "import validators.cad.guest as g\ng.collect_parts = lambda objects: ('part', [])\n"
    report = invalid(guarded, patch + GOOD)
    assert report.error and report.error.kind == "tamper"


def test_patching_builtins_cannot_produce_a_valid_report(guarded: SandboxPool) -> None:
    # Either the tamper check names it or the run breaks down: never a forged pass.
    invalid(guarded, "import builtins\nbuiltins.len = lambda x: 1\n" + GOOD)
