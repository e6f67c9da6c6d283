"""The RL run's settings (`genservice train rl --config FILE`): one dataclass per YAML section.

Errors are ValueErrors that name the key and say how to fix it. Relative paths are taken from
the working directory (run training from the repository root).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.sft_config import _build, _positive_int, _positive_number, _splits, read_yaml

LOSS_TYPES = ("grpo", "dapo", "dr_grpo")


def _fraction(section: str, name: str, value: Any, low: float = 0.0, high: float = 1.0) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise ValueError(f"{section}.{name} must be a number in [{low}, {high}], got {value!r}")


def _known_domain(section: str, domain: Any, known: dict[str, Any]) -> None:
    if domain not in known:
        raise ValueError(f"{section}: unknown domain {domain!r}; known: {list(known)}")


def _flag(section: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{section}.{name} must be true or false, got {value!r}")


@dataclass
class RLData:
    """Which tasks train, which are held out, and how many are audited before training."""

    tasks: str
    splits: list[str] = field(default_factory=lambda: ["train"])
    domains: list[str] | None = None  # None: every domain
    families: list[str] | None = None  # None: every family
    heldout_splits: list[str] = field(default_factory=lambda: ["val"])
    heldout_tasks: int = 12  # held-out tasks scored every training.heldout_every steps (0 off)
    audit_tasks: int = 64  # tasks checked by validate-tasks before training (0 off)

    def __post_init__(self) -> None:
        if not isinstance(self.tasks, str) or not self.tasks:
            raise ValueError("data.tasks must be the path of a task JSONL file")
        self.splits = _splits("data", "splits", self.splits)
        self.heldout_splits = _splits("data", "heldout_splits", self.heldout_splits)
        if set(self.splits) & set(self.heldout_splits):
            raise ValueError("data.splits and data.heldout_splits must not share a split")
        if self.domains is not None:
            from genservice.generation.prompts import DOMAINS

            self.domains = _splits("data", "domains", self.domains)
            unknown = sorted(set(self.domains) - set(DOMAINS))
            if unknown:
                raise ValueError(f"data.domains: unknown {unknown}; choose from {list(DOMAINS)}")
        if self.families is not None:
            self.families = _splits("data", "families", self.families)
        _positive_int("data", "heldout_tasks", self.heldout_tasks, zero_ok=True)
        _positive_int("data", "audit_tasks", self.audit_tasks, zero_ok=True)


@dataclass
class RLModel:
    """The policy to start from: a local model directory (never downloaded)."""

    from_dir: str = "genservice/models/tiny"

    def __post_init__(self) -> None:
        if not isinstance(self.from_dir, str) or not self.from_dir:
            raise ValueError("model.from must be a local model directory")


@dataclass
class Rollout:
    """How each step's candidates are drawn: `group_size` per prompt, sharing its KV cache."""

    prompts_per_step: int = 4
    group_size: int = 8
    max_new_tokens: int = 600
    temperature: float = 1.0
    top_p: float = 1.0
    reward_workers: int = 2  # sandbox workers validating while the next prompt generates
    overlap: bool = True  # False: validate only once every group is generated (the baseline)
    # Two-turn repair episodes: a CAD or scene group's best failing candidate, with its
    # validator error, becomes the prompt of a second group trained in the same step.
    repair_turns: bool = False

    def __post_init__(self) -> None:
        for name in ("prompts_per_step", "reward_workers"):
            _positive_int("rollout", name, getattr(self, name))
        _positive_int("rollout", "group_size", self.group_size)
        if self.group_size < 2:
            raise ValueError("rollout.group_size must be ≥ 2: advantages compare a group's members")
        _positive_int("rollout", "max_new_tokens", self.max_new_tokens)
        _fraction("rollout", "temperature", self.temperature, 0.05, 5.0)
        _fraction("rollout", "top_p", self.top_p, 0.01, 1.0)
        _flag("rollout", "overlap", self.overlap)
        _flag("rollout", "repair_turns", self.repair_turns)


