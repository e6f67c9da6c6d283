"""Composite reward: a weighted mean of check scores, with a fixed floor for invalid programs."""

from __future__ import annotations

from collections.abc import Mapping

from validators.report import Check

# Weights per check; checks absent from a Report do not count (they did not apply).
DEFAULT_WEIGHTS: dict[str, float] = {
    "executes": 1.0,
    "solid": 1.0,
    "brep_valid": 1.0,
    "watertight": 1.0,
    "volume": 0.5,
    "bbox": 0.5,
    "spec": 2.0,
    "similarity": 3.0,
}
INVALID_REWARD = 0.0  # no geometric score can outweigh failing to produce a valid program


def composite_reward(
    checks: Mapping[str, Check], valid: bool, weights: Mapping[str, float] | None = None
) -> float:
    """Reward in [0, 1] for a set of checks."""
    if not valid:
        return INVALID_REWARD
    weights = weights or DEFAULT_WEIGHTS
    total = sum(weights.get(name, 0.0) for name in checks)
    if total <= 0:
        return 1.0
    return sum(weights.get(name, 0.0) * check.score for name, check in checks.items()) / total
