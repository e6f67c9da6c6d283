"""Host side of the sandbox: workers, the warm pool, and the one-shot reference path.

A worker is one sandboxed interpreter (see guest/worker.py). The pool keeps `size` of them warm,
with cadquery already imported, and hands each run to an idle one; a worker that dies or stops
answering is killed and replaced, and the run gets a clear result instead of an exception.
`run_once` starts a fresh sandboxed interpreter for a single run: slow, and the reference that
the pool must agree with.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

from validators.sandbox.isolation import Isolation, ResourceGroup, require, worker_command
from validators.sandbox.limits import Limits
from validators.sandbox.protocol import HEADER, ProtocolError, decode_body, encode
from validators.sandbox.result import SandboxResult, Status, sandbox_failure

DEFAULT_PRELOAD = ("cadquery", "validators.cad.guest", "exporters.cad_guest")
STARTUP_TIMEOUT_S = 120.0
REPLY_GRACE_S = 10.0  # the worker enforces the run's limits itself; this covers a wedged worker
WORKER_BASE_MEMORY_MB = 1024


class WorkerDied(Exception):
    """The worker process ended or stopped answering."""


class Worker:
    """One sandboxed worker process and its protocol pipes."""

    def __init__(self, isolation: Isolation, preload: tuple[str, ...], once: bool, limits: Limits):
        args = ["--preload", ",".join(preload)] + (["--once"] if once else [])
        self.group = ResourceGroup(
            max_processes=limits.max_processes + 8,
            memory_bytes=(WORKER_BASE_MEMORY_MB + limits.memory_mb + limits.tmp_mb) << 20,
        )
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self.process = subprocess.Popen(
            self.group.wrap(worker_command(isolation, args)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            self.stderr_tail.append(raw.decode(errors="replace").rstrip())

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Block until the worker has imported its preloads and said so."""
        message = self._receive(time.monotonic() + timeout, limit=1 << 16)
        if not message.get("ready"):
            raise WorkerDied(f"worker sent {message!r} instead of ready")

    def request(self, job: dict[str, Any], deadline: float, limit: int) -> dict[str, Any]:
        """Send one job and return the worker's reply."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(encode(job))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(f"could not send the job: {exc}") from exc
        return self._receive(deadline, limit)

    def _receive(self, deadline: float, limit: int) -> dict[str, Any]:
        header = self._read(HEADER.size, deadline)
        (length,) = HEADER.unpack(header)
        if length > limit:
            raise WorkerDied(f"reply of {length} bytes is over the limit")
        try:
            return decode_body(self._read(length, deadline))
        except ProtocolError as exc:
            raise WorkerDied(str(exc)) from exc

    def _read(self, count: int, deadline: float) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks, remaining = [], count
        while remaining:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise WorkerDied("the worker stopped answering")
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                raise WorkerDied(self.describe_death())
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def describe_death(self) -> str:
        """Why the worker is gone, with the end of its stderr."""
        code = self.process.poll()
        tail = " | ".join(list(self.stderr_tail)[-5:])
        return f"the sandbox worker exited (status {code}){': ' + tail if tail else ''}"

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process.poll() is None

    def kill(self) -> None:
        """End the worker and everything in its sandbox, and free its resource group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if stream:
                    stream.close()
        self.group.remove()


def _job(
    runner: str, program: str, options: dict[str, Any] | None, limits: Limits
) -> dict[str, Any]:
    return {
        "runner": runner,
        "program": program,
        "options": options or {},
        "limits": limits.to_dict(),
    }


def _exchange(worker: Worker, job: dict[str, Any], limits: Limits, started: float) -> SandboxResult:
    deadline = time.monotonic() + limits.wall_s + limits.measure_seconds + REPLY_GRACE_S
    reply = worker.request(
        job, deadline, limit=(limits.payload_mb << 20) + 4 * limits.output_bytes + (1 << 20)
    )
    result = SandboxResult.from_reply(reply)
    if result.status is Status.SANDBOX_ERROR and not result.error:
        return sandbox_failure("the sandbox worker failed", time.monotonic() - started)
    return result


