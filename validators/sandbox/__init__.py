"""Isolated execution of untrusted programs: bubblewrap + rlimits, a warm pool, a one-shot path."""

from validators.sandbox.isolation import Isolation, SandboxUnavailable
from validators.sandbox.limits import Limits
from validators.sandbox.pool import OneShot, SandboxPool, run_once
from validators.sandbox.result import SandboxResult, Status

__all__ = [
    "Isolation",
    "Limits",
    "OneShot",
    "SandboxPool",
    "SandboxResult",
    "SandboxUnavailable",
    "Status",
    "run_once",
]
