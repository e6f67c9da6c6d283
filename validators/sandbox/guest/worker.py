"""The sandbox worker: PID 1 of its own namespace, forks one fresh child per run and supervises it.

Started by the host inside bubblewrap. It reads jobs from its stdin and writes one reply per job
to its stdout (framed JSON, see protocol.py). With `--preload` it imports heavy modules once
(cadquery), so each run costs a fork instead of an interpreter start. As PID 1 of the namespace
it cannot be killed from inside, and `kill(-1)` ends every process a run left behind.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from validators.sandbox.guest import harness
from validators.sandbox.protocol import ProtocolError, decode_body, read_message, write_message

PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
SPARE_NAME, RUN_NAME = b"gs-spare", b"gs-run"  # what /proc/PID/comm shows
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
        """Read what is available; close at end of stream; keep at most `cap` bytes."""
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
        """What was kept, as text."""
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


def _alive_pids(keep: int) -> list[int]:
    """Processes of this sandbox but the worker and `keep` that can still run (no zombies)."""
    if os.getpid() == 1:
        candidates = [
            int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in (1, keep)
        ]
    else:
        candidates = [pid for pid in _descendants(os.getpid()) if pid != keep]
    alive = []
    for pid in candidates:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


def kill_all_but(keep: int) -> None:
    """SIGKILL every process of the run except the measurer `keep`, without waiting for exits.

    A process with SIGKILL pending never runs user code again, and the kernel refuses a fork
    while a fatal signal is pending, so a pass that finds nothing new means none is left to act.
    """
    killed: set[int] = set()
    for _ in range(100):
        fresh = [pid for pid in _alive_pids(keep) if pid not in killed]
        if not fresh:
            return
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed.add(pid)


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


@dataclass
class Spare:
    """A child forked ahead of its run, waiting for its job on a pipe."""

    pid: int
    job_w: int
    result_r: int
    out_r: int
    err_r: int

    def fds(self) -> tuple[int, ...]:
        """The worker's ends of this spare's pipes."""
        return (self.job_w, self.result_r, self.out_r, self.err_r)


@dataclass
class Spares:
    """The two children of the next run: the builder runs the program, the measurer reads what
    it handed over. Both are forked from the clean worker before the run starts."""

    builder: Spare
    measurer: Spare


def _set_name(name: bytes) -> None:
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


def prefork(close: tuple[int, ...] = ()) -> Spare:
    """Fork one child of the next run now, from the clean worker, so the fork is off the critical
    path; `close` are descriptors of other spares the child must not keep.

    Called only after the previous run has been killed and cleaned up, so the spare inherits
    nothing of it.
    """
    job_r, job_w = os.pipe()
    result_r, result_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (job_w, result_r, out_r, err_r, *close):
                os.close(fd)
            _set_name(SPARE_NAME)
            job = read_message(job_r)
            if job is None:  # the worker is shutting down
                os._exit(0)
            _set_name(RUN_NAME)
            harness.child_main(job, job["run_dir"], result_w, out_w, err_w)
        finally:
            os._exit(70)
    for fd in (job_r, result_w, out_w, err_w):
        os.close(fd)
    return Spare(pid, job_w, result_r, out_r, err_r)


def prefork_both() -> Spares:
    """The measurer first, then the builder, which closes the measurer's pipes at once."""
    measurer = prefork()
    return Spares(builder=prefork(close=measurer.fds()), measurer=measurer)


def _decode_record(capture: Capture) -> dict[str, Any] | None:
    raw = bytes(capture.data)
    if capture.truncated or len(raw) < 4 or int.from_bytes(raw[:4], "big") != len(raw) - 4:
        return None
    try:
        return decode_body(raw[4:])
    except ProtocolError:
        return None


