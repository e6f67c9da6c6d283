"""The data RL's trainer (training.rl) and its monitor (training.rl_monitor) both handle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Group:
    """One task's candidates: token ids, programs, judgements and advantages."""

    task: dict[str, Any]
    prompt_ids: list[int]
    completions: list[list[int]]  # token ids (the end token included when the reply stopped)
    programs: list[str]
    finish: list[str]
    judged: list[Any] = field(default_factory=list)
    advantages: list[float] = field(default_factory=list)
    train: bool = True  # False: a filler group whose loss is masked out

    @property
    def rewards(self) -> list[float]:
        """The candidates' rewards (penalties included)."""
        return [j.reward for j in self.judged]
