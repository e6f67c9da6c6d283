"""What every route shares: the service state, the caller's key, rate limits and quotas."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from sqlalchemy import func, select

from genservice.config import Settings
from genservice.store.assets import AssetStore
from genservice.store.db import Database
from genservice.store.keys import authenticate
from genservice.store.models import TERMINAL_STATES, ApiKey, Job, Version, now


class RateLimiter:
    """A token bucket per key: `per_minute` requests a minute, bursts up to the same number.

    Kept in the API process: with several API processes each enforces the limit on its share.
    """

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str, per_minute: int) -> float:
        """0 if the request may go ahead, else the seconds until it may."""
        if per_minute <= 0:
            return 0.0
        rate = per_minute / 60.0
        stamp = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(per_minute), stamp))
            tokens = min(float(per_minute), tokens + (stamp - last) * rate)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, stamp)
                return 0.0
            self._buckets[key_id] = (tokens, stamp)
            return (1.0 - tokens) / rate


@dataclass
class ServiceState:
    """Settings, database, Celery app and limiter of one API process."""

    settings: Settings
    db: Database
    celery: Any
    assets: AssetStore
    limiter: RateLimiter = field(default_factory=RateLimiter)
    models_cache: list[dict[str, Any]] | None = None


def state(request: Request) -> ServiceState:
    """The service state of the app serving this request."""
    service: ServiceState = request.app.state.service
    return service


State = Annotated[ServiceState, Depends(state)]


def too_many(message: str, retry_after: float) -> HTTPException:
    """A 429 with Retry-After in whole seconds."""
    seconds = max(1, math.ceil(retry_after))
    return HTTPException(429, f"{message}; retry after {seconds} s", {"Retry-After": str(seconds)})


def current_key(request: Request, service: State) -> ApiKey:
    """The caller's key from `Authorization: Bearer <key>` (401 if absent or bad; 429 if over
    its rate limit)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(
            401,
            "missing API key: send 'Authorization: Bearer <key>'",
            {"WWW-Authenticate": "Bearer"},
        )
    key = authenticate(service.db, token.strip())
    if key is None:
        raise HTTPException(401, "invalid or revoked API key", {"WWW-Authenticate": "Bearer"})
    limit = key.rate_limit_per_minute
    if limit is None:
        limit = service.settings.rate_limit_per_minute
    wait = service.limiter.take(key.id, limit)
    if wait > 0:
        raise too_many(f"rate limit of {limit} requests a minute reached", wait)
    return key


Key = Annotated[ApiKey, Depends(current_key)]


def check_quota(service: ServiceState, key: ApiKey) -> None:
    """429 if the key has too many unfinished jobs or used up its daily jobs."""
    settings = service.settings
    per_day = key.jobs_per_day if key.jobs_per_day is not None else settings.jobs_per_day
    with service.db.session() as session:
        if settings.active_jobs_per_key > 0:
            active = session.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.owner_id == key.id, Job.status.not_in(TERMINAL_STATES))
            )
            if (active or 0) >= settings.active_jobs_per_key:
                raise too_many(
                    f"{active} jobs of this key are still running (limit "
                    f"{settings.active_jobs_per_key}); wait for some to finish",
                    5,
                )
        if per_day > 0:
            since = now() - 86400
            rows = session.execute(
                select(func.count(), func.min(Job.created_at)).where(
                    Job.owner_id == key.id, Job.created_at > since
                )
            ).one()
            if rows[0] >= per_day:
                raise too_many(
                    f"daily quota of {per_day} jobs used", (rows[1] or now()) + 86400 - now()
                )


def check_stands_on(
    service: ServiceState, key: ApiKey, version_id: str | None, job_id: str | None
) -> None:
    """404 unless the version or job whose request a program is judged against is the key's."""
    with service.db.session() as session:
        if version_id is not None:
            version = session.get(Version, version_id)
            if version is None or version.owner_id != key.id:
                raise HTTPException(404, f"no version {version_id}")
        if job_id is not None:
            job = session.get(Job, job_id)
            if job is None or job.owner_id != key.id or job.kind != "generation":
                raise HTTPException(404, f"no generation {job_id}")
