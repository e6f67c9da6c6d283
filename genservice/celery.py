"""The Celery application: three queues (generate, validate, export) and reliable delivery.

Workers acknowledge a message only after the task ran (acks_late), take one message at a time
(prefetch 1), and give a message back if their process dies (reject_on_worker_lost). Brokers may
still deliver a message twice or, when a worker is killed, only after a timeout; the job table's
leases (store/jobs.py) make a second delivery harmless and the reaper re-sends lost work.

The embedded broker is kombu's folder transport with one change (FolderTransport): a message is
written whole in a staging folder and then renamed into the queue. kombu writes it in place, and a
worker polling at that moment takes the still-empty file, fails to decode it, and the message is
lost: the job then waits for the reaper's unclaimed timeout.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from time import monotonic
from typing import Any

from celery import Celery
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

from genservice.config import Settings

QUEUES = ("generate", "validate", "export")
TASK_NAMES = {stage: f"genservice.{stage}" for stage in QUEUES}


class FolderChannel(filesystem.Channel):
    """kombu's folder channel, whose messages appear in the queue only once written whole."""

    # kombu's folder channel names the argument `payload`, its abstract base `message`.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Write the message in the staging folder, then rename it into the queue (atomic)."""
        # Same name scheme as kombu's (its reader sorts by it and matches the queue in it).
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        staging = Path(self.transport_options["staging_folder"]) / name
        try:
            with open(staging, "wb") as out:
                out.write(str_to_bytes(dumps(payload)))
            os.replace(staging, Path(self.data_folder_out) / name)
        except OSError as exc:
            staging.unlink(missing_ok=True)
            raise filesystem.ChannelError(f"cannot add {name!r} to the queue folder") from exc


class FolderTransport(filesystem.Transport):
    """The embedded broker: kombu's folder transport with whole-message writes."""

    Channel = FolderChannel


def broker_folder(settings: Settings) -> Path:
    """Where the embedded broker keeps its messages."""
    return settings.data_path / "broker"


def make_celery(settings: Settings) -> Celery:
    """A Celery app configured from the settings (embedded folder broker or Redis/RabbitMQ)."""
    app = Celery("genservice", broker=settings.broker_url)
    options: dict[str, Any] = {}
    if settings.embedded_broker:
        folder = broker_folder(settings)
        for sub in ("queue", "processed", "staging", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        app.conf.broker_transport = f"{__name__}:FolderTransport"
        options = {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "staging_folder": str(folder / "staging"),
            "control_folder": str(folder / "control"),  # exchange tables (kombu: ./control)
            # Same filesystem as the queue: taking a message is an atomic rename.
            "store_processed": True,
            "processed_folder": str(folder / "processed"),
            "polling_interval": 0.2,
        }
    elif settings.broker_url.startswith(("redis", "rediss")):
        options = {"visibility_timeout": settings.visibility_timeout_s}
    app.conf.update(
        broker_transport_options=options,
        broker_connection_retry_on_startup=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=False,  # progress lives in the job table, not a result backend
        task_ignore_result=True,
        task_soft_time_limit=settings.soft_time_limit_s,
        task_time_limit=settings.hard_time_limit_s,
        task_serializer="json",
        accept_content=["json"],
        task_default_queue=settings.queue("validate"),
        task_routes={TASK_NAMES[stage]: {"queue": settings.queue(stage)} for stage in QUEUES},
        worker_hijack_root_logger=False,
        worker_enable_remote_control=not settings.embedded_broker,
        worker_send_task_events=False,
        broker_heartbeat=0 if settings.embedded_broker else None,
    )
    return app


def dispatch(app: Celery, settings: Settings, job_id: str, stage: str) -> None:
    """Send the job's stage to its queue (tasks take ids, never objects)."""
    app.send_task(TASK_NAMES[stage], args=[job_id], queue=settings.queue(stage))
