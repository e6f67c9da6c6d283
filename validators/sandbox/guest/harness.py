"""The forked children of a run: drop to the run's limits, run one phase, report.

A run has one or two phases, each in its own process forked from the clean worker. The *builder*
executes the untrusted program through a runner; for runners that have a measurer, its result is
only a hand-over (B-rep bytes and plain data), which the *measurer*, a second child that never
ran the program, reads and measures. Every fact a host receives comes from the last phase. Each
record goes to a pipe the worker reads; a missing record is a failure, so a program that exits
early cannot pass for one that finished.
"""

from __future__ import annotations

import importlib
import os
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from validators.sandbox.protocol import encode

PROGRAM_FILENAME = "<program>"

# Runner name -> "module:function". A runner takes (source, options) and returns a JSON-able dict.
RUNNERS: dict[str, str] = {
    "python": "validators.sandbox.guest.harness:run_python",
    "cad": "validators.cad.guest:build_cad_script",
    "cad_step": "validators.cad.guest:build_step_file",
    "code": "validators.code.guest:run_code_task",
    "cad_export": "validators.cad.guest:build_cad_script",
}
# Runner name -> "module:function" of its measurer, which takes (hand-over, options) and returns
# the payload. A runner without one reports from the builder (code tasks keep the candidate in a
# process of its own inside the phase, see validators/code/guest.py).
MEASURERS: dict[str, str] = {
    "cad": "validators.cad.measurer:measure_cad",
    "cad_step": "validators.cad.measurer:measure_cad",
    # Export measures like validation and adds normals and STEP (the exporters' measuring side).
    "cad_export": "exporters.cad_guest:measure_cad_export",
}


def resolve_runner(name: str, phase: str = "build") -> Callable[[Any, dict[str, Any]], Any]:
    """Import the function registered under `name` for a phase ("build" or "measure")."""
    table = MEASURERS if phase == "measure" else RUNNERS
    module_name, _, function = table[name].partition(":")
    runner: Callable[[Any, dict[str, Any]], Any] = getattr(
        importlib.import_module(module_name), function
    )
    return runner


def run_python(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Execute plain Python; the payload lists the names the program defined."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, PROGRAM_FILENAME, "exec"), namespace)
    return {"names": sorted(k for k in namespace if not k.startswith("__"))}


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """Kind, message and the program's line number for an exception raised by the program."""
    line: int | None = None
    if isinstance(exc, SyntaxError) and exc.filename == PROGRAM_FILENAME:
        line = exc.lineno
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == PROGRAM_FILENAME:
            line = frame.lineno
    kind = "syntax" if isinstance(exc, SyntaxError) else "exception"
    text = str(exc) if not isinstance(exc, SyntaxError) else (exc.msg or str(exc))
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return {"kind": kind, "message": message[:2000], "line": line}


def _current_address_space() -> int:
    with open("/proc/self/status") as status:
        for row in status:
            if row.startswith("VmSize:"):
                return int(row.split()[1]) * 1024
    return 0


def apply_limits(limits: dict[str, Any]) -> None:
    """Set the rlimits of this process (inherited by anything it starts)."""
    cpu = max(1, int(limits["cpu_s"] + 0.999))
    memory = _current_address_space() + int(limits["memory_mb"]) * 1024 * 1024
    settings = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (memory, memory),
        resource.RLIMIT_NPROC: (int(limits["max_processes"]),) * 2,
        resource.RLIMIT_FSIZE: (int(limits["max_file_mb"]) * 1024 * 1024,) * 2,
        resource.RLIMIT_NOFILE: (int(limits["max_open_files"]),) * 2,
        resource.RLIMIT_CORE: (0, 0),
    }
    for which, (soft, hard) in settings.items():
        resource.setrlimit(which, (soft, hard))


def _isolate_descriptors(stdout_fd: int, stderr_fd: int, keep_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    # Close every other descriptor the worker had (its protocol pipes above all).
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, 65536)


def child_main(job: dict[str, Any], run_dir: str, result_fd: int, out_fd: int, err_fd: int) -> None:
    """Entry point of the forked child. Never returns."""
    origin = os.getpid()
    try:
        os.setsid()
        _isolate_descriptors(out_fd, err_fd, result_fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own stdin
        # Line-buffered, so what was printed before a timeout or crash is not lost.
        sys.stdout = open(1, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_DFL)
        os.chdir(run_dir)
        os.environ.clear()
        os.environ.update(
            {"HOME": run_dir, "TMPDIR": run_dir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        )
        import tempfile

        tempfile.tempdir = run_dir
        phase = job.get("phase", "build")
        runner = resolve_runner(job["runner"], phase)
        apply_limits(job["limits"])
    except BaseException as exc:  # the harness itself failed: not the program's fault
        _finish(result_fd, origin, {"status": "sandbox_error", "error": describe_exception(exc)})
    record: dict[str, Any]
    try:
        given = job["handover"] if phase == "measure" else job["program"]
        payload = runner(given, job.get("options") or {})
        record = {"status": "ok", "payload": payload}
    except MemoryError:
        record = {
            "status": "memory",
            "error": {
                "kind": "memory",
                "message": "the program exceeded its memory limit of "
                f"{job['limits']['memory_mb']} MB",
                "line": None,
            },
        }
    except SystemExit as exc:
        record = {
            "status": "error",
            "error": {
                "kind": "exit",
                "message": f"the program called exit({exc.code!r}) before it finished",
                "line": describe_exception(exc)["line"],
            },
        }
    except BaseException as exc:
        record = {"status": "error", "error": describe_exception(exc)}
    _finish(result_fd, origin, record)


def _finish(result_fd: int, origin: int, record: dict[str, Any]) -> None:
    # A process the program forked must not report a second time.
    if os.getpid() != origin:
        os._exit(0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    # Peak memory so far, for a reply sent before the worker reaps this process.
    record["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        data = encode(record)
    except BaseException as exc:  # e.g. a payload that is not JSON-serialisable
        message = f"result not serialisable: {exc}"
        data = encode({"status": "error", "error": {"kind": "payload", "message": message}})
    try:
        _write_all(result_fd, data)
        # Closing every stream tells the worker the run is complete before the exit is reaped.
        for fd in (result_fd, 1, 2):
            os.close(fd)
    except BaseException:
        pass
    os._exit(0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
