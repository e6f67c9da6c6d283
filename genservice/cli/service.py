"""The service's commands: `run` (its supervisor is in run.py), `worker`, `api` and `keys`.

`worker` and `api` are the pieces for distributed mode, chosen by GENSERVICE_ settings; `run`
starts them all on one machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from genservice.cli.common import UsageError, cli_device

QUEUE_GROUPS = (("generate",), ("validate", "export"))


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


def service_settings() -> Any:
    """The GENSERVICE_ settings; a malformed one is a usage error."""
    from genservice.config import load_settings

    try:
        return load_settings()
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def open_database(settings: Any) -> Any:
    """The service's database, migrated to the current schema."""
    from genservice.store.db import Database

    db = Database(settings.database)
    db.migrate()
    return db


def keys_command(args: argparse.Namespace) -> int:
    """Run `genservice keys ...`."""
    from genservice.store.keys import create_key, list_keys, revoke_key

    db = open_database(service_settings())
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
    settings = service_settings()
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
    settings = service_settings()
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
