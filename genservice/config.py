"""Service settings: one pydantic-settings class, environment prefix GENSERVICE_."""

from __future__ import annotations

import os

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting can be given as an environment variable, e.g. GENSERVICE_SANDBOX_WORKERS=4."""

    model_config = SettingsConfigDict(env_prefix="GENSERVICE_", extra="ignore")

    sandbox_workers: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1, le=256)
    sandbox_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    sandbox_memory_mb: int = Field(default=1024, ge=64, le=65536)
    unsafe_sandbox: bool = False  # run programs WITHOUT isolation; local debugging only

    @field_validator("sandbox_timeout_s")
    @classmethod
    def _finite(cls, value: float) -> float:
        if value != value:  # NaN
            raise ValueError("sandbox_timeout_s must be a number")
        return value


def load_settings() -> Settings:
    """Settings from the environment; raises ValueError with what to fix."""
    try:
        return Settings()
    except Exception as exc:  # pydantic's ValidationError: report it as configuration error
        raise ValueError(f"invalid GENSERVICE_ setting: {exc}") from exc
