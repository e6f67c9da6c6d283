"""Shared fixtures: one warm sandbox pool for the whole session, and sample scripts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from validators.sandbox import Limits, SandboxPool

SAMPLES = Path(__file__).parent / "validators" / "cad_samples"


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    """Two warm workers with short limits, shared by every test."""
    with SandboxPool(size=2, limits=Limits(wall_s=5.0, memory_mb=768)) as shared:
        yield shared


def sample_scripts() -> list[Path]:
    """The valid sample scripts shipped with the tests."""
    return sorted(p for p in SAMPLES.glob("*.py") if not p.name.startswith("_"))


def expectation(path: Path) -> dict:
    """The `# expect: {...}` header of a sample script."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path} has no expect header"
    return json.loads(first.removeprefix("# expect: "))
