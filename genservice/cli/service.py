"""`genservice run` (the whole service on one machine), `worker`, `api` and `keys`.

`run` is the embedded default: SQLite and a broker in the data directory, the API and one
worker per queue group as child processes that it restarts when they die and stops on Ctrl-C.
`worker` and `api` are the pieces for distributed mode, chosen by GENSERVICE_ settings.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genservice.cli_common import UsageError, cli_device

QUEUE_GROUPS = (("generate",), ("validate", "export"))
RESTART_WINDOW_S, RESTART_LIMIT = 60.0, 5


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
    import uvicorn

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
        timeout_graceful_shutdown=5,
    )
    return 0


@dataclass
class Child:
    """A supervised child process and its recent restarts."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    restarts: list[float] = field(default_factory=list)

    def start(self, env: dict[str, str]) -> None:
        """Start (or restart) the process in its own process group."""
        self.process = subprocess.Popen(self.argv, env=env, start_new_session=True)

    def stop(self, sig: int) -> None:
        """Signal the child's whole process group."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass


def run_command(args: argparse.Namespace) -> int:
    """Run `genservice run`: the API and workers, supervised, until Ctrl-C."""
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
    settings = _settings()
    env["GENSERVICE_DATA_DIR"] = str(settings.data_path)  # children may start elsewhere
    settings.data_path.mkdir(parents=True, exist_ok=True)
    db = _database(settings)
    key_line = _first_run_key(db, settings.data_path)
    python = sys.executable
    children = [Child("api", [python, "-m", "genservice", "api"])]
    if not args.no_workers:
        for group in QUEUE_GROUPS:
            children.append(
                Child(
                    f"worker[{','.join(group)}]",
                    [python, "-m", "genservice", "worker", "--queues", ",".join(group)],
                )
            )
    broker = "embedded" if settings.embedded_broker else settings.broker_url.split("://")[0]
    database = settings.database.split(":")[0]
    _say(f"data in {settings.data_path}; broker: {broker}; database: {database}")
    for child in children:
        child.start(env)
    stopping = False

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    url = f"http://{settings.host}:{settings.port}"
    announced = False
    try:
        while not stopping:
            time.sleep(0.5)
            if not announced and _healthy(url):
                announced = True
                _say(f"open {url}")
                if key_line:
                    _say(key_line)
            for child in children:
                assert child.process is not None
                code = child.process.poll()
                if code is None or stopping:
                    continue
                now = time.monotonic()
                child.restarts = [t for t in child.restarts if now - t < RESTART_WINDOW_S]
                if len(child.restarts) >= RESTART_LIMIT:
                    _say(f"{child.name} keeps exiting (status {code}); stopping the service")
                    stopping = True
                    break
                child.restarts.append(now)
                _say(f"{child.name} exited with status {code}; restarting it")
                child.start(env)
    finally:
        _say("stopping")
        for child in children:
            child.stop(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            assert child.process is not None
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.stop(signal.SIGKILL)
                child.process.wait()
    return 0


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