def build_reply(
    limits: dict[str, Any],
    streams: dict[str, Capture],
    duration: float,
    peak_mb: float,
    verdict: tuple[str, str] | None,
    status: int | None,
    cpu_used: float,
) -> dict[str, Any]:
    """The reply for a finished run; `status` is None when the child has not been reaped yet."""
    reply: dict[str, Any] = {
        "duration_s": duration,
        "peak_memory_mb": peak_mb,
        "stdout": streams["stdout"].text(),
        "stderr": streams["stderr"].text(),
        "stdout_truncated": streams["stdout"].truncated,
        "stderr_truncated": streams["stderr"].truncated,
        "exit_code": 0
        if status is None
        else (os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None),
        "signal": os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None,
    }
    if verdict is None and streams["result"].truncated:
        verdict = ("error", f"the result was larger than {limits['payload_mb']} MB")
    record = None if verdict else _decode_record(streams["result"])
    if verdict is not None:
        reply["status"], message = verdict
    elif record is not None:
        reply["status"] = record.get("status", "error")
        reply["payload"] = record.get("payload")
        reply["error"] = record.get("error")
        return reply
    elif status is not None and os.WIFSIGNALED(status):
        reply["status"], message = _verdict_for_signal(os.WTERMSIG(status), limits, cpu_used)
        if reply["status"] == "killed" and peak_mb > 0.9 * limits["memory_mb"]:
            reply["status"], message = "memory", "the program ran out of memory"
    else:
        reply["status"] = "exit"
        message = f"the program exited (status {reply['exit_code']}) before producing a result"
    reply["error"] = {"kind": reply["status"], "message": message, "line": None}
    if reply["status"] == "exit":
        reply["status"] = "error"
    return reply


@dataclass
class Watched:
    """One child watched through its run: what it wrote, and how it ended (so far)."""

    pid: int
    pidfd: int
    streams: dict[str, Capture]
    started: float
    verdict: tuple[str, str] | None = None
    done_early: bool = False
    status: int | None = None
    cpu_used: float = 0.0
    peak_mb: float = 0.0
    ended: float | None = None
    finished: bool = False

    def duration(self) -> float:
        """Seconds from the hand-over of the job to its report (or its end)."""
        return (self.ended or time.monotonic()) - self.started


def watch(
    spare: Spare, job: dict[str, Any], wall_s: float, disk: tuple[str, int] | None
) -> Watched:
    """Hand `job` to the spare and follow it until it has reported, exited or broken a limit.

    A limit broken (time, result size, disk) kills every process of the run. `disk` is the run
    directory and its baseline usage, for the builder's temp-space limit.
    """
    limits = job["limits"]
    started = time.monotonic()
    try:
        write_message(spare.job_w, job)
    except OSError:
        pass  # the spare is gone; its exit status says so
    os.close(spare.job_w)
    payload_cap = int(limits["payload_mb"]) * 1024 * 1024
    streams = {
        "result": Capture(spare.result_r, payload_cap + 4),
        "stdout": Capture(spare.out_r, int(limits["output_bytes"])),
        "stderr": Capture(spare.err_r, int(limits["output_bytes"])),
    }
    for capture in streams.values():
        os.set_blocking(capture.fd, False)
    watched = Watched(spare.pid, os.pidfd_open(spare.pid), streams, started)
    deadline = started + wall_s
    exited = False
    while not exited:
        readable = [c.fd for c in streams.values() if c.open] + [watched.pidfd]
        remaining = deadline - time.monotonic()
        ready, _, _ = select.select(readable, [], [], max(0.0, min(POLL_S, remaining)))
        for capture in streams.values():
            if capture.open and capture.fd in ready:
                capture.pump()
        exited = watched.pidfd in ready
        if streams["result"].truncated:
            watched.verdict = ("error", f"the result was larger than {limits['payload_mb']} MB")
        elif disk and _disk_used(disk[0]) - disk[1] > int(limits["tmp_mb"]) * 1024 * 1024:
            watched.verdict = (
                "killed",
                f"the program wrote more than {limits['tmp_mb']} MB to disk",
            )
        elif time.monotonic() >= deadline and not exited:
            watched.verdict = ("timeout", f"the program ran longer than {wall_s:g} s")
        if watched.verdict:
            kill_everything_else()
            break
        if not any(c.open for c in streams.values()) and _decode_record(streams["result"]):
            watched.done_early = True  # the harness closed everything after its record: it exits
            record = _decode_record(streams["result"]) or {}
            watched.peak_mb = float(record.get("peak_memory_mb") or 0.0)
            break
    watched.ended = time.monotonic()
    return watched


