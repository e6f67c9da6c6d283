"""The sandbox worker: PID 1 of its own namespace, forks one fresh child per run and supervises it.

Started by the host inside bubblewrap. It reads jobs from its stdin and writes one reply per job
to its stdout (framed JSON, see protocol.py). With `--preload` it imports heavy modules once
(cadquery), so each run costs a fork instead of an interpreter start. As PID 1 of the namespace
it cannot be killed from inside, and `kill(-1)` ends every process a run left behind.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import gc
import importlib
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

from validators.sandbox.guest import harness
from validators.sandbox.protocol import ProtocolError, decode_body, read_message, write_message

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(option, value, 0, 0, 0)


class Capture:
    """Reads one stream of the child, keeping at most `cap` bytes."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd, self.cap = fd, cap
        self.data = bytearray()
        self.truncated = False
        self.open = True

    def pump(self) -> None:
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self.open = False
            os.close(self.fd)
            return
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        self.data += chunk[: max(room, 0)]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def kill_everything_else() -> None:
    """Kill every process of this run (all others in the namespace, or all our descendants)."""
    if os.getpid() == 1:
        # Atomic with respect to fork: a fork bomb cannot outrun it.
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    else:  # unsafe mode, no PID namespace: walk the tree until it is empty
        for _ in range(100):
            pids = _descendants(os.getpid())
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:  # children left but none has exited yet: they are being killed
            time.sleep(0.001)


SANDBOX_WRITABLE = (
    "/tmp",
    "/dev",
    "/dev/shm",
)  # bubblewrap's tmpfs mounts: all that can be written


def _writable_dirs() -> list[str]:
    return [d for d in SANDBOX_WRITABLE if os.path.isdir(d)] if os.getpid() == 1 else []


def _disk_used(run_dir: str) -> int:
    """Bytes the sandbox's writable filesystems hold (only the run's directory in unsafe mode)."""
    if os.getpid() == 1:  # private tmpfs mounts: statvfs is exact and costs nothing
        seen: dict[int, int] = {}
        for directory in _writable_dirs():
            st = os.statvfs(directory)
            seen[os.stat(directory).st_dev] = (st.f_blocks - st.f_bfree) * st.f_frsize
        return sum(seen.values())
    total = 0
    for root, _dirs, files in os.walk(run_dir):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def _snapshot() -> dict[str, set[str]]:
    return {d: set(os.listdir(d)) for d in _writable_dirs()}


def _restore(snapshot: dict[str, set[str]]) -> None:
    """Delete whatever a run added to the writable mounts, so nothing reaches the next run."""
    for directory, before in snapshot.items():
        for name in set(os.listdir(directory)) - before:
            path = os.path.join(directory, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


def _verdict_for_signal(signum: int, limits: dict[str, Any], cpu_used: float) -> tuple[str, str]:
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_used >= limits["cpu_s"]):
        return "timeout", f"the program used more than {limits['cpu_s']:g} s of CPU time"
    if signum == signal.SIGXFSZ:
        return "killed", f"the program wrote a file larger than {limits['max_file_mb']} MB"
    if signum in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE):
        name = signal.Signals(signum).name
        return "killed", f"the program crashed ({name})"
    return "killed", f"the program was killed by {signal.Signals(signum).name}"


