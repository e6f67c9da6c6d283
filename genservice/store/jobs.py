"""The job state machine, in the database: create, claim, progress, advance, finish, fail, reap.

Workers never trust the broker to deliver exactly once. A worker *claims* a job for a stage with
one conditional UPDATE (right state, no live lease), holds a lease that it renews while it works,
and writes its outcome with another conditional UPDATE on its own lease. So a message delivered
twice runs once, a job whose worker died is handed on by the reaper when its lease runs out, and
no job can finish twice. Every claim counts as an attempt; past `max_attempts` the job fails
with a reason instead of being tried again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import CursorResult, and_, or_, select, update
from sqlalchemy.orm import Session

from genservice.store.db import Database
from genservice.store.models import TERMINAL_STATES, Job, new_id, now

# Stages of each kind of job, in order; a job waiting for its first stage is "queued".
PIPELINES: dict[str, tuple[str, ...]] = {
    "generation": ("generate", "validate", "export"),
    "edit": ("validate", "export"),
    "validate": ("validate",),
    "export": ("export",),
}
STAGE_STATUS = {"generate": "generating", "validate": "validating", "export": "exporting"}
STATUS_STAGE = {status: stage for stage, status in STAGE_STATUS.items()}


def _rows(result: Any) -> int:
    """Rows an UPDATE changed."""
    assert isinstance(result, CursorResult)
    return int(result.rowcount)


class LeaseLost(Exception):
    """The worker no longer holds the job (cancelled, or handed to another worker)."""


@dataclass(frozen=True)
class Claim:
    """The outcome of a claim: claimed (work on it), skipped (someone else's), or failed."""

    outcome: str  # claimed | skipped | failed
    job: Job | None = None
    reason: str = ""


def create_job(
    db: Database,
    owner_id: str,
    kind: str,
    domain: str,
    request: dict[str, Any],
    *,
    session_id: str | None = None,
    parent_version_id: str | None = None,
    candidates: list[Any] | None = None,
    version_id: str | None = None,
) -> Job:
    """Insert a queued job; the caller dispatches its first stage."""
    if kind not in PIPELINES:
        raise ValueError(f"unknown job kind {kind!r}")
    stamp = now()
    job = Job(
        id=new_id("job"),
        owner_id=owner_id,
        kind=kind,
        status="queued",
        domain=domain,
        request=request,
        candidates=candidates,
        session_id=session_id,
        parent_version_id=parent_version_id,
        version_id=version_id,
        message="waiting for a worker",
        created_at=stamp,
        updated_at=stamp,
        dispatched_at=stamp,
    )
    with db.session() as session:
        session.add(job)
    return job


def first_stage(kind: str) -> str:
    """The stage a new job of this kind is dispatched to."""
    return PIPELINES[kind][0]


def next_stage(kind: str, stage: str) -> str | None:
    """The stage after `stage` for this kind of job, or None at the end."""
    stages = PIPELINES[kind]
    position = stages.index(stage)
    return stages[position + 1] if position + 1 < len(stages) else None


def claim(
    db: Database, job_id: str, stage: str, worker: str, lease_s: float, max_attempts: int
) -> Claim:
    """Take the job for `stage` if it is waiting for it and nobody alive holds it."""
    status = STAGE_STATUS[stage]
    stamp = now()
    with db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            return Claim("skipped", reason="no such job")
        waiting = ("queued", status) if first_stage(job.kind) == stage else (status,)
        if job.status not in waiting or job.cancel_requested:
            return Claim("skipped", job, f"job is {job.status}, not waiting for {stage}")
        if job.attempts >= max_attempts:
            reason = _lost(STAGE_STATUS[stage], job.attempts, max_attempts)
            _fail(session, job_id, None, reason)
            return Claim("failed", job, reason)
        claimed = session.execute(
            update(Job)
            .where(
                Job.id == job_id,
                Job.status.in_(waiting),
                Job.cancel_requested.is_(False),
                or_(Job.lease_owner.is_(None), Job.lease_expires_at < stamp),
            )
            .values(
                status=status,
                attempts=Job.attempts + 1,
                lease_owner=worker,
                lease_expires_at=stamp + lease_s,
                started_at=stamp if job.started_at is None else job.started_at,
                updated_at=stamp,
                message=f"{status}",
                stage_done=0,
                stage_total=0,
            )
            .execution_options(synchronize_session=False)
        )
        if _rows(claimed) != 1:
            return Claim("skipped", job, "another worker holds the job")
    with db.session() as session:
        return Claim("claimed", session.get(Job, job_id))


def _lost(status: str, attempts: int, max_attempts: int) -> str:
    """Why a job whose workers kept dying was given up."""
    return (
        f"the worker {status} this job was lost {attempts} times (limit {max_attempts}); "
        "it was not tried again"
    )


def renew(
    db: Database,
    job_id: str,
    worker: str,
    lease_s: float,
    progress: tuple[int, int, str] | None = None,
) -> None:
    """Extend the lease (and record progress); LeaseLost if the job was cancelled or taken."""
    stamp = now()
    values: dict[str, Any] = {"lease_expires_at": stamp + lease_s, "updated_at": stamp}
    if progress is not None:
        values.update(stage_done=progress[0], stage_total=progress[1], message=progress[2])
    with db.session() as session:
        changed = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == worker, Job.cancel_requested.is_(False))
            .where(Job.status.not_in(TERMINAL_STATES))
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        if _rows(changed) != 1:
            raise LeaseLost(job_id)


