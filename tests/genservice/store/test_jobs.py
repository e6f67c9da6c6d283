"""The job state machine: a job is claimed once, handed on when its worker dies, never finished
twice, and fails with a reason after too many lost workers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from genservice.store import jobs
from genservice.store.db import Database
from genservice.store.keys import authenticate, create_key, list_keys, revoke_key
from genservice.store.models import Base, Job


@pytest.fixture()
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'test.db'}")
    database.migrate()
    return database


@pytest.fixture()
def owner(db: Database) -> str:
    return create_key(db, "tester").id


def _job(db: Database, owner: str, kind: str = "validate") -> Job:
    return jobs.create_job(db, owner, kind, "cad", {}, candidates=[{"program": "x"}])


def _get(db: Database, job_id: str) -> Job:
    with db.session() as session:
        job = session.get(Job, job_id)
    assert job is not None
    return job


def test_migrations_match_the_models(db: Database) -> None:
    with db.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []


def test_migrate_twice_is_harmless(db: Database) -> None:
    db.migrate()
    assert list_keys(db) == []


def test_a_second_delivery_does_not_run_the_job_again(db: Database, owner: str) -> None:
    job = _job(db, owner)
    first = jobs.claim(db, job.id, "validate", "w1", lease_s=30, max_attempts=3)
    second = jobs.claim(db, job.id, "validate", "w2", lease_s=30, max_attempts=3)
    assert (first.outcome, second.outcome) == ("claimed", "skipped")
    jobs.finish(db, job.id, "w1", {"report": {}})
    third = jobs.claim(db, job.id, "validate", "w3", lease_s=30, max_attempts=3)
    assert third.outcome == "skipped"
    assert _get(db, job.id).finished_count == 1


def test_a_job_finishes_once_even_if_two_workers_ran_it(db: Database, owner: str) -> None:
    job = _job(db, owner)
    assert jobs.claim(db, job.id, "validate", "w1", 0.01, 3).outcome == "claimed"
    time.sleep(0.05)  # w1's lease runs out: the reaper hands the job to w2
    assert jobs.reap(db, 3, 900) == [(job.id, "validate")]
    assert jobs.claim(db, job.id, "validate", "w2", 30, 3).outcome == "claimed"
    jobs.finish(db, job.id, "w2", {"by": "w2"})
    with pytest.raises(jobs.LeaseLost):
        jobs.finish(db, job.id, "w1", {"by": "w1"})  # the slow first worker comes back
    stored = _get(db, job.id)
    assert (stored.status, stored.result, stored.finished_count) == ("done", {"by": "w2"}, 1)


def test_renewing_keeps_the_job_from_the_reaper(db: Database, owner: str) -> None:
    job = _job(db, owner)
    jobs.claim(db, job.id, "validate", "w1", 0.2, 3)
    jobs.renew(db, job.id, "w1", 30, (1, 2, "half way"))
    time.sleep(0.3)
    assert jobs.reap(db, 3, 900) == []
    stored = _get(db, job.id)
    assert (stored.stage_done, stored.stage_total, stored.message) == (1, 2, "half way")


def test_after_max_attempts_the_job_fails_with_a_reason(db: Database, owner: str) -> None:
    job = _job(db, owner)
    for attempt in range(3):
        assert jobs.claim(db, job.id, "validate", f"w{attempt}", 0.01, 3).outcome == "claimed"
        time.sleep(0.03)
        jobs.reap(db, 3, 900)
    stored = _get(db, job.id)
    assert stored.status == "failed"
    assert "lost 3 times" in (stored.error or "")
    assert jobs.claim(db, job.id, "validate", "late", 30, 3).outcome == "skipped"


def test_stages_follow_the_pipeline(db: Database, owner: str) -> None:
    job = jobs.create_job(db, owner, "generation", "cad", {"n": 2})
    assert jobs.claim(db, job.id, "validate", "w", 30, 3).outcome == "skipped"  # not yet
    assert jobs.claim(db, job.id, "generate", "w", 30, 3).outcome == "claimed"
    assert jobs.advance(db, job.id, "w", "generate", candidates=[{"program": "p"}]) == "validate"
    stored = _get(db, job.id)
    assert (stored.status, stored.lease_owner, stored.attempts) == ("validating", None, 0)
    assert jobs.claim(db, job.id, "generate", "w", 30, 3).outcome == "skipped"  # stage is past
    assert jobs.claim(db, job.id, "validate", "v", 30, 3).outcome == "claimed"


def test_cancel_stops_the_worker_and_keeps_the_job_cancelled(db: Database, owner: str) -> None:
    job = _job(db, owner)
    jobs.claim(db, job.id, "validate", "w1", 30, 3)
    assert jobs.cancel(db, job.id)
    with pytest.raises(jobs.LeaseLost):
        jobs.renew(db, job.id, "w1", 30)
    with pytest.raises(jobs.LeaseLost):
        jobs.finish(db, job.id, "w1", {})
    assert not jobs.cancel(db, job.id)
    assert _get(db, job.id).status == "cancelled"


def test_a_lost_unclaimed_message_is_sent_again(db: Database, owner: str) -> None:
    job = _job(db, owner)
    assert jobs.reap(db, 3, unclaimed_after_s=60) == []
    time.sleep(0.05)
    assert jobs.reap(db, 3, unclaimed_after_s=0.01) == [(job.id, "validate")]


def test_keys_are_stored_hashed_and_can_be_revoked(db: Database) -> None:
    made = create_key(db, "app")
    assert authenticate(db, made.key) is not None
    assert authenticate(db, made.key + "x") is None
    assert all(made.key not in (k.key_hash, k.prefix) for k in list_keys(db))
    assert revoke_key(db, "app") == 1
    assert authenticate(db, made.key) is None
    with pytest.raises(ValueError, match="name"):
        create_key(db, " ")
