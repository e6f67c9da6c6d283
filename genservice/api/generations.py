"""/v1/generations: submit, read, stream progress, cancel and list generation jobs."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import math
import os
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import ValidationError
from sqlalchemy import select
from starlette.requests import ClientDisconnect

from genservice.api.deps import Key, ServiceState, State, check_quota
from genservice.api.schemas import GenerationCreate, JobAccepted, JobOut, JobPage
from genservice.api.views import job_out
from genservice.celery import dispatch
from genservice.config import Settings
from genservice.generation.fit import default_fit
from genservice.generation.gallery import default_retrieve
from genservice.generation.pictures import PictureError, check_picture
from genservice.generation.sampler import default_greedy_first, default_temperature
from genservice.store import jobs
from genservice.store.assets import candidate_preview_key
from genservice.store.models import TERMINAL_STATES, ApiKey, Job, Session, Version, new_id, now

router = APIRouter(prefix="/v1/generations", tags=["generations"])
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")

_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/GenerationCreate"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["request"],
                    "properties": {
                        "request": {"type": "string", "description": "GenerationCreate as JSON"},
                        "images": {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                        },
                    },
                }
            },
        },
    }
}


def unprocessable(message: str) -> HTTPException:
    """A 422 that says what to fix."""
    return HTTPException(422, message)


def owned_job(service: ServiceState, key: ApiKey, job_id: str) -> Job:
    """The caller's job, or 404 (another owner's job does not exist for this caller)."""
    with service.db.session() as session:
        job = session.get(Job, job_id)
    if job is None or job.owner_id != key.id:
        raise HTTPException(404, f"no generation {job_id}")
    return job


async def _read_body(request: Request) -> tuple[GenerationCreate, list[bytes]]:
    """The request and its uploaded images, from JSON or multipart."""
    content_type = request.headers.get("content-type", "")
    uploads: list[bytes] = []
    try:
        if content_type.startswith("multipart/form-data"):
            form = await request.form()
            raw = form.get("request")
            if not isinstance(raw, str):
                raise unprocessable("multipart requests need a 'request' field with the JSON body")
            data = json.loads(raw)
            for item in form.getlist("images"):
                if isinstance(item, str):
                    raise unprocessable("'images' parts must be files")
                uploads.append(await item.read())
        elif content_type.startswith("application/json") or not content_type:
            data = json.loads(await request.body() or b"null")
        else:
            raise HTTPException(415, "send application/json or multipart/form-data")
    except (ValueError, UnicodeDecodeError) as exc:
        raise unprocessable(f"the body is not valid JSON: {exc}") from exc
    except ClientDisconnect as exc:  # nobody is left to answer; nothing was queued
        raise HTTPException(400, "the client went away before sending the whole body") from exc
    if not isinstance(data, dict):
        raise unprocessable("the body must be a JSON object")
    try:
        body = GenerationCreate.model_validate(data)
    except ValidationError as exc:
        raise HTTPException(422, json.loads(exc.json(include_url=False))) from exc
    return body, uploads


def _decode_images(
    service: ServiceState, body: GenerationCreate, uploads: list[bytes]
) -> list[bytes]:
    settings = service.settings
    images = list(uploads)
    for number, text in enumerate(body.images, start=1):
        if len(text) > settings.max_image_bytes * 4 // 3 + 8:
            raise unprocessable(
                f"image {number} is larger than the {settings.max_image_bytes} byte limit"
            )
        try:
            images.append(base64.b64decode(text.split(",", 1)[-1], validate=True))
        except (binascii.Error, ValueError) as exc:
            raise unprocessable(f"image {number} is not valid base64: {exc}") from exc
    if len(images) > settings.max_images:
        raise unprocessable(f"at most {settings.max_images} images per request")
    for number, data in enumerate(images, start=1):
        if len(data) > settings.max_image_bytes:
            raise unprocessable(
                f"image {number} has {len(data)} bytes; the limit is {settings.max_image_bytes}"
            )
        if not data.startswith(IMAGE_MAGIC):
            raise unprocessable(f"image {number} is not a PNG or JPEG file")
        try:
            check_picture(data)
        except PictureError as exc:
            raise unprocessable(f"image {number}: {exc}") from exc
    return images


def _check_limits(service: ServiceState, body: GenerationCreate) -> None:
    s = service.settings
    if not 1 <= body.n <= s.max_n:
        raise unprocessable(f"n must be between 1 and {s.max_n}, not {body.n}")
    if body.max_new_tokens is not None and body.max_new_tokens > s.max_new_tokens:
        raise unprocessable(f"max_new_tokens may be at most {s.max_new_tokens}")
    if len(body.prompt) > s.max_prompt_chars:
        raise unprocessable(
            f"the prompt has {len(body.prompt)} characters; the limit is {s.max_prompt_chars}"
        )
    if body.instruction is not None and len(body.instruction) > s.max_prompt_chars:
        raise unprocessable(f"the instruction is longer than {s.max_prompt_chars} characters")
    if body.instruction is None and not body.prompt.strip():
        raise unprocessable("the prompt is empty: say what to make")
    if body.instruction is not None:
        if not body.instruction.strip():
            raise unprocessable("the instruction is empty: say what to change")
        if not body.session_id or not body.parent_version_id:
            raise unprocessable("an edit needs session_id and parent_version_id with instruction")
    elif body.parent_version_id is not None:
        raise unprocessable("parent_version_id goes with an instruction (what to change)")
    check_judging(s, body.domain, body.spec, body.tests, body.entry_point, body.time_budget_s)
    if body.domain == "code" and body.formats:
        raise unprocessable("formats apply to cad and scene, not code")


def check_judging(
    settings: Settings,
    domain: str,
    spec: dict[str, Any] | None,
    tests: str | None,
    entry_point: str | None,
    time_budget_s: float | None = None,
) -> None:
    """422 unless what a program is judged against fits its domain: tests and entry_point (and
    a time budget) for code, an optional valid spec for cad and scene."""
    if domain == "code":
        if not tests or not entry_point:
            raise unprocessable(
                "domain code needs tests (check(candidate), test_* functions or assert lines) "
                "and entry_point"
            )
        if spec is not None:
            raise unprocessable("spec applies to cad and scene, not code")
    elif tests is not None or entry_point is not None or time_budget_s is not None:
        raise unprocessable("tests, entry_point and time_budget_s apply to domain code only")
    if tests is not None and len(tests) > settings.max_program_chars:
        raise unprocessable(f"the tests are longer than {settings.max_program_chars} characters")
    if spec is not None:
        from validators.cad.validate import check_spec

        try:
            check_spec(spec)
        except ValueError as exc:
            raise unprocessable(f"spec: {exc}") from exc


def _session_for(service: ServiceState, key: ApiKey, body: GenerationCreate) -> str:
    """The session the new version will join (a new one unless given); 404 if not the caller's."""
    with service.db.session() as session:
        if body.session_id is None:
            created = Session(
                id=new_id("ses"),
                owner_id=key.id,
                name=(body.prompt or "")[:80],
                domain=body.domain,
                created_at=now(),
                updated_at=now(),
            )
            session.add(created)
            return created.id
        found = session.get(Session, body.session_id)
        if found is None or found.owner_id != key.id:
            raise HTTPException(404, f"no session {body.session_id}")
        if found.domain != body.domain:
            raise unprocessable(
                f"session {found.id} is a {found.domain} session, not {body.domain}"
            )
        if body.parent_version_id is not None:
            parent = session.get(Version, body.parent_version_id)
            if parent is None or parent.session_id != found.id:
                raise HTTPException(404, f"no version {body.parent_version_id} in {found.id}")
        return found.id


