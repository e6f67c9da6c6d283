"""The FastAPI application: routes, limits on request size, metrics, and the job reaper."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from genservice.api import generations, sessions, system
from genservice.api.deps import ServiceState
from genservice.api.metrics import LATENCY, REDISPATCHED, REQUESTS
from genservice.celery import broker_folder, dispatch, make_celery
from genservice.config import Settings, load_settings
from genservice.store import jobs
from genservice.store.assets import LocalAssetStore
from genservice.store.db import Database

log = logging.getLogger("genservice.api")
WEB_DIST = Path(__file__).resolve().parents[2] / "web" / "dist"

PLACEHOLDER_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>genservice</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 44rem; margin: 3rem auto">
<h1>genservice</h1>
<p>The service is running. The REST API is under <code>/v1</code>; its reference is at
<a href="/docs">/docs</a> (OpenAPI schema: <a href="/openapi.json">/openapi.json</a>).</p>
<p>Health: <a href="/healthz">/healthz</a> · readiness: <a href="/readyz">/readyz</a> ·
metrics: <a href="/metrics">/metrics</a></p>
</body></html>
"""


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        response = JSONResponse(
            {"detail": f"the request body is larger than {self.limit} bytes"}, status_code=413
        )
        await response({"type": "http"}, _empty_receive, send)


class _TooLarge(Exception):
    pass


async def _empty_receive() -> Message:
    return {"type": "http.disconnect"}


def reap_forever(service: ServiceState, stop: threading.Event) -> None:
    """Re-send the jobs whose worker died (lease expired) or whose message was lost."""
    settings = service.settings
    while not stop.wait(settings.reaper_interval_s):
        try:
            for job_id, stage in jobs.reap(
                service.db, settings.max_attempts, settings.unclaimed_redispatch_s
            ):
                log.warning("job %s: worker lost, sending %s again", job_id, stage)
                REDISPATCHED.inc()
                dispatch(service.celery, settings, job_id, stage)
            if settings.embedded_broker:
                _prune_processed(broker_folder(settings) / "processed")
        except Exception:  # the database or broker is away for a moment: try again later
            log.exception("reaper pass failed")


def _prune_processed(folder: Path, keep_s: float = 600.0) -> None:
    """The embedded broker keeps taken messages; drop those older than ten minutes."""
    cutoff = time.time() - keep_s
    for path in folder.glob("*.msg"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


def _document_generation_body(app: FastAPI) -> None:
    """Put GenerationCreate in the schema's components: its route reads JSON or multipart
    itself, so FastAPI does not see the model that its documented request body refers to."""
    from fastapi.openapi.utils import get_openapi

    from genservice.api.schemas import GenerationCreate

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            body = GenerationCreate.model_json_schema(ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(body.pop("$defs", {}))
            components["GenerationCreate"] = body
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(settings: Settings | None = None, reaper: bool = True) -> FastAPI:
    """The API app for the settings (read from the environment when not given)."""
    settings = settings or load_settings()
    settings.data_path.mkdir(parents=True, exist_ok=True)
    db = Database(settings.database)
    db.migrate()
    service = ServiceState(
        settings=settings,
        db=db,
        celery=make_celery(settings),
        assets=LocalAssetStore(settings.data_path / "assets"),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = threading.Event()
        thread = threading.Thread(
            target=reap_forever, args=(service, stop), name="reaper", daemon=True
        )
        if reaper:
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if reaper:
                thread.join(timeout=5)
            db.dispose()

    app = FastAPI(
        title="genservice",
        version="0.1.0",
        summary="Generate, validate and export CadQuery parts, scenes and Python functions.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.include_router(generations.router)
    app.include_router(sessions.router)
    app.include_router(system.router)

    @app.middleware("http")
    async def count_requests(request: Request, call_next: Any) -> Any:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        REQUESTS.labels(request.method, path, str(response.status_code)).inc()
        LATENCY.labels(request.method, path).observe(time.perf_counter() - started)
        return response

    app.add_middleware(BodyLimit, limit=settings.max_request_bytes)
    _document_generation_body(app)
    if (WEB_DIST / "index.html").is_file():
        from fastapi.staticfiles import StaticFiles

        app.mount("/", StaticFiles(directory=WEB_DIST, html=True), name="web")
    else:

        @app.get("/", include_in_schema=False)
        def index() -> HTMLResponse:
            return HTMLResponse(PLACEHOLDER_PAGE)

    return app