class SandboxPool:
    """A warm pool of sandbox workers; `run` is thread-safe and never raises on bad programs."""

    def __init__(
        self,
        size: int | None = None,
        limits: Limits | None = None,
        isolation: Isolation | None = None,
        preload: tuple[str, ...] = DEFAULT_PRELOAD,
    ) -> None:
        self.isolation = isolation or Isolation()
        require(self.isolation)
        self.limits = limits or Limits()
        self.preload = preload
        self.size = size or max(1, os.cpu_count() or 1)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._started: queue.Queue[str | None] = queue.Queue()
        # bubblewrap's --die-with-parent follows the *thread* that started it, so every worker
        # is started by this one long-lived thread, whatever thread asked for it.
        self._spawn_requests: queue.Queue[bool] = queue.Queue()
        threading.Thread(target=self._spawner, daemon=True, name="sandbox-spawner").start()
        for _ in range(self.size):
            self._spawn_requests.put(True)
        failures = [f for f in (self._started.get() for _ in range(self.size)) if f]
        if len(failures) == self.size:
            self.close()
            raise RuntimeError(f"no sandbox worker could be started: {failures[0]}")

    def _spawner(self) -> None:
        while self._spawn_requests.get():
            worker = Worker(self.isolation, self.preload, once=False, limits=self.limits)
            threading.Thread(target=self._welcome, args=(worker,), daemon=True).start()

    def _welcome(self, worker: Worker) -> None:
        try:
            worker.wait_ready()
        except WorkerDied as exc:
            reason = f"{exc}; {worker.describe_death()}"
            worker.kill()
            self._started.put(reason)
            return
        with self._lock:
            closed = self._closed
            if not closed:
                self._all.add(worker)
        if closed:
            worker.kill()
        else:
            self._idle.put(worker)
        self._started.put(None)

    def _replace(self, worker: Worker) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)
            if not self._closed:
                self._spawn_requests.put(True)

    def _next_idle(self) -> Worker:
        # Bounded: if workers keep failing to start, a run fails with a reason instead of hanging.
        try:
            return self._idle.get(timeout=STARTUP_TIMEOUT_S + REPLY_GRACE_S)
        except queue.Empty:
            raise WorkerDied("no sandbox worker became available (they fail to start)") from None

    @contextlib.contextmanager
    def _checkout(self) -> Iterator[Worker]:
        worker = self._next_idle()
        while not worker.alive():  # died while idle (killed from outside): replace, take another
            self._replace(worker)
            worker = self._next_idle()
        healthy = True
        try:
            yield worker
        except WorkerDied:
            healthy = False
            raise
        finally:
            if healthy and worker.alive():
                self._idle.put(worker)
            else:
                self._replace(worker)

    def run(
        self,
        runner: str,
        program: str,
        options: dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> SandboxResult:
        """Run `program` with the named runner (see guest/harness.RUNNERS) in a fresh child."""
        if self._closed:
            return sandbox_failure("the sandbox pool is closed")
        limits = limits or self.limits
        started = time.monotonic()
        try:
            with self._checkout() as worker:
                return _exchange(worker, _job(runner, program, options, limits), limits, started)
        except WorkerDied as exc:
            return sandbox_failure(str(exc), time.monotonic() - started)

    def worker_pids(self) -> list[int]:
        """Host pids of the workers' sandbox processes (for monitoring and tests)."""
        with self._lock:
            return [w.process.pid for w in self._all]

    def close(self) -> None:
        """Stop every worker."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
        self._spawn_requests.put(False)
        for worker in workers:
            worker.kill()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def run_once(
    runner: str,
    program: str,
    options: dict[str, Any] | None = None,
    limits: Limits | None = None,
    isolation: Isolation | None = None,
    preload: tuple[str, ...] = DEFAULT_PRELOAD,
) -> SandboxResult:
    """Run one program in a freshly started sandboxed interpreter (the slow reference path)."""
    isolation = isolation or Isolation()
    require(isolation)
    limits = limits or Limits()
    started = time.monotonic()
    worker = Worker(isolation, preload, once=True, limits=limits)
    try:
        worker.wait_ready()
        return _exchange(worker, _job(runner, program, options, limits), limits, started)
    except WorkerDied as exc:
        return sandbox_failure(str(exc), time.monotonic() - started)
    finally:
        worker.kill()


class OneShot:
    """The one-shot path behind the pool's interface: a fresh sandboxed interpreter per run."""

    def __init__(
        self, isolation: Isolation | None = None, preload: tuple[str, ...] = DEFAULT_PRELOAD
    ) -> None:
        self.isolation = isolation or Isolation()
        self.preload = preload

    def run(
        self,
        runner: str,
        program: str,
        options: dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> SandboxResult:
        """Same as SandboxPool.run, without a warm worker."""
        return run_once(runner, program, options, limits, self.isolation, self.preload)
