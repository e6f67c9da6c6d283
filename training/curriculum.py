"""Which task families RL draws from: weights that follow each family's reward progress.

Every family keeps two moving averages of its groups' mean reward, a fast and a slow one. Their
gap is learning progress (positive while a family improves, negative while it regresses; both
earn draws), and 1 - fast is headroom (unsolved families earn draws). A third average, of the
spread of rewards within a group (mean absolute deviation), is learnability: group-relative
advantages are zero where every candidate scores alike, so a family the model always or never
solves teaches nothing, however much headroom it has. A softmax over
|progress| + headroom × (1 - fast) + learnability × spread shares out 1 - min_share of the
draws; min_share is spread evenly, so no family ever starves. A family is judged on its own
averages, so a gain in one cannot hide a regression in another: `regressions()` names the
families whose fast average has fallen below their slow one.

Draws come from the sampler's own random.Random, whose state is part of `state_dict`: a resumed
run draws the same tasks as an uninterrupted one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FamilyStats:
    """A family's reward averages and how many groups updated them."""

    fast: float | None = None
    slow: float | None = None
    updates: int = 0
    spread: float | None = None  # fast average of the groups' mean absolute deviation

    @property
    def progress(self) -> float:
        """fast - slow: above 0 while improving, below 0 while regressing."""
        if self.fast is None or self.slow is None:
            return 0.0
        return self.fast - self.slow


@dataclass
class CurriculumSampler:
    """Draw task indices by family with adaptive weights (or uniformly over families)."""

    families: Mapping[str, Sequence[int]]  # family -> indices of its tasks
    seed: int = 0
    enabled: bool = True
    min_share: float = 0.3
    fast: float = 0.3
    slow: float = 0.05
    temperature: float = 0.1
    headroom: float = 0.5
    learnability: float = 0.0
    unseen_spread: float = 0.25  # a family not drawn yet counts as this learnable (try it)
    stats: dict[str, FamilyStats] = field(default_factory=dict)

    def __post_init__(self) -> None:
        empty = sorted(name for name, tasks in self.families.items() if not tasks)
        if not self.families or empty:
            raise ValueError(f"every family needs tasks to draw from (empty: {empty or 'all'})")
        self.names = sorted(self.families)
        for name in self.names:
            self.stats.setdefault(name, FamilyStats())
        self._rng = random.Random(self.seed)

    def weights(self) -> dict[str, float]:
        """Each family's share of the next draws (they sum to 1)."""
        count = len(self.names)
        if not self.enabled:
            return {name: 1.0 / count for name in self.names}
        scores = []
        for name in self.names:
            stats = self.stats[name]
            headroom = 1.0 - (stats.fast if stats.fast is not None else 0.0)
            spread = stats.spread if stats.spread is not None else self.unseen_spread
            score = abs(stats.progress) + self.headroom * headroom + self.learnability * spread
            scores.append(score / self.temperature)
        top = max(scores)
        exps = [math.exp(score - top) for score in scores]
        total = sum(exps)
        return {
            name: self.min_share / count + (1.0 - self.min_share) * value / total
            for name, value in zip(self.names, exps, strict=True)
        }

    def draw(self, count: int) -> list[int]:
        """`count` task indices: a family by weight, then a task of it uniformly."""
        weights = self.weights()
        shares = [weights[name] for name in self.names]
        picks = self._rng.choices(self.names, weights=shares, k=count)
        return [self._rng.choice(list(self.families[name])) for name in picks]

    def update(self, family: str, rewards: Sequence[float]) -> None:
        """Fold one group's rewards into its family's averages."""
        if family not in self.stats or not rewards:
            return
        mean = sum(rewards) / len(rewards)
        spread = sum(abs(r - mean) for r in rewards) / len(rewards)
        stats = self.stats[family]
        stats.fast = mean if stats.fast is None else stats.fast + self.fast * (mean - stats.fast)
        stats.slow = mean if stats.slow is None else stats.slow + self.slow * (mean - stats.slow)
        stats.spread = (
            spread if stats.spread is None else stats.spread + self.fast * (spread - stats.spread)
        )
        stats.updates += 1

    def regressions(self, margin: float = 0.1, min_updates: int = 8) -> list[str]:
        """Families whose recent reward fell below their long-run average by `margin`."""
        return [
            name
            for name in self.names
            if self.stats[name].updates >= min_updates and self.stats[name].progress < -margin
        ]

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue drawing exactly where this sampler is."""
        return {
            "rng": self._rng.getstate(),
            "stats": {
                name: [stats.fast, stats.slow, stats.updates, stats.spread]
                for name, stats in self.stats.items()
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict` (families absent from it start fresh)."""
        version, internal, gauss = state["rng"]
        self._rng.setstate((version, tuple(internal), gauss))
        for name, (fast, slow, updates, *spread) in state["stats"].items():
            if name in self.stats:
                self.stats[name] = FamilyStats(fast, slow, int(updates), *spread)
