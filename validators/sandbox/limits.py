"""Resource limits of one sandboxed run."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Limits:
    """What one run may use; every field is checked so that a typo fails early and clearly."""

    wall_s: float = 10.0
    cpu_s: float | None = None  # defaults to wall_s: a run cannot use more CPU than wall time
    memory_mb: int = 1024  # address space the program may add on top of the warm interpreter
    max_processes: int = 32
    max_file_mb: int = 64
    max_open_files: int = 256
    tmp_mb: int = 256  # total size of the private temporary directory
    output_bytes: int = 64 * 1024  # per stream (stdout, stderr); the rest is dropped
    payload_mb: int = 128  # structured result sent back by the runner
    # The measuring phase of a CAD run (validators/cad/measurer.py): the largest hand-over it
    # reads, and how long it may take to read and measure it (after wall_s; defaults to wall_s).
    handover_mb: int = 64
    measure_s: float | None = None

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value is None:
                continue
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"Limits.{name} must be a number, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"Limits.{name} must be a finite number > 0, got {value!r}")

    @property
    def cpu_seconds(self) -> float:
        """CPU-time limit actually applied."""
        return self.cpu_s if self.cpu_s is not None else self.wall_s

    @property
    def measure_seconds(self) -> float:
        """Wall-clock limit of the measuring phase actually applied."""
        return self.measure_s if self.measure_s is not None else self.wall_s

    def with_(self, **changes: Any) -> Limits:
        """A copy with some fields changed (and checked)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The limits as sent to the sandbox."""
        data = asdict(self)
        data["cpu_s"] = self.cpu_seconds
        data["measure_s"] = self.measure_seconds
        return data