def _save_images(service: ServiceState, images: list[bytes]) -> list[str]:
    """Store uploads under the data directory; their paths relative to it."""
    if not images:
        return []
    folder_name = f"uploads/{new_id('img')}"
    folder = service.settings.data_path / folder_name
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for number, data in enumerate(images):
        suffix = ".png" if data.startswith(IMAGE_MAGIC[0]) else ".jpg"
        path = folder / f"{number}{suffix}"
        path.write_bytes(data)
        names.append(f"{folder_name}/{path.name}")
    return names


@router.post(
    "",
    status_code=202,
    response_model=JobAccepted,
    openapi_extra=_BODY_DOC,
    summary="Generate programs for a prompt (or an edit of a version); 202 with the job",
)
async def create_generation(request: Request, service: State, key: Key) -> JobAccepted:
    """Queue a generation: sample n candidates, validate them, export the best as a new version."""
    body, uploads = await _read_body(request)
    _check_limits(service, body)
    images = _decode_images(service, body, uploads)
    check_quota(service, key)
    session_id = _session_for(service, key, body)
    seed = body.seed if body.seed is not None else int.from_bytes(os.urandom(4), "big") >> 1
    pictured, edit = bool(images), body.parent_version_id is not None  # sampling defaults
    stored: dict[str, Any] = {
        "prompt": body.prompt or (body.instruction or ""),
        "n": body.n,
        "seed": seed,
        "temperature": body.temperature
        if body.temperature is not None
        else default_temperature(pictured, edit=edit),
        "top_p": body.top_p,
        "greedy_first": body.greedy_first
        if body.greedy_first is not None
        else default_greedy_first(pictured, edit=edit),
        "max_new_tokens": body.max_new_tokens or service.settings.max_new_tokens,
        "instruction": body.instruction,
        "spec": body.spec,
        "tests": body.tests,
        "entry_point": body.entry_point,
        "time_budget_s": body.time_budget_s,
        "formats": body.formats,
        "images": _save_images(service, images),
        "repair": body.repair,
        "fit": body.fit if body.fit is not None else default_fit(bool(images)),
        "retrieve": body.retrieve if body.retrieve is not None else default_retrieve(bool(images)),
    }
    job = jobs.create_job(
        service.db,
        key.id,
        "generation",
        body.domain,
        stored,
        session_id=session_id,
        parent_version_id=body.parent_version_id,
    )
    dispatch(service.celery, service.settings, job.id, jobs.first_stage("generation"))
    return JobAccepted(
        id=job.id,
        status="queued",
        session_id=session_id,
        url=f"/v1/generations/{job.id}",
        events_url=f"/v1/generations/{job.id}/events",
    )


