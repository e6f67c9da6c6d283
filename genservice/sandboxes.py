"""Sandbox limits, isolation and warm pools as the settings ask: what the command line, the task
audit and the trainers share (errors are ValueError or SandboxUnavailable, never exits)."""

from __future__ import annotations

import math
from typing import Any


def sandbox_limits(
    timeout: float | None = None, workers: int | None = None
) -> tuple[Any, int, Any]:
    """Limits, worker count and isolation from the settings and optional overrides."""
    from genservice.config import load_settings
    from validators.sandbox import Isolation, Limits

    settings = load_settings()
    timeout = timeout if timeout is not None else settings.sandbox_timeout_s
    if not (math.isfinite(timeout) and 0 < timeout <= 3600):
        raise ValueError("--timeout must be a number of seconds in (0, 3600]")
    if workers is not None and not 1 <= workers <= 256:
        raise ValueError("--workers must be between 1 and 256")
    limits = Limits(wall_s=timeout, memory_mb=settings.sandbox_memory_mb)
    isolation = Isolation("none" if settings.unsafe_sandbox else "bwrap")
    return limits, workers or settings.sandbox_workers, isolation


def open_pool(size: int, limits: Any, isolation: Any, domain: str) -> Any:
    """A warm pool for the domain (cadquery preloaded for cad and scene)."""
    from validators.sandbox import SandboxPool
    from validators.sandbox.pool import DEFAULT_PRELOAD

    preload = ("validators.code.guest",) if domain == "code" else DEFAULT_PRELOAD
    return SandboxPool(size=size, limits=limits, isolation=isolation, preload=preload)
