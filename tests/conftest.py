"""Shared fixtures: one warm sandbox pool for the whole session, and sample scripts."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from validators.sandbox import Limits, SandboxPool

SAMPLES = Path(__file__).parent / "validators" / "cad_samples"
WORKER_TMP_PREFIX = "genservice-tests-"
_PRIVATE_TMP = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, give each worker (and what it starts) its own temporary folder.

    The hostile-program tests compare /tmp before and after a run; another worker's files
    appearing there meanwhile must not read as a leak.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        private = Path(tempfile.gettempdir()) / f"{WORKER_TMP_PREFIX}{worker}-{os.getpid()}"
        private.mkdir(exist_ok=True)
        os.environ["TMPDIR"] = str(private)
        tempfile.tempdir = None  # recomputed from TMPDIR on next use
        config.stash[_PRIVATE_TMP] = private


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the worker's temporary folder."""
    private = config.stash.get(_PRIVATE_TMP, None)
    if private is not None:
        shutil.rmtree(private, ignore_errors=True)


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
