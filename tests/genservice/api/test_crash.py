"""Workers killed with SIGKILL mid-job, 20 times in all (embedded and Redis + PostgreSQL): every
job ends — done, or failed with a reason once its worker was lost `max_attempts` times — none is
lost and none finishes twice. The API restarts with its state intact."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from genservice.store.db import Database
from genservice.store.models import Job, Version
from tests.genservice.api.backends import postgres_database, redis_broker
from tests.genservice.api.service import FLANGE, Service, wait_job, wait_state

pytestmark = [pytest.mark.slow, pytest.mark.serial]
MAX_ATTEMPTS = 3
# Validation of this program takes seconds, so a kill lands while it runs.
SLOW_BOX = (
    "import time\ntime.sleep(2.5)\nimport cadquery as cq\nresult = cq.Workplane().box(12, 12, 12)\n"
)
# (stage, how many times the same job's worker is killed): 3 reaches the redelivery cap.
SCHEDULE = [("generate", 1), ("generate", MAX_ATTEMPTS), ("generate", 1)]
SCHEDULE += [("validate", 1), ("validate", MAX_ATTEMPTS), ("validate", 1)]
KILLS_PER_SERVICE = sum(times for _, times in SCHEDULE)
assert KILLS_PER_SERVICE == 10  # two services: 20 kills


@pytest.fixture(params=["embedded", "redis+postgresql"])
def crash_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    env = {"GENSERVICE_MAX_ATTEMPTS": str(MAX_ATTEMPTS)}
    if request.param == "embedded":
        service = Service(tmp_path / "data", env).start()
        try:
            yield service
        finally:
            service.stop()
        return
    with postgres_database() as database, redis_broker() as broker:
        env |= {"GENSERVICE_DATABASE_URL": database, "GENSERVICE_BROKER_URL": broker}
        service = Service(tmp_path / "data", env).start()
        try:
            yield service
        finally:
            service.stop()


def _submit(client: httpx.Client, stage: str, session_id: str) -> str:
    if stage == "generate":
        body = {"prompt": FLANGE, "n": 4, "seed": 1, "max_new_tokens": 500}
        return str(client.post("/v1/generations", json=body).json()["id"])
    response = client.post(f"/v1/sessions/{session_id}/versions", json={"program": SLOW_BOX})
    return str(response.json()["id"])


def _kill_during(
    service: Service, client: httpx.Client, job_id: str, stage: str, attempt: int
) -> None:
    """SIGKILL the worker running the job's `attempt`-th try at the stage."""
    if stage == "generate":
        # Loading the model or sampling: either way the worker holds the job mid-generation.
        wait_state(client, job_id, "generating", "", attempt=attempt)
        pid = service.pid_of("--queues generate")
    else:
        wait_state(client, job_id, "validating", "validating", attempt=attempt)
        pid = service.pid_of("--queues validate,export")
    os.kill(pid, signal.SIGKILL)


def test_killed_workers_lose_no_job_and_finish_none_twice(crash_service: Service) -> None:
    service = crash_service
    outcomes: dict[str, tuple[int, dict[str, Any]]] = {}
    with service.client() as client:
        session_id = client.post("/v1/sessions", json={"name": "crash"}).json()["id"]
        for stage, times in SCHEDULE:
            job_id = _submit(client, stage, session_id)
            for attempt in range(1, times + 1):
                _kill_during(service, client, job_id, stage, attempt)
            outcomes[job_id] = (times, wait_job(client, job_id, timeout=240))
        metrics = client.get("/metrics").text
    # Every kill but the last of a capped job was noticed (lease ran out) and handed on.
    handed_on = sum(min(times, MAX_ATTEMPTS - 1) for _, times in SCHEDULE)
    assert _metric(metrics, "genservice_jobs_redispatched_total") >= handed_on
    for job_id, (times, job) in outcomes.items():
        if times < MAX_ATTEMPTS:
            assert job["status"] == "done", (job_id, job["error"])
        else:
            assert job["status"] == "failed", job_id
            assert f"lost {MAX_ATTEMPTS} times" in job["error"]
    database = Database(service.env.get("GENSERVICE_DATABASE_URL") or _sqlite(service))
    with database.session() as session:
        for job_id in outcomes:
            job = session.get(Job, job_id)
            assert job is not None and job.finished_count == 1, job_id
            versions = session.scalar(
                select(func.count()).select_from(Version).where(Version.job_id == job_id)
            )
            assert versions == (1 if job.status == "done" else 0), job_id
    database.dispose()


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def _sqlite(service: Service) -> str:
    return f"sqlite:///{service.data_dir / 'genservice.db'}"


def test_the_api_restarts_with_its_state_intact(tmp_path: Path) -> None:
    service = Service(tmp_path / "data").start()
    try:
        with service.client() as client:
            first = wait_job(
                client, client.post("/v1/generations", json={"prompt": FLANGE, "n": 2}).json()["id"]
            )
            pending = client.post("/v1/generations", json={"prompt": FLANGE, "n": 2}).json()["id"]
        os.kill(service.pid_of("genservice api"), signal.SIGKILL)  # the supervisor restarts it
        service.wait_healthy()
        with service.client() as client:
            assert client.get(f"/v1/generations/{first['id']}").json() == first
            assert wait_job(client, pending)["status"] in ("done", "failed")
        children = service.children()
        assert len(children) == 3  # the API and two workers
        service.stop()
        assert service.process is not None and service.process.returncode == 0
        assert all(not Path(f"/proc/{pid}").exists() for pid in children), "Ctrl-C stops all"
    finally:
        service.stop()
    service = Service(tmp_path / "data").start()  # a full stop and start
    try:
        with service.client() as client:
            assert client.get(f"/v1/generations/{first['id']}").json() == first
            session = client.get(f"/v1/sessions/{first['session_id']}").json()
            assert [v["id"] for v in session["versions"]] == [first["version_id"]] or (
                first["status"] == "failed"
            )
    finally:
        service.stop()