@dataclass
class Loss:
    """GRPO-family objective: grpo, dapo (token-level) or dr_grpo; clip-higher; optional KL."""

    type: str = "dapo"
    epsilon_low: float = 0.2
    epsilon_high: float = 0.28  # clip-higher: a larger upper bound keeps exploration alive
    beta: float = 0.0  # KL(policy || start model) weight; 0 = no KL term
    log_kl: bool = True  # measure the KL to the start model even when beta is 0 (one forward)
    overlong_buffer: int = 100  # soft penalty over the last N tokens before max_new_tokens
    overlong_penalty: float = 1.0  # reward lost at max_new_tokens (linear over the buffer)
    mask_truncated: bool = False  # drop completions cut at max_new_tokens from the loss
    dynamic_sampling: bool = True  # skip groups whose rewards are all equal (no signal)
    max_resample: int = 2  # extra rounds of prompts drawn to replace skipped groups
    # Supervised anchor (as in PPO-ptx): each update also lowers the next-token loss of
    # `sft_anchor_rows` reference programs drawn evenly over every training family, weighted by
    # `sft_anchor`. The curriculum draws a few families often; without an anchor, what the
    # policy learns there can drift the shared weights away from families it rarely draws.
    sft_anchor: float = 0.0
    sft_anchor_rows: int = 4

    def __post_init__(self) -> None:
        if self.type not in LOSS_TYPES:
            raise ValueError(f"loss.type must be one of {list(LOSS_TYPES)}, got {self.type!r}")
        _fraction("loss", "epsilon_low", self.epsilon_low, 0.0, 1.0)
        _fraction("loss", "epsilon_high", self.epsilon_high, 0.0, 10.0)
        _fraction("loss", "beta", self.beta, 0.0, 10.0)
        _positive_int("loss", "overlong_buffer", self.overlong_buffer, zero_ok=True)
        _fraction("loss", "overlong_penalty", self.overlong_penalty, 0.0, 10.0)
        _flag("loss", "log_kl", self.log_kl)
        _flag("loss", "mask_truncated", self.mask_truncated)
        _flag("loss", "dynamic_sampling", self.dynamic_sampling)
        _positive_int("loss", "max_resample", self.max_resample, zero_ok=True)
        _fraction("loss", "sft_anchor", self.sft_anchor, 0.0, 10.0)
        _positive_int("loss", "sft_anchor_rows", self.sft_anchor_rows)


@dataclass
class RewardShaping:
    """How validator checks become the RL reward (defaults: the Report's composite reward)."""

    # Per-domain overrides of validators/reward_weights.yaml, e.g. {cad: {spec: 4.0}}.
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    # Checks scored 1 when passed and 0 otherwise instead of their partial score: a spec missed
    # by 3 % still scores 0.97 partially, which leaves little for the policy to learn from.
    pass_fail: list[str] = field(default_factory=list)
    # Domains whose reward is the floor unless every required check passed (the Report is
    # valid): success as `genservice eval` counts it. Code keeps partial credit for tests.
    strict: list[str] = field(default_factory=list)
    # In a strict domain, the fraction of its composite reward a sound program that missed a
    # required check keeps (0: the floor, like a program that does not run). A little credit
    # keeps "it builds" worth more than "it crashes" while success still dominates. One number
    # for every strict domain, or per domain ({cad: 0.15}; a domain left out gets 0): CAD and
    # scenes answered differently to the same value.
    near_miss: float | dict[str, float] = 0.0

    def __post_init__(self) -> None:
        from validators.reward import load_weights

        known = load_weights()["domains"]
        if isinstance(self.near_miss, dict):
            for domain, share in self.near_miss.items():
                _known_domain("reward.near_miss", domain, known)
                _fraction("reward.near_miss", str(domain), share)
        else:
            _fraction("reward", "near_miss", self.near_miss)
        if not isinstance(self.weights, dict):
            raise ValueError("reward.weights must map a domain to {check: weight}")
        for domain, table in self.weights.items():
            _known_domain("reward.weights", domain, known)
            if not isinstance(table, dict) or not table:
                raise ValueError(f"reward.weights.{domain} must map check names to weights")
            for name, weight in table.items():
                if name not in known[domain]:
                    raise ValueError(
                        f"reward.weights.{domain}: unknown check {name!r}; "
                        f"known: {sorted(known[domain])}"
                    )
                _fraction(f"reward.weights.{domain}", str(name), weight, 0.0, 100.0)
        checks = {name for table in known.values() for name in table}
        if not isinstance(self.pass_fail, list) or not all(
            isinstance(name, str) for name in self.pass_fail
        ):
            raise ValueError("reward.pass_fail must be a list of check names, e.g. [spec]")
        if not isinstance(self.strict, list) or not set(self.strict) <= set(known):
            raise ValueError(f"reward.strict must be a list of domains out of {list(known)}")
        unknown = sorted(set(self.pass_fail) - checks)
        if unknown:
            raise ValueError(f"reward.pass_fail: unknown checks {unknown}; known: {sorted(checks)}")

    def domain_weights(self, domain: str) -> dict[str, float]:
        """The domain's check weights with this run's overrides applied."""
        from validators.reward import load_weights

        return {**load_weights()["domains"][domain], **self.weights.get(domain, {})}

    def near_miss_for(self, domain: str) -> float:
        """The near-miss share of the domain (0 where a per-domain table leaves it out)."""
        if isinstance(self.near_miss, dict):
            return float(self.near_miss.get(domain, 0.0))
        return float(self.near_miss)


