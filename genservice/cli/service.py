"""`genservice run` (the whole service on one machine), `worker`, `api` and `keys`.

`run` is the embedded default: SQLite and a broker in the data directory, the API and one
worker per queue group as child processes that it restarts when they die and stops on Ctrl-C.
`worker` and `api` are the pieces for distributed mode, chosen by GENSERVICE_ settings.
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

QUEUE_GROUPS = (("generate",), ("validate", "export"))
RESTART_WINDOW_S, RESTART_LIMIT = 60.0, 5
RUN_LOG, LOG_ROTATE_BYTES, TAIL_LINES = "run.log", 20 * 1024 * 1024, 20


def add_service_commands(sub: Any) -> None:
    """Register run, worker, api and keys."""
    run = sub.add_parser(
        "run",
        help="start the service: API, web editor and workers (embedded: no external servers)",
        description="Start the API with the web editor and a worker per queue group, supervised "
        "(restarted if they die; Ctrl-C stops everything). Defaults: SQLite and a broker in "
        "the data directory, the shipped tiny model. GENSERVICE_* settings select PostgreSQL, "
        "Redis or RabbitMQ instead.",
    )
    run.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="port (default 8000)")
    run.add_argument("--model", type=Path, metavar="DIR", help="local model directory")
    run.add_argument(
        "--device", help="where the model runs: auto, cpu, cuda, cuda:N (default: auto)"
    )
    run.add_argument("--data-dir", type=Path, help="where state lives (default var/genservice)")
    run.add_argument("--no-workers", action="store_true", help="the API only")
    run.add_argument(
        "--verbose",
        action="store_true",
        help="show the API's and workers' own output here (default: in DATA_DIR/logs/run.log; "
        "warnings and errors are shown either way)",
    )

    worker = sub.add_parser(
        "worker",
        help="run a worker for some queues (distributed mode)",
        description="Consume jobs from the given queues: generate (model; one process per GPU), "
        "validate and export (CPU, sandbox pool).",
    )
    worker.add_argument(
        "--queues", default="generate,validate,export", help="comma-separated queue names"
    )
    worker.add_argument("--name", help="worker name (default: queues@host)")
    worker.add_argument(
        "--device",
        help="where the generate queue's model runs: auto, cpu, cuda, cuda:N "
        "(default: $GENSERVICE_DEVICE, else auto)",
    )
    worker.add_argument("--loglevel", default="INFO")

    api = sub.add_parser("api", help="run the API server only (distributed mode)")
    api.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    api.add_argument("--port", type=int, help="port (default 8000)")
    api.add_argument("--workers", type=int, default=1, help="API processes")

    keys = sub.add_parser("keys", help="create, list and revoke API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = keys_sub.add_parser("create", help="create a key; it is printed on the last line")
    create.add_argument("--name", required=True)
    create.add_argument("--rate-limit", type=int, help="requests a minute (0 = unlimited)")
    create.add_argument("--jobs-per-day", type=int, help="daily job quota (0 = unlimited)")
    keys_sub.add_parser("list", help="list keys (never the secrets)")
    revoke = keys_sub.add_parser("revoke", help="revoke keys by id or name")
    revoke.add_argument("key", metavar="ID_OR_NAME")


def _settings() -> Any:
    from genservice.config import load_settings

    try:
        return load_settings()
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _database(settings: Any) -> Any:
    from genservice.store.db import Database

    db = Database(settings.database)
    db.migrate()
    return db


def keys_command(args: argparse.Namespace) -> int:
    """Run `genservice keys ...`."""
    from genservice.store.keys import create_key, list_keys, revoke_key

    db = _database(_settings())
    if args.keys_command == "create":
        try:
            made = create_key(db, args.name, args.rate_limit, args.jobs_per_day)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        print(f"created key {made.id} named {made.name!r}; it is shown only this once:")
        print(made.key)
        return 0
    if args.keys_command == "list":
        for key in list_keys(db):
            state = "revoked" if key.revoked_at else "active"
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(key.created_at))
            print(f"{key.id}  {key.prefix}…  {state:7}  {when} UTC  {key.name}")
        return 0
    revoked = revoke_key(db, args.key)
    if not revoked:
        print(f"genservice keys: no active key with id or name {args.key!r}", file=sys.stderr)
        return 1
    print(f"revoked {revoked} key(s)")
    return 0


def worker_command(args: argparse.Namespace) -> int:
    """Run `genservice worker`: a Celery worker (solo pool) for the given queues."""
    import warnings

    from genservice.celery import QUEUES, make_celery
    from genservice.tasks import register_tasks

    # Workers run as root in containers and CI; the sandbox, not the worker's uid, isolates code.
    warnings.filterwarnings("ignore", message=".*superuser privileges.*")
    if args.device:
        os.environ["GENSERVICE_DEVICE"] = args.device
    settings = _settings()
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    unknown = sorted(set(queues) - set(QUEUES))
    if not queues or unknown:
        raise UsageError(f"--queues takes some of {', '.join(QUEUES)}; unknown: {unknown}")
    if "generate" in queues:  # a GPU worker on a machine without one says so before it starts
        cli_device(settings.device)
    app = make_celery(settings)
    # What a task prints (e.g. a progress bar on stderr) is logged as INFO, not as a warning.
    app.conf.worker_redirect_stdouts_level = "INFO"
    register_tasks(app)
    name = args.name or f"{'+'.join(queues)}-{os.getpid()}@%h"
    argv = [
        "worker",
        "--pool=solo",  # one process, model loaded once; CUDA cannot be re-initialised in a fork
        f"--queues={','.join(settings.queue(q) for q in queues)}",
        f"--hostname={name}",
        f"--loglevel={args.loglevel}",
        "--without-gossip",
        "--without-mingle",
    ]
    if settings.embedded_broker:
        argv.append("--without-heartbeat")
    app.worker_main(argv)
    return 0


def api_command(args: argparse.Namespace) -> int:
    """Run `genservice api`: the HTTP server only."""
    import copy

    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    # Our own loggers as uvicorn's ("WARNING:  ..."), not bare lines from logging's last resort.
    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["loggers"]["genservice"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    settings = _settings()
    host = args.host or settings.host
    port = args.port or settings.port
    uvicorn.run(
        "genservice.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=args.workers,
        log_level="info",
        log_config=log_config,
        timeout_graceful_shutdown=5,
    )
    return 0


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
    settings = _settings()
    env["GENSERVICE_DATA_DIR"] = str(settings.data_path)  # children may start elsewhere
    settings.data_path.mkdir(parents=True, exist_ok=True)
    db = _database(settings)
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
    announced = False
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
                    stopping = True
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
    return 0


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