def finish(watched: Watched) -> None:
    """Reap the watched child (killed first if it is still running) and read its streams out."""
    if watched.finished:
        return
    watched.finished = True
    if watched.done_early:  # it is exiting; one that closed everything but runs on must not wait
        with contextlib.suppress(ProcessLookupError):
            os.kill(watched.pid, signal.SIGKILL)
    if watched.status is None:
        _, watched.status, usage = os.wait4(watched.pid, 0)
        watched.cpu_used = usage.ru_utime + usage.ru_stime
        watched.peak_mb = watched.peak_mb or usage.ru_maxrss / 1024
    os.close(watched.pidfd)
    for capture in watched.streams.values():
        if capture.open:
            os.set_blocking(capture.fd, True)
        while capture.open:
            capture.pump()


def reply_for(limits: dict[str, Any], watched: Watched) -> dict[str, Any]:
    """The reply a watched child's record (or its end) makes."""
    status = None if watched.done_early else watched.status
    return build_reply(
        limits,
        watched.streams,
        watched.duration(),
        watched.peak_mb,
        watched.verdict,
        status,
        watched.cpu_used,
    )


def measured_reply(
    build: dict[str, Any], measured: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """The builder's reply (its output, time and memory) with the measurer's payload as facts.

    The builder's own payload, the hand-over, never reaches the host as facts: only the
    measurer's does. A measurer that failed makes the run fail with kind "handover".
    """
    reply = {**build, "payload": None, "measure_s": round(seconds, 4)}
    payload = measured.get("payload")
    if measured.get("status") == "ok" and isinstance(payload, dict):
        reply["payload"] = payload
        return reply
    error = measured.get("error") or {}
    why = error.get("message") or f"it ended with status {measured.get('status')}"
    reply["status"] = "error"
    reply["error"] = {
        "kind": "handover",
        "message": f"what the program handed over could not be measured: {why}",
        "line": None,
    }
    return reply


def _signalled_from_outside(status: int | None) -> bool:
    """Whether a child ended by a signal it did not raise (not a crash, not its CPU limit)."""
    if status is None or not os.WIFSIGNALED(status):
        return False
    own = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE)
    return os.WTERMSIG(status) not in (*own, signal.SIGXCPU)


def _ready_measurer(spare: Spare, close: tuple[int, ...]) -> Spare:
    """The measurer spare, or a fresh one forked now if the program killed it.

    The program could signal the spare (same uid) but never reach its memory or pipes: a stopped
    spare is continued, a dead one replaced, so a run cannot deny its own measurement.
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(spare.pid, signal.SIGCONT)
    try:
        pid, _ = os.waitpid(spare.pid, os.WNOHANG)
    except ChildProcessError:
        pid = spare.pid
    if pid == 0:
        return spare  # alive, waiting for its job
    discard(spare)
    return prefork(close=close)


def discard(spare: Spare) -> None:
    """Close the worker's ends of a spare that was not used (its process is killed with the run)."""
    for fd in spare.fds():
        with contextlib.suppress(OSError):
            os.close(fd)


