"""Seeded draws of a task family, shared by the corpus family tests."""

from __future__ import annotations

import random

from training.corpus.base import Family, Sample


def draws(family: Family, n: int) -> list[Sample]:
    """Samples of seeds 0 .. n-1."""
    return [family.sample(random.Random(seed)) for seed in range(n)]


def spread(family: Family, pool_size: int, keep: int) -> list[Sample]:
    """Seed 0 and draws holding the smallest and largest value of each parameter, at most keep."""
    samples = draws(family, pool_size)
    chosen = [0]
    for name in samples[0].params:
        values = [s.params[name] for s in samples]
        chosen += [values.index(min(values)), values.index(max(values))]
    return [samples[i] for i in dict.fromkeys(chosen)][:keep]
