"""The embedded (folder) broker hands a worker only whole messages."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import genservice.celery as celery_module
from genservice.celery import broker_folder, make_celery
from genservice.config import Settings


def test_a_message_reaches_the_queue_only_once_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A producer paused in the middle of writing a message (as a busy machine may pause the API
    # process): a worker polling then must find nothing rather than take a half-written file,
    # which it could not decode and which would be lost.
    settings = Settings(data_dir=tmp_path)
    app = make_celery(settings)
    writing, release = threading.Event(), threading.Event()
    encode = celery_module.str_to_bytes

    def paused(text: str) -> bytes:
        writing.set()
        assert release.wait(10)
        return encode(text)

    monkeypatch.setattr(celery_module, "str_to_bytes", paused)
    with app.connection_for_write() as producer, app.connection_for_read() as consumer:
        sender = threading.Thread(target=lambda: producer.SimpleQueue("jobs").put({"job": "a"}))
        sender.start()
        assert writing.wait(10)
        queue = consumer.SimpleQueue("jobs")
        with pytest.raises(queue.Empty):
            queue.get(timeout=0.5)
        release.set()
        sender.join(10)
        message = queue.get(timeout=5)
        assert message.payload == {"job": "a"}
        message.ack()
    assert list((broker_folder(settings) / "staging").iterdir()) == []
    assert not (Path.cwd() / "control").exists(), "exchange tables stay in the data directory"


def test_the_workers_tasks_travel_through_the_folder_broker(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    app = make_celery(settings)
    app.send_task("genservice.generate", args=["job_1"], queue=settings.queue("generate"))
    queued = list((broker_folder(settings) / "queue").iterdir())
    assert [path.name.endswith(f".{settings.queue('generate')}.msg") for path in queued] == [True]
    with app.connection_for_read() as connection:
        message = connection.SimpleQueue(settings.queue("generate")).get(timeout=5)
        assert message.headers["task"] == "genservice.generate"
        message.ack()
