"""The service's tables: API keys, jobs, sessions with their version tree, and asset files.

Times are UNIX seconds (float) so that SQLite and PostgreSQL compare them the same way.
Ids are short random strings with a type prefix (job_…, ses_…, ver_…, ast_…, key_…).
"""

from __future__ import annotations

import secrets
import time
from typing import Any, ClassVar

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

JOB_STATES = ("queued", "generating", "validating", "exporting", "done", "failed", "cancelled")
TERMINAL_STATES = ("done", "failed", "cancelled")
JOB_KINDS = ("generation", "edit", "validate", "export")


def new_id(prefix: str) -> str:
    """A new random id such as job_3Jk9…; 96 random bits."""
    return f"{prefix}_{secrets.token_urlsafe(12).replace('-', 'x').replace('_', 'y')}"


def now() -> float:
    """The current time as UNIX seconds."""
    return time.time()


class Base(DeclarativeBase):
    """Declarative base of every table."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class ApiKey(Base):
    """An API key: only its sha256 is stored; the key itself is shown once, at creation."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[float] = mapped_column(Float, default=now)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # None: the service-wide setting; 0: unlimited
    rate_limit_per_minute: Mapped[int | None] = mapped_column(Integer, nullable=True)
    jobs_per_day: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Job(Base):
    """One piece of queued work and everything known about its progress and outcome."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id"))
    kind: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    domain: Mapped[str] = mapped_column(String(8))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The output of each finished stage, so that a redelivered task resumes, not repeats.
    candidates: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    stage_done: Mapped[int] = mapped_column(Integer, default=0)
    stage_total: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str] = mapped_column(Text, default="")
    session_id: Mapped[str | None] = mapped_column(ForeignKey("sessions.id"), nullable=True)
    parent_version_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    version_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # Delivery bookkeeping: every claim by a worker counts; the lease says the worker is alive.
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    dispatched_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    finished_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float, default=now)
    updated_at: Mapped[float] = mapped_column(Float, default=now)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_jobs_owner_created", "owner_id", "created_at"),
        Index("ix_jobs_status", "status"),
    )


class Session(Base):
    """A design session: a tree of versions, each the child of the one it was derived from."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id"))
    name: Mapped[str] = mapped_column(String(200), default="")
    domain: Mapped[str] = mapped_column(String(8), default="cad")
    head_version_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[float] = mapped_column(Float, default=now)
    updated_at: Mapped[float] = mapped_column(Float, default=now)


class Version(Base):
    """One accepted program with its parameters, Report, assets and parent."""

    __tablename__ = "versions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"))
    owner_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id"))
    parent_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    number: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[str] = mapped_column(String(32), unique=True)  # one version per job, ever
    source: Mapped[str] = mapped_column(String(16))  # generation | edit | manual
    domain: Mapped[str] = mapped_column(String(8))
    prompt: Mapped[str] = mapped_column(Text, default="")
    program: Mapped[str] = mapped_column(Text)
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    record: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # provenance record
    created_at: Mapped[float] = mapped_column(Float, default=now)

    __table_args__ = (Index("ix_versions_session", "session_id", "number"),)


class Asset(Base):
    """An exported file of a version, in one format; the path is relative to the asset store."""

    __tablename__ = "assets"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    version_id: Mapped[str] = mapped_column(ForeignKey("versions.id"))
    owner_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id"))
    format: Mapped[str] = mapped_column(String(16))
    path: Mapped[str] = mapped_column(String(500))
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    media_type: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[float] = mapped_column(Float, default=now)

    __table_args__ = (Index("ux_assets_version_format", "version_id", "format", unique=True),)
