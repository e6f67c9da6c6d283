"""Validation, assets, models, health, readiness and metrics."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.responses import FileResponse, JSONResponse
from sqlalchemy import func, select, text

from genservice.api.deps import Key, ServiceState, State, check_quota, check_stands_on
from genservice.api.generations import check_judging, unprocessable
from genservice.api.schemas import Health, ModelOut, ValidateRequest
from genservice.celery import dispatch
from genservice.store import jobs
from genservice.store.models import TERMINAL_STATES, Asset, Job, Version

router = APIRouter()
FORMAT_CHOICES = ("glb", "step", "stl", "3mf", "ply", "spz", "splat-glb", "png", "manifest")


async def wait_for(service: ServiceState, job_id: str) -> Job:
    """Poll until the job ends; 503 with Retry-After if no worker finished it in time."""
    deadline = time.monotonic() + service.settings.wait_s
    delay = 0.05
    while True:
        job = await asyncio.to_thread(_load, service, job_id)
        if job is not None and job.status in TERMINAL_STATES:
            return job
        if time.monotonic() > deadline:
            raise HTTPException(
                503,
                f"no worker finished job {job_id} within {service.settings.wait_s:g} s; "
                "are validate and export workers running?",
                {"Retry-After": "10"},
            )
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def _load(service: ServiceState, job_id: str) -> Job | None:
    with service.db.session() as session:
        return session.get(Job, job_id)


@router.post("/v1/validate", tags=["validation"], summary="Validate a program → its Report")
async def validate(body: ValidateRequest, service: State, key: Key) -> dict[str, Any]:
    """Run the program in the sandbox and check it; the Report (valid or not, never an error)."""
    settings = service.settings
    if len(body.program) > settings.max_program_chars:
        raise unprocessable(f"the program is longer than {settings.max_program_chars} characters")
    check_judging(
        settings, body.domain, body.spec, body.tests, body.entry_point, body.time_budget_s
    )
    if body.domain == "code" and body.parameters:
        raise unprocessable("parameters apply to cad and scene, not code")
    if body.domain == "code" and (body.request or body.version_id or body.job_id):
        raise unprocessable("request, version_id and job_id apply to cad and scene, not code")
    if sum(bool(x) for x in (body.request, body.version_id, body.job_id)) > 1:
        raise unprocessable(
            "give one of request, version_id and job_id: what the part is judged against"
        )
    check_stands_on(service, key, body.version_id, body.job_id)
    check_quota(service, key)
    job = jobs.create_job(
        service.db,
        key.id,
        "validate",
        body.domain,
        {
            "spec": body.spec,
            "parameters": body.parameters,
            "tests": body.tests,
            "entry_point": body.entry_point,
            "time_budget_s": body.time_budget_s,
            "request": body.request,
            "version_id": body.version_id,
            "job_id": body.job_id,
        },
        candidates=[{"program": body.program, "finish_reason": "given", "tokens": 0}],
    )
    dispatch(service.celery, settings, job.id, "validate")
    done = await wait_for(service, job.id)
    if done.status != "done" or not done.result:
        raise HTTPException(503, f"validation did not complete: {done.error or done.status}")
    report: dict[str, Any] = done.result["report"]
    return report


@router.get(
    "/v1/assets/{asset_id}",
    tags=["assets"],
    summary="Download an asset, or the same version in another format (made on demand)",
    response_class=FileResponse,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
async def get_asset(
    asset_id: str,
    service: State,
    key: Key,
    format: str | None = Query(None, description=", ".join(FORMAT_CHOICES)),
) -> Response:
    """The file, with its media type and sha256 (ETag, X-Content-SHA256)."""
    if format is not None and format not in FORMAT_CHOICES:
        raise unprocessable(f"format must be one of {', '.join(FORMAT_CHOICES)}")
    with service.db.session() as session:
        asset = session.get(Asset, asset_id)
        if asset is None or asset.owner_id != key.id:
            raise HTTPException(404, f"no asset {asset_id}")
        if format is not None and format != asset.format:
            sibling = session.scalar(
                select(Asset).where(Asset.version_id == asset.version_id, Asset.format == format)
            )
            version = session.get(Version, asset.version_id)
        else:
            sibling, version = asset, None
    if sibling is None:
        if version is None:
            raise HTTPException(404, f"the version of asset {asset_id} no longer exists")
        sibling = await _export_on_demand(service, key, version, str(format))
    path = service.assets.local_path(sibling.path)
    if path is None or not path.is_file():
        raise HTTPException(404, f"the file of asset {sibling.id} is missing")
    suffix = "".join(path.suffixes) or ""
    return FileResponse(
        path,
        media_type=sibling.media_type,
        filename=f"{sibling.version_id}{suffix}",
        headers={"ETag": f'"{sibling.sha256}"', "X-Content-SHA256": sibling.sha256},
    )


async def _export_on_demand(service: ServiceState, key: Any, version: Version, fmt: str) -> Asset:
    """Export the version in one more format on an export worker, then return that asset."""
    if fmt == "manifest":
        raise HTTPException(404, "this version has no manifest (it was never exported)")
    check_quota(service, key)
    job = jobs.create_job(
        service.db,
        key.id,
        "export",
        version.domain,
        {"version_id": version.id, "formats": [fmt]},
        session_id=version.session_id,
    )
    dispatch(service.celery, service.settings, job.id, "export")
    done = await wait_for(service, job.id)
    if done.status != "done":
        raise HTTPException(422, f"cannot export as {fmt}: {done.error or done.status}")
    with service.db.session() as session:
        asset = session.scalar(
            select(Asset).where(Asset.version_id == version.id, Asset.format == fmt)
        )
    if asset is None:
        raise HTTPException(422, f"the export produced no {fmt} file")
    return asset


@router.get("/v1/models", tags=["system"], response_model=list[ModelOut], summary="Models served")
async def list_models(service: State, key: Key) -> list[ModelOut]:
    """The model the generate workers load."""
    if service.models_cache is None:
        service.models_cache = await asyncio.to_thread(_describe_models, service)
    return [ModelOut(**m) for m in service.models_cache]


def _describe_models(service: ServiceState) -> list[dict[str, Any]]:
    from genservice.generation.loader import default_model_dir, model_kind

    folder = service.settings.model_dir or default_model_dir()
    try:
        kind = model_kind(folder)
    except (OSError, ValueError) as exc:
        kind = f"unreadable: {exc}"
    return [{"id": folder.name, "kind": kind, "path": str(folder), "default": True}]


@router.get("/healthz", tags=["system"], response_model=Health, summary="Liveness")
def healthz() -> Health:
    """The process is up."""
    return Health(status="ok")


@router.get("/readyz", tags=["system"], response_model=Health, summary="Readiness")
def readyz(service: State) -> Response:
    """Database and broker reachable: 200, else 503 with what is not."""
    checks: dict[str, str] = {}
    try:
        with service.db.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"unreachable: {type(exc).__name__}"
    try:
        with service.celery.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
        checks["broker"] = "ok"
    except Exception as exc:
        checks["broker"] = f"unreachable: {type(exc).__name__}"
    ready = all(v == "ok" for v in checks.values())
    body = Health(status="ready" if ready else "not ready", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get("/metrics", tags=["system"], summary="Prometheus metrics")
def metrics(service: State) -> Response:
    """Request counts and latencies, jobs by state."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from genservice.api.metrics import JOBS, REGISTRY

    with service.db.session() as session:
        counts = dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
    for status in (
        "queued",
        "generating",
        "validating",
        "exporting",
        "done",
        "failed",
        "cancelled",
    ):
        JOBS.labels(status=status).set(counts.get(status, 0))
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