@router.get("", response_model=JobPage, summary="List the caller's jobs, newest first")
def list_generations(
    service: State,
    key: Key,
    limit: int = Query(20, ge=1, le=100),
    cursor: str | None = Query(None, max_length=200, description="next_cursor of the last page"),
    status: str | None = Query(None, description="only jobs in this state"),
) -> JobPage:
    """A page of the caller's jobs."""
    query = select(Job).where(Job.owner_id == key.id)
    if status is not None:
        query = query.where(Job.status == status)
    if cursor:
        try:
            stamp_text, _, last_id = cursor.partition("~")
            stamp = float(stamp_text)
            if not math.isfinite(stamp) or not last_id:
                raise ValueError
        except ValueError as exc:
            raise unprocessable("cursor is not one this API returned") from exc
        query = query.where(
            (Job.created_at < stamp) | ((Job.created_at == stamp) & (Job.id < last_id))
        )
    query = query.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit + 1)
    with service.db.session() as session:
        rows = list(session.scalars(query).all())
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = f"{rows[-1].created_at!r}~{rows[-1].id}" if more and rows else None
    return JobPage(items=[job_out(j) for j in rows], next_cursor=next_cursor)


@router.get("/{job_id}", response_model=JobOut, summary="A job's state, progress and result")
def get_generation(job_id: str, service: State, key: Key) -> JobOut:
    """The job; when done, the chosen program, its Report, all candidates and the assets."""
    return job_out(owned_job(service, key, job_id))


@router.get(
    "/{job_id}/candidates/{index}/preview",
    summary="A candidate's picture (iso view, PNG), drawn when it was validated",
    response_class=FileResponse,
    responses={200: {"content": {"image/png": {}}}},
)
def candidate_preview(job_id: str, index: int, service: State, key: Key) -> FileResponse:
    """The picture; 404 when the candidate built no geometry (or the job has no such one)."""
    owned_job(service, key, job_id)
    path = service.assets.local_path(candidate_preview_key(job_id, index))
    if index < 0 or path is None or not path.is_file():
        raise HTTPException(404, f"generation {job_id} has no picture of candidate {index}")
    return FileResponse(path, media_type="image/png", headers={"Cache-Control": "private"})


@router.post("/{job_id}/cancel", response_model=JobOut, summary="Cancel a job that has not ended")
def cancel_generation(job_id: str, service: State, key: Key) -> JobOut:
    """Cancel; 409 if the job has already ended."""
    job = owned_job(service, key, job_id)
    if not jobs.cancel(service.db, job.id):
        raise HTTPException(409, f"generation {job_id} has already ended ({job.status})")
    return job_out(owned_job(service, key, job_id))


@router.get(
    "/{job_id}/events",
    summary="Server-Sent Events: progress until the job ends",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def generation_events(job_id: str, request: Request, service: State, key: Key) -> Any:
    """`progress` events while the job runs, then one `done`, `failed` or `cancelled` event."""
    owned_job(service, key, job_id)

    async def stream() -> Any:
        last: tuple[Any, ...] | None = None
        idle = 0.0
        while True:
            if await request.is_disconnected():
                return
            job = await asyncio.to_thread(_load, service, job_id)
            if job is None:
                return
            view = job_out(job)
            shown = (view.status, view.progress.done, view.progress.total, view.progress.message)
            if shown != last:
                last, idle = shown, 0.0
                event = view.status if view.status in TERMINAL_STATES else "progress"
                yield f"event: {event}\ndata: {view.model_dump_json()}\n\n"
                if view.status in TERMINAL_STATES:
                    return
            elif idle >= 15:
                idle = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(0.25)
            idle += 0.25

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def _load(service: ServiceState, job_id: str) -> Job | None:
    with service.db.session() as session:
        return session.get(Job, job_id)
