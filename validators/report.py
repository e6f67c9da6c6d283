"""The one result type of every validator: a frozen, JSON-serialisable Report."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Check:
    """One named check: a score in [0, 1], whether it passed, and what was measured."""

    score: float
    passed: bool
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        score = float(self.score) if math.isfinite(float(self.score)) else 0.0
        object.__setattr__(self, "score", min(1.0, max(0.0, score)))

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"score": self.score, "passed": self.passed, "detail": _jsonable(self.detail)}


@dataclass(frozen=True)
class ErrorInfo:
    """Why a program is invalid: a kind a program can branch on, a message a person can act on."""

    kind: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"kind": self.kind, "message": self.message, "line": self.line}


@dataclass(frozen=True)
class Report:
    """Verdict on one program. A check that does not apply is absent, not 0."""

    valid: bool
    reward: float
    checks: MappingProxyType[str, Check]
    error: ErrorInfo | None = None
    metrics: MappingProxyType[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    parameters: MappingProxyType[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def build(
        cls,
        valid: bool,
        reward: float,
        checks: dict[str, Check],
        error: ErrorInfo | None = None,
        metrics: dict[str, Any] | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> Report:
        """Make a Report from plain dicts (they are copied and frozen)."""
        return cls(
            valid=valid,
            reward=min(1.0, max(0.0, reward)),
            checks=MappingProxyType(dict(checks)),
            error=error,
            metrics=MappingProxyType(dict(metrics or {})),
            parameters=MappingProxyType(dict(parameters or {})),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (non-finite numbers become null)."""
        return {
            "valid": self.valid,
            "reward": self.reward,
            "checks": {name: check.to_dict() for name, check in self.checks.items()},
            "error": self.error.to_dict() if self.error else None,
            "metrics": _jsonable(dict(self.metrics)),
            "parameters": _jsonable(dict(self.parameters)),
        }

    def to_json(self, indent: int | None = None) -> str:
        """The Report as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Inverse of to_dict."""
        error = data.get("error")
        return cls.build(
            valid=bool(data["valid"]),
            reward=float(data["reward"]),
            checks={
                name: Check(c["score"], bool(c["passed"]), dict(c.get("detail") or {}))
                for name, c in data.get("checks", {}).items()
            },
            error=ErrorInfo(error["kind"], error["message"], error.get("line")) if error else None,
            metrics=data.get("metrics"),
            parameters=data.get("parameters"),
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | MappingProxyType):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _jsonable(value.tolist())
    return str(value)
