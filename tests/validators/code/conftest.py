"""A warm sandbox pool for the code validator's tests: no cadquery, the code guest preloaded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from validators.sandbox import Limits, SandboxPool


@pytest.fixture(scope="module")
def code_pool() -> Iterator[SandboxPool]:
    """Two warm workers that preload only the code guest."""
    with SandboxPool(
        size=2, limits=Limits(wall_s=20.0), preload=("validators.code.guest",)
    ) as pool:
        yield pool
