"""Service settings: one pydantic-settings class, environment prefix GENSERVICE_.

The defaults are the embedded shape (SQLite, a broker in a folder, everything under one data
directory); pointing GENSERVICE_DATABASE_URL at PostgreSQL and GENSERVICE_BROKER_URL at Redis or
RabbitMQ is all it takes to run distributed.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

EMBEDDED_BROKER = "filesystem://"


class Settings(BaseSettings):
    """Every setting can be given as an environment variable, e.g. GENSERVICE_SANDBOX_WORKERS=4."""

    model_config = SettingsConfigDict(env_prefix="GENSERVICE_", extra="ignore")

    # Sandbox
    sandbox_workers: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1, le=256)
    sandbox_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    sandbox_memory_mb: int = Field(default=1024, ge=64, le=65536)
    unsafe_sandbox: bool = False  # run programs WITHOUT isolation; local debugging only

    # Where state lives, and how the processes find each other
    data_dir: Path = Path("var/genservice")
    database_url: str | None = None  # default: SQLite in data_dir
    broker_url: str = EMBEDDED_BROKER  # or redis://…, amqp://…
    queue_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_-]*$", max_length=40)
    model_dir: Path | None = None  # default: the tiny model shipped in the package
    device: str = "auto"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)

    # What one request may ask for (422 beyond these)
    max_prompt_chars: int = Field(default=4000, ge=1)
    max_program_chars: int = Field(default=100_000, ge=1)
    max_images: int = Field(default=4, ge=0)
    max_image_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    max_request_bytes: int = Field(default=24 * 1024 * 1024, ge=1)
    max_n: int = Field(default=16, ge=1, le=256)
    max_new_tokens: int = Field(default=1024, ge=1, le=32768)

    # Per-key limits (a key may override them; 0 = unlimited)
    rate_limit_per_minute: int = Field(default=600, ge=0)
    jobs_per_day: int = Field(default=2000, ge=0)
    active_jobs_per_key: int = Field(default=32, ge=0)

    # Jobs
    lease_s: float = Field(default=30.0, gt=0)  # a worker renews its lease every lease_s / 3
    max_attempts: int = Field(default=3, ge=1, le=100)  # deliveries before a job fails
    soft_time_limit_s: float = Field(default=600.0, gt=0)
    hard_time_limit_s: float = Field(default=900.0, gt=0)
    # Redis re-delivers unacknowledged messages after this; it must exceed the longest job.
    visibility_timeout_s: int = Field(default=7200, ge=60)
    unclaimed_redispatch_s: float = Field(default=900.0, gt=0)
    reaper_interval_s: float = Field(default=2.0, gt=0)
    wait_s: float = Field(default=120.0, gt=0)  # synchronous endpoints: longest wait for a worker

    @field_validator("sandbox_timeout_s")
    @classmethod
    def _finite(cls, value: float) -> float:
        if value != value:  # NaN
            raise ValueError("sandbox_timeout_s must be a number")
        return value

    @field_validator("hard_time_limit_s")
    @classmethod
    def _hard_after_soft(cls, value: float, info: object) -> float:
        soft = getattr(info, "data", {}).get("soft_time_limit_s")
        if soft is not None and value <= soft:
            raise ValueError("hard_time_limit_s must be greater than soft_time_limit_s")
        return value

    @property
    def data_path(self) -> Path:
        """The data directory, absolute."""
        return self.data_dir.expanduser().resolve()

    @property
    def database(self) -> str:
        """The SQLAlchemy database URL (SQLite in the data directory unless set)."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_path / 'genservice.db'}"

    @property
    def embedded_broker(self) -> bool:
        """Whether the broker is the serverless one in the data directory."""
        return self.broker_url.startswith("filesystem")

    def queue(self, name: str) -> str:
        """The broker queue name for a logical queue (generate, validate, export)."""
        return f"{self.queue_prefix}{name}"


def load_settings() -> Settings:
    """Settings from the environment; raises ValueError with what to fix."""
    try:
        return Settings()
    except Exception as exc:  # pydantic's ValidationError: report it as configuration error
        raise ValueError(f"invalid GENSERVICE_ setting: {exc}") from exc