def supervise(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in a fresh forked child and return the reply message."""
    limits = job["limits"]
    snapshot = _snapshot()
    run_dir = tempfile.mkdtemp(prefix="run-", dir=tempfile.gettempdir())
    baseline = _disk_used(run_dir)
    result_r, result_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (result_r, out_r, err_r):
                os.close(fd)
            harness.child_main(job, run_dir, result_w, out_w, err_w)
        finally:
            os._exit(70)
    for fd in (result_w, out_w, err_w):
        os.close(fd)
    payload_cap = int(limits["payload_mb"]) * 1024 * 1024
    streams = {
        "result": Capture(result_r, payload_cap + 4),
        "stdout": Capture(out_r, int(limits["output_bytes"])),
        "stderr": Capture(err_r, int(limits["output_bytes"])),
    }
    for capture in streams.values():
        os.set_blocking(capture.fd, False)
    pidfd = os.pidfd_open(pid)
    deadline = started + float(limits["wall_s"])
    verdict: tuple[str, str] | None = None
    exited = False
    while not exited:
        readable = [c.fd for c in streams.values() if c.open] + [pidfd]
        remaining = deadline - time.monotonic()
        ready, _, _ = select.select(readable, [], [], max(0.0, min(POLL_S, remaining)))
        for capture in streams.values():
            if capture.open and capture.fd in ready:
                capture.pump()
        exited = pidfd in ready
        if streams["result"].truncated:
            verdict = ("error", f"the result was larger than {limits['payload_mb']} MB")
        elif _disk_used(run_dir) - baseline > int(limits["tmp_mb"]) * 1024 * 1024:
            verdict = ("killed", f"the program wrote more than {limits['tmp_mb']} MB to disk")
        elif time.monotonic() >= deadline and not exited:
            verdict = ("timeout", f"the program ran longer than {limits['wall_s']:g} s")
        if verdict:
            kill_everything_else()
            break
    _, status, usage = os.wait4(pid, 0)
    duration = time.monotonic() - started
    kill_everything_else()  # whatever the run left behind
    _reap_all()
    os.close(pidfd)
    for capture in streams.values():
        if capture.open:
            os.set_blocking(capture.fd, True)
        while capture.open:
            capture.pump()
    if verdict is None and streams["result"].truncated:
        verdict = ("error", f"the result was larger than {limits['payload_mb']} MB")
    shutil.rmtree(run_dir, ignore_errors=True)
    _restore(snapshot)
    reply: dict[str, Any] = {
        "duration_s": duration,
        "peak_memory_mb": usage.ru_maxrss / 1024,
        "stdout": streams["stdout"].text(),
        "stderr": streams["stderr"].text(),
        "stdout_truncated": streams["stdout"].truncated,
        "stderr_truncated": streams["stderr"].truncated,
        "exit_code": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
    }
    record: dict[str, Any] | None = None
    raw = bytes(streams["result"].data)
    if verdict is None and len(raw) >= 4:
        try:
            record = decode_body(raw[4:])
        except ProtocolError:
            record = None
    if verdict is not None:
        reply["status"], message = verdict
        reply["error"] = {"kind": reply["status"], "message": message, "line": None}
    elif record is not None:
        reply["status"] = record.get("status", "error")
        reply["payload"] = record.get("payload")
        reply["error"] = record.get("error")
    elif os.WIFSIGNALED(status):
        cpu_used = usage.ru_utime + usage.ru_stime
        reply["status"], message = _verdict_for_signal(os.WTERMSIG(status), limits, cpu_used)
        if reply["status"] == "killed" and reply["peak_memory_mb"] > 0.9 * limits["memory_mb"]:
            reply["status"], message = "memory", "the program ran out of memory"
        reply["error"] = {"kind": reply["status"], "message": message, "line": None}
    else:
        code = reply["exit_code"]
        reply["status"] = "error"
        reply["error"] = {
            "kind": "exit",
            "message": f"the program exited (status {code}) before producing a result",
            "line": None,
        }
    return reply


def main(argv: list[str] | None = None) -> None:
    """Serve jobs from stdin until it closes (or after one job with --once)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--preload", default="")
    args = parser.parse_args(argv)
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints of the worker must not corrupt the protocol
    sys.stdout = sys.stderr
    _prctl(PR_SET_DUMPABLE, 0)  # runs cannot ptrace the worker or open its /proc fds
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a run come back to us to be killed
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    for name in filter(None, args.preload.split(",")):
        module = importlib.import_module(name)
        if hasattr(module, "warm_up") and not args.once:  # a single run gains nothing from it
            module.warm_up()
    gc.collect()
    gc.freeze()  # forked children then share the heap instead of copying it on first touch
    write_message(proto_out, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            job = read_message(proto_in)
        except (ProtocolError, OSError) as exc:
            write_message(proto_out, {"status": "sandbox_error", "error": {"message": str(exc)}})
            return
        if job is None:
            return
        try:
            reply = supervise(job)
        except OSError as exc:  # e.g. fork failed: the run never started
            reply = {
                "status": "sandbox_error",
                "error": {
                    "kind": "sandbox",
                    "message": f"{errno.errorcode.get(exc.errno or 0, '')} {exc}",
                },
            }
        write_message(proto_out, reply)
        if args.once:
            return


if __name__ == "__main__":
    main()