@dataclass
class Curriculum:
    """Family weights from reward progress: fast vs slow moving averages of each family."""

    enabled: bool = True
    min_share: float = 0.3  # this share of draws is spread evenly: no family starves
    fast: float = 0.3  # smoothing of the fast average (per update of the family)
    slow: float = 0.05
    temperature: float = 0.1  # softmax temperature over progress + headroom + learnability
    headroom: float = 0.5  # weight of (1 - reward): unsolved families get more draws
    learnability: float = 0.0  # weight of the reward spread within groups: where signal is

    def __post_init__(self) -> None:
        _flag("curriculum", "enabled", self.enabled)
        _fraction("curriculum", "min_share", self.min_share)
        _fraction("curriculum", "fast", self.fast, 0.001, 1.0)
        _fraction("curriculum", "slow", self.slow, 0.001, 1.0)
        if self.slow > self.fast:
            raise ValueError("curriculum.slow must not exceed curriculum.fast")
        _fraction("curriculum", "temperature", self.temperature, 0.001, 100.0)
        _fraction("curriculum", "headroom", self.headroom, 0.0, 10.0)
        _fraction("curriculum", "learnability", self.learnability, 0.0, 10.0)


@dataclass
class RLTraining:
    """Optimiser, budget, checkpoints and logging."""

    lr: float = 5e-6
    warmup_steps: int = 5
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    micro_batch: int = 8  # sequences per forward/backward
    updates_per_rollout: int = 1  # optimiser steps per batch of rollouts (minibatches)
    max_steps: int = 1000
    max_minutes: float | None = 60.0
    seed: int = 0
    save_every: int = 10
    keep_checkpoints: int = 2
    heldout_every: int = 20
    num_threads: int | None = None  # torch threads; None: torch's default

    def __post_init__(self) -> None:
        _positive_number("training", "lr", self.lr)
        _positive_int("training", "warmup_steps", self.warmup_steps, zero_ok=True)
        _fraction("training", "weight_decay", self.weight_decay, 0.0, 1.0)
        _fraction("training", "grad_clip", self.grad_clip, 0.0, 1e6)
        for name in ("micro_batch", "updates_per_rollout", "max_steps", "save_every"):
            _positive_int("training", name, getattr(self, name))
        _positive_int("training", "keep_checkpoints", self.keep_checkpoints)
        _positive_int("training", "heldout_every", self.heldout_every, zero_ok=True)
        _positive_int("training", "seed", self.seed, zero_ok=True)
        if self.max_minutes is not None:
            _positive_number("training", "max_minutes", self.max_minutes)
        if self.num_threads is not None:
            _positive_int("training", "num_threads", self.num_threads)


@dataclass
class RLConfig:
    """A whole RL run."""

    data: RLData
    model: RLModel = field(default_factory=RLModel)
    rollout: Rollout = field(default_factory=Rollout)
    loss: Loss = field(default_factory=Loss)
    reward: RewardShaping = field(default_factory=RewardShaping)
    curriculum: Curriculum = field(default_factory=Curriculum)
    training: RLTraining = field(default_factory=RLTraining)
    deepspeed: str = "training/configs/deepspeed/cpu.json"
    output_dir: str = "var/models/tiny-rl"
    run_dir: str = "var/rl/tiny"  # checkpoints, metrics.jsonl, tensorboard/, report.md

    def __post_init__(self) -> None:
        sections = (
            ("data", RLData),
            ("model", RLModel),
            ("rollout", Rollout),
            ("loss", Loss),
            ("reward", RewardShaping),
            ("curriculum", Curriculum),
            ("training", RLTraining),
        )
        for name, cls in sections:
            if isinstance(getattr(self, name), dict):
                setattr(self, name, _build(cls, getattr(self, name), name))
        for name in ("deepspeed", "output_dir", "run_dir"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a path")
        sequences = self.rollout.prompts_per_step * self.rollout.group_size
        chunk = self.training.micro_batch * self.training.updates_per_rollout
        if sequences % chunk:
            raise ValueError(
                f"rollout.prompts_per_step × rollout.group_size ({sequences}) must be a multiple "
                f"of training.micro_batch × training.updates_per_rollout ({chunk})"
            )

    def check_files(self) -> None:
        """Raise ValueError when the task file, the model or the DeepSpeed config is missing."""
        if not Path(self.data.tasks).is_file():
            raise ValueError(
                f"data.tasks: no such file {self.data.tasks} (build it with `genservice corpus "
                "build`, or fix the path; relative paths start at the working directory)"
            )
        if not (Path(self.model.from_dir) / "config.json").is_file():
            raise ValueError(f"model.from: {self.model.from_dir} is not a model directory")
        if not Path(self.deepspeed).is_file():
            raise ValueError(f"deepspeed: no such DeepSpeed config file {self.deepspeed}")

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (YAML keys)."""
        raw = dataclasses.asdict(self)
        raw["model"]["from"] = raw["model"].pop("from_dir")
        return raw

    @classmethod
    def from_dict(cls, raw: Any) -> RLConfig:
        """Build from parsed YAML, rejecting unknown keys."""
        return _build(cls, raw, "config")

    @classmethod
    def from_yaml(cls, path: str | Path) -> RLConfig:
        """Load and check a YAML config file."""
        return cls.from_dict(read_yaml(path))
