"""The distributed shape: the same service on PostgreSQL with a Redis or RabbitMQ broker,
chosen by settings only, runs generations end to end and survives a restart."""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

import pytest

from tests.genservice.api.backends import postgres_database, rabbitmq_broker, redis_broker
from tests.genservice.api.service import FLANGE, Service, wait_job

pytestmark = pytest.mark.slow
BOX = "import cadquery as cq\nresult = cq.Workplane().box(30, 20, 10)\n"


def _generate_and_download(service: Service) -> dict:
    with service.client() as client:
        job = client.post("/v1/generations", json={"prompt": FLANGE, "n": 4, "seed": 1}).json()
        done = wait_job(client, job["id"])
        assert done["status"] == "done", done["error"]
        for asset in done["result"]["assets"]:
            body = client.get(asset["url"]).content
            assert hashlib.sha256(body).hexdigest() == asset["sha256"]
        report = client.post("/v1/validate", json={"program": BOX}).json()
        assert report["valid"] and report["metrics"]["bbox_mm"] == pytest.approx([30, 20, 10])
    return done


def test_postgresql_and_redis(tmp_path: Path) -> None:
    with postgres_database() as database, redis_broker() as broker:
        env = {"GENSERVICE_DATABASE_URL": database, "GENSERVICE_BROKER_URL": broker}
        service = Service(tmp_path / "data", env).start()
        try:
            done = _generate_and_download(service)
            ready = service.client().get("/readyz").json()
            assert ready["checks"] == {"database": "ok", "broker": "ok"}
        finally:
            service.stop()
        # Everything is in PostgreSQL: a restarted service still has the job and its files.
        service = Service(tmp_path / "data", env).start()
        try:
            with service.client() as client:
                again = client.get(f"/v1/generations/{done['id']}").json()
                assert again["status"] == "done" and again["result"] == done["result"]
                assert client.get(done["result"]["assets"][0]["url"]).status_code == 200
        finally:
            service.stop()


def test_postgresql_and_rabbitmq(tmp_path: Path) -> None:
    prefix = f"t{secrets.token_hex(3)}_"
    with postgres_database() as database, rabbitmq_broker(prefix) as broker:
        env = {
            "GENSERVICE_DATABASE_URL": database,
            "GENSERVICE_BROKER_URL": broker,
            "GENSERVICE_QUEUE_PREFIX": prefix,
        }
        service = Service(tmp_path / "data", env).start()
        try:
            _generate_and_download(service)
        finally:
            service.stop()