def _owned(session: Session, job_id: str, worker: str | None, values: dict[str, Any]) -> bool:
    """Apply values to the job if `worker` still holds it (any live job when worker is None)."""
    condition = and_(Job.id == job_id, Job.status.not_in(TERMINAL_STATES))
    if worker is not None:
        condition = and_(condition, Job.lease_owner == worker)
    changed = session.execute(
        update(Job)
        .where(condition)
        .values(updated_at=now(), **values)
        .execution_options(synchronize_session=False)
    )
    return _rows(changed) == 1


def advance(
    db: Database, job_id: str, worker: str, stage: str, to: str | None = None, **fields: Any
) -> str:
    """Hand the job to its next stage (storing this stage's output), or back to an earlier
    stage `to` of its pipeline (a repair round goes from validate back to generate); the name
    of the stage it goes to."""
    with db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise LeaseLost(job_id)
        following = to if to is not None else next_stage(job.kind, stage)
        if following is None:
            raise ValueError(f"{stage} is the last stage of a {job.kind} job")
        if following not in PIPELINES[job.kind]:
            raise ValueError(f"a {job.kind} job has no {following} stage")
        values = {
            "status": STAGE_STATUS[following],
            "lease_owner": None,
            "lease_expires_at": None,
            "attempts": 0,
            "dispatched_at": now(),
            "stage_done": 0,
            "stage_total": 0,
            "message": f"waiting for a worker to {following}",
            **fields,
        }
        if not _owned(session, job_id, worker, values):
            raise LeaseLost(job_id)
    return following


def finish(
    db: Database,
    job_id: str,
    worker: str,
    result: dict[str, Any],
    also: Callable[[Session], None] | None = None,
    **fields: Any,
) -> None:
    """Mark the job done with its result; `also` writes more rows in the same transaction."""
    stamp = now()
    with db.session() as session:
        if also is not None:
            also(session)
        values = {
            "status": "done",
            "result": result,
            "finished_at": stamp,
            "lease_owner": None,
            "lease_expires_at": None,
            "finished_count": Job.finished_count + 1,
            "stage_done": Job.stage_total,
            "message": "done",
            **fields,
        }
        if not _owned(session, job_id, worker, values):
            raise LeaseLost(job_id)  # rolls back `also` too: nothing is written twice


def _fail(
    session: Session,
    job_id: str,
    worker: str | None,
    reason: str,
    result: dict[str, Any] | None = None,
) -> bool:
    values: dict[str, Any] = {
        "status": "failed",
        "error": reason,
        "finished_at": now(),
        "lease_owner": None,
        "lease_expires_at": None,
        "message": reason,
        "finished_count": Job.finished_count + 1,
    }
    if result is not None:
        values["result"] = result
    return _owned(session, job_id, worker, values)


def fail(
    db: Database,
    job_id: str,
    worker: str | None,
    reason: str,
    result: dict[str, Any] | None = None,
) -> bool:
    """Mark the job failed with a reason a person can act on; False if it was not ours."""
    with db.session() as session:
        return _fail(session, job_id, worker, reason, result)


def cancel(db: Database, job_id: str) -> bool:
    """Cancel a job that has not ended; False if it already had."""
    stamp = now()
    with db.session() as session:
        changed = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status.not_in(TERMINAL_STATES))
            .values(
                status="cancelled",
                cancel_requested=True,
                finished_at=stamp,
                updated_at=stamp,
                lease_owner=None,
                lease_expires_at=None,
                message="cancelled",
            )
            .execution_options(synchronize_session=False)
        )
        return _rows(changed) == 1


def reap(db: Database, max_attempts: int, unclaimed_after_s: float) -> list[tuple[str, str]]:
    """Jobs whose worker died (lease expired) or whose message seems lost: (job id, stage) each.

    Their lease is cleared so that the re-sent message can claim them; jobs out of attempts fail.
    """
    stamp = now()
    to_send: list[tuple[str, str]] = []
    with db.session() as session:
        stale = session.scalars(
            select(Job).where(
                Job.status.not_in(TERMINAL_STATES),
                or_(
                    and_(Job.lease_owner.is_not(None), Job.lease_expires_at < stamp),
                    and_(Job.lease_owner.is_(None), Job.dispatched_at < stamp - unclaimed_after_s),
                ),
            )
        ).all()
        for job in stale:
            stage = first_stage(job.kind) if job.status == "queued" else STATUS_STAGE[job.status]
            if job.lease_owner is not None and job.attempts >= max_attempts:
                _fail(
                    session, job.id, job.lease_owner, _lost(job.status, job.attempts, max_attempts)
                )
                continue
            released = session.execute(
                update(Job)
                .where(
                    Job.id == job.id,
                    Job.status == job.status,
                    Job.lease_owner.is_(job.lease_owner)
                    if job.lease_owner is None
                    else Job.lease_owner == job.lease_owner,
                )
                .values(
                    lease_owner=None,
                    lease_expires_at=None,
                    dispatched_at=stamp,
                    message=f"worker lost; {job.status} again",
                    updated_at=stamp,
                )
                .execution_options(synchronize_session=False)
            )
            if _rows(released) == 1:
                to_send.append((job.id, stage))
    return to_send
