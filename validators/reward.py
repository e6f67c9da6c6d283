"""Composite reward: per-domain weighted mean of check scores, with a floor for invalid programs.

The weights ship in reward_weights.yaml next to this file; a different file or dict can be given.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from validators.report import Check

WEIGHTS_FILE = Path(__file__).with_name("reward_weights.yaml")
DOMAINS = ("cad", "scene", "code")


def load_weights(path: Path | str | None = None) -> dict[str, Any]:
    """The weights file as {"invalid_floor": float, "domains": {domain: {check: weight}}}."""
    return _load(str(path or WEIGHTS_FILE))


@functools.cache
def _load(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read reward weights {path}: {exc}") from exc
    return check_weights(data, path)


def check_weights(data: Any, source: str = "weights") -> dict[str, Any]:
    """Validate a weights mapping; raise ValueError saying what to fix."""
    if not isinstance(data, dict) or not isinstance(data.get("domains"), dict):
        raise ValueError(f"{source}: expected a mapping with a 'domains' mapping")
    floor = data.get("invalid_floor", 0.0)
    if not isinstance(floor, int | float) or not 0 <= floor <= 1:
        raise ValueError(f"{source}: invalid_floor must be a number in [0, 1]")
    for domain, weights in data["domains"].items():
        if not isinstance(weights, dict) or not weights:
            raise ValueError(f"{source}: domain {domain!r} needs a mapping of check weights")
        for name, weight in weights.items():
            if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
                raise ValueError(f"{source}: weight of {domain}.{name} must be a number >= 0")
    return {"invalid_floor": float(floor), "domains": data["domains"]}


# Kept for callers that want one domain's weights directly.
DEFAULT_WEIGHTS: Mapping[str, float] = load_weights()["domains"]["cad"]
INVALID_REWARD: float = load_weights()["invalid_floor"]


def composite_reward(
    checks: Mapping[str, Check],
    valid: bool,
    weights: Mapping[str, float] | None = None,
    *,
    domain: str = "cad",
    table: Mapping[str, Any] | None = None,
) -> float:
    """Reward in [0, 1]: the floor when not valid, else the weighted mean of the present checks."""
    table = table or load_weights()
    if not valid:
        return float(table["invalid_floor"])
    if weights is None:
        if domain not in table["domains"]:
            raise ValueError(f"unknown domain {domain!r}; known: {sorted(table['domains'])}")
        weights = table["domains"][domain]
    total = sum(weights.get(name, 0.0) for name in checks)
    if total <= 0:
        return 1.0
    return sum(weights.get(name, 0.0) * check.score for name, check in checks.items()) / total
