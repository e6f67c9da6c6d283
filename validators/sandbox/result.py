"""The outcome of one sandboxed run: data, never an exception."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """How a run ended."""

    OK = "ok"
    ERROR = "error"  # the program raised, exited early or produced nothing usable
    TIMEOUT = "timeout"  # wall-clock or CPU limit
    MEMORY = "memory"  # address-space limit
    KILLED = "killed"  # crashed, or killed for breaking a limit (file size, temp space, output)
    SANDBOX_ERROR = "sandbox_error"  # the sandbox itself failed; not the program's fault


@dataclass(frozen=True)
class SandboxResult:
    """Status, cost and output of one run; `payload` is what the runner returned when OK."""

    status: Status
    duration_s: float
    peak_memory_mb: float = 0.0
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    payload: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # {"kind", "message", "line"}
    exit_code: int | None = None
    signal: int | None = None

    @property
    def ok(self) -> bool:
        """True when the program ran to completion and the runner returned a payload."""
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_reply(cls, reply: dict[str, Any]) -> SandboxResult:
        """Build from the worker's reply message, tolerating missing fields."""
        try:
            status = Status(reply.get("status", "sandbox_error"))
        except ValueError:
            status = Status.SANDBOX_ERROR
        payload = reply.get("payload")
        error = reply.get("error")
        return cls(
            status=status,
            duration_s=float(reply.get("duration_s", 0.0)),
            peak_memory_mb=float(reply.get("peak_memory_mb", 0.0)),
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            stdout_truncated=bool(reply.get("stdout_truncated", False)),
            stderr_truncated=bool(reply.get("stderr_truncated", False)),
            payload=payload if isinstance(payload, dict) else None,
            error=error if isinstance(error, dict) else None,
            exit_code=reply.get("exit_code"),
            signal=reply.get("signal"),
        )


def sandbox_failure(message: str, duration_s: float = 0.0) -> SandboxResult:
    """A result for when the sandbox itself could not run the program."""
    return SandboxResult(
        status=Status.SANDBOX_ERROR,
        duration_s=duration_s,
        error={"kind": "sandbox", "message": message, "line": None},
    )
