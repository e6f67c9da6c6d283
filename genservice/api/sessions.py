"""/v1/sessions and /v1/versions: design sessions, their version tree, manual edits."""

from __future__ import annotations

from collections import defaultdict

from fastapi import APIRouter, HTTPException, Query
from sqlalchemy import select

from genservice.api.deps import Key, ServiceState, State, check_quota, check_stands_on
from genservice.api.generations import unprocessable
from genservice.api.schemas import (
    JobAccepted,
    SessionCreate,
    SessionOut,
    SessionSummary,
    VersionCreate,
    VersionOut,
)
from genservice.api.views import version_out
from genservice.celery import dispatch
from genservice.store import jobs
from genservice.store.models import ApiKey, Asset, Session, Version, new_id, now

router = APIRouter(tags=["sessions"])


def owned_session(service: ServiceState, key: ApiKey, session_id: str) -> Session:
    """The caller's session or 404."""
    with service.db.session() as db:
        found = db.get(Session, session_id)
    if found is None or found.owner_id != key.id:
        raise HTTPException(404, f"no session {session_id}")
    return found


def _summary(found: Session) -> SessionSummary:
    return SessionSummary(
        id=found.id,
        name=found.name,
        domain=found.domain,
        head_version_id=found.head_version_id,
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


@router.post("/v1/sessions", status_code=201, response_model=SessionSummary, summary="New session")
def create_session(body: SessionCreate, service: State, key: Key) -> SessionSummary:
    """Start an empty design session."""
    stamp = now()
    created = Session(
        id=new_id("ses"),
        owner_id=key.id,
        name=body.name,
        domain=body.domain,
        created_at=stamp,
        updated_at=stamp,
    )
    with service.db.session() as db:
        db.add(created)
    return _summary(created)


@router.get("/v1/sessions", response_model=list[SessionSummary], summary="The caller's sessions")
def list_sessions(
    service: State, key: Key, limit: int = Query(50, ge=1, le=200)
) -> list[SessionSummary]:
    """The caller's sessions, most recently changed first."""
    with service.db.session() as db:
        rows = db.scalars(
            select(Session)
            .where(Session.owner_id == key.id)
            .order_by(Session.updated_at.desc())
            .limit(limit)
        ).all()
    return [_summary(s) for s in rows]


@router.get("/v1/sessions/{session_id}", response_model=SessionOut, summary="Session + versions")
def get_session(session_id: str, service: State, key: Key) -> SessionOut:
    """The session with every version and the tree (children by parent id)."""
    found = owned_session(service, key, session_id)
    with service.db.session() as db:
        versions = db.scalars(
            select(Version).where(Version.session_id == found.id).order_by(Version.number)
        ).all()
        ids = [v.id for v in versions]
        assets = db.scalars(select(Asset).where(Asset.version_id.in_(ids))).all() if ids else []
    by_version: dict[str, list[Asset]] = defaultdict(list)
    for asset in assets:
        by_version[asset.version_id].append(asset)
    children: dict[str, list[str]] = defaultdict(list)
    for version in versions:
        children[version.parent_id or "root"].append(version.id)
    summary = _summary(found)
    return SessionOut(
        **summary.model_dump(),
        versions=[version_out(v, by_version[v.id]) for v in versions],
        children=dict(children),
    )


@router.get("/v1/versions/{version_id}", response_model=VersionOut, summary="One version")
def get_version(version_id: str, service: State, key: Key) -> VersionOut:
    """A version with its program, parameters, Report and assets."""
    with service.db.session() as db:
        version = db.get(Version, version_id)
        if version is None or version.owner_id != key.id:
            raise HTTPException(404, f"no version {version_id}")
        assets = db.scalars(select(Asset).where(Asset.version_id == version_id)).all()
    return version_out(version, list(assets))


@router.post(
    "/v1/sessions/{session_id}/versions",
    status_code=202,
    response_model=JobAccepted,
    summary="A manual edit (code and/or parameters): validated and exported as a new version",
)
def create_version(session_id: str, body: VersionCreate, service: State, key: Key) -> JobAccepted:
    """Queue validation and export of edited code or parameters; the job makes the version."""
    found = owned_session(service, key, session_id)
    settings = service.settings
    parent = None
    if body.parent_version_id is not None:
        with service.db.session() as db:
            parent = db.get(Version, body.parent_version_id)
        if parent is None or parent.session_id != found.id:
            raise HTTPException(404, f"no version {body.parent_version_id} in {session_id}")
    if body.program is None and parent is None:
        raise unprocessable("give the program, or a parent_version_id whose program to re-use")
    if body.program is None and body.parameters is None:
        raise unprocessable("nothing changes: give a program or parameters")
    program = body.program if body.program is not None else parent.program  # type: ignore[union-attr]
    if not program.strip():
        raise unprocessable("the program is empty")
    if len(program) > settings.max_program_chars:
        raise unprocessable(f"the program is longer than {settings.max_program_chars} characters")
    if found.domain == "code":
        raise unprocessable("manual versions are for cad and scene sessions")
    parameters = (
        dict(parent.parameters or {}) if parent is not None and body.program is None else {}
    )
    parameters.update(body.parameters or {})
    check_stands_on(service, key, None, body.job_id)
    check_quota(service, key)
    job = jobs.create_job(
        service.db,
        key.id,
        "edit",
        found.domain,
        {
            "source": "manual",
            "prompt": "parameters changed" if body.program is None else "code edited",
            "parameters": parameters,
            "formats": body.formats,
            "job_id": body.job_id,
        },
        session_id=found.id,
        parent_version_id=parent.id if parent is not None else None,
        candidates=[{"program": program, "finish_reason": "manual", "tokens": 0}],
    )
    dispatch(service.celery, settings, job.id, jobs.first_stage("edit"))
    return JobAccepted(
        id=job.id,
        status="queued",
        session_id=found.id,
        url=f"/v1/generations/{job.id}",
        events_url=f"/v1/generations/{job.id}/events",
    )