def supervise(job: dict[str, Any], spares: Spares, send: Callable[[dict[str, Any]], None]) -> None:
    """Run one job: the builder runs the program; a runner with a measurer then has its hand-over
    measured by the second spare. The reply goes out as soon as it is known, then all is cleaned.

    Before the measurer reads a byte, every process of the builder's is killed: what measures
    never runs beside what was measured. The next job is read only after the cleanup.
    """
    limits = job["limits"]
    snapshot = _snapshot()
    run_dir = tempfile.mkdtemp(prefix="run-", dir=tempfile.gettempdir())
    baseline = _disk_used(run_dir)
    build = watch(
        spares.builder, {**job, "run_dir": run_dir}, float(limits["wall_s"]), (run_dir, baseline)
    )
    measurer = harness.MEASURERS.get(job["runner"])
    if not (build.done_early or build.verdict):
        # It exited by itself, its record perhaps still in the pipe, which a process it left
        # may hold open: kill those first, then read the pipe to its end.
        kill_all_but(spares.measurer.pid)
        finish(build)
    record = None if build.verdict else _decode_record(build.streams["result"])
    handover = (record or {}).get("payload") if (record or {}).get("status") == "ok" else None
    replied = False
    if measurer and isinstance(handover, dict) and "problem" not in handover:
        kill_all_but(spares.measurer.pid)  # the builder and all it started, before measuring
        still_open = tuple(c.fd for c in build.streams.values() if c.open)
        spares.measurer = _ready_measurer(spares.measurer, still_open)
        measure_s = float(limits.get("measure_s") or limits["wall_s"])
        measure_dir = tempfile.mkdtemp(prefix="measure-", dir=tempfile.gettempdir())
        measure_job = {
            "runner": job["runner"],
            "phase": "measure",
            "handover": handover,
            "options": {**(job.get("options") or {}), "handover_mb": limits.get("handover_mb")},
            "limits": {**limits, "wall_s": measure_s, "cpu_s": measure_s},
            "run_dir": measure_dir,
        }
        measure = watch(spares.measurer, measure_job, measure_s, None)
        if not (measure.done_early or measure.verdict):
            finish(measure)
            if _signalled_from_outside(measure.status):
                # Killed before it reported: the program may have signalled it on its way out
                # (it was dying, not yet dead, when checked). Once more, with a fresh measurer.
                spares.measurer = prefork(close=still_open)
                measure = watch(spares.measurer, measure_job, measure_s, None)
        if measure.verdict and measure.verdict[0] == "timeout":
            measure.verdict = ("timeout", f"measuring took longer than {measure_s:g} s")
        if measure.done_early:
            measured = _decode_record(measure.streams["result"]) or {}
            send(measured_reply(reply_for(limits, build), measured, measure.duration()))
            replied = True
        finish(measure)
        finish(build)
        kill_everything_else()
        _reap_all()
        if not replied:
            ended = reply_for(limits, measure)
            send(measured_reply(reply_for(limits, build), ended, measure.duration()))
        shutil.rmtree(measure_dir, ignore_errors=True)
    else:
        discard(spares.measurer)
        if build.done_early:
            send(reply_for(limits, build))
            replied = True
        finish(build)
        kill_everything_else()  # whatever the run left behind, and the unused measurer
        _reap_all()
        if not replied:
            send(reply_for(limits, build))
    shutil.rmtree(run_dir, ignore_errors=True)
    _restore(snapshot)


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
    sent = [0]  # replies written so far

    def send(reply: dict[str, Any]) -> None:
        sent[0] += 1
        write_message(proto_out, reply)

    spares = prefork_both()
    while True:
        try:
            job = read_message(proto_in)
        except (ProtocolError, OSError) as exc:
            write_message(proto_out, {"status": "sandbox_error", "error": {"message": str(exc)}})
            return
        if job is None:
            return
        replies_before = sent[0]
        try:
            supervise(job, spares, send)
        except OSError as exc:  # the run could not be supervised
            if sent[0] == replies_before:
                message = f"{errno.errorcode.get(exc.errno or 0, '')} {exc}"
                send({"status": "sandbox_error", "error": {"kind": "sandbox", "message": message}})
        if args.once:
            return
        spares = prefork_both()  # while the host reads the reply


if __name__ == "__main__":
    main()
