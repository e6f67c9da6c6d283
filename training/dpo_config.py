"""The DPO run's settings (`genservice train dpo --config FILE`): one dataclass per YAML section.

Errors are ValueErrors that name the key and say how to fix it. Relative paths are taken from
the working directory (run training from the repository root). The checks and the `model`
section are the RL config's (`training/rl_config.py`), so the two runs read alike.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.rl_config import RLModel, _fraction
from training.sft_config import _build, _positive_int, _positive_number, _splits, read_yaml

# What the pairs depend on: a resumed run must not mix pairs sampled under other settings.
PAIR_SECTIONS = ("data", "model", "sampling")


@dataclass
class DPOData:
    """Which tasks are sampled for preference pairs."""

    tasks: str
    splits: list[str] = field(default_factory=lambda: ["train"])
    domains: list[str] | None = None  # None: every domain
    max_tasks: int | None = 256  # tasks sampled (a seeded draw); None: every task

    def __post_init__(self) -> None:
        if not isinstance(self.tasks, str) or not self.tasks:
            raise ValueError("data.tasks must be the path of a task JSONL file")
        self.splits = _splits("data", "splits", self.splits)
        if self.domains is not None:
            from genservice.generation.prompts import DOMAINS

            self.domains = _splits("data", "domains", self.domains)
            unknown = sorted(set(self.domains) - set(DOMAINS))
            if unknown:
                raise ValueError(f"data.domains: unknown {unknown}; choose from {list(DOMAINS)}")
        if self.max_tasks is not None:
            _positive_int("data", "max_tasks", self.max_tasks)


@dataclass
class DPOSampling:
    """How the candidates of a task are drawn from the start model and turned into a pair."""

    n: int = 8  # candidates per task; the best and the worst make the pair
    max_new_tokens: int = 600
    temperature: float = 1.0
    top_p: float = 1.0
    workers: int = 2  # sandbox workers judging while the next task generates
    min_margin: float = 0.1  # keep a pair only when reward(chosen) - reward(rejected) ≥ this
    seed: int = 0

    def __post_init__(self) -> None:
        _positive_int("sampling", "n", self.n)
        if self.n < 2:
            raise ValueError("sampling.n must be ≥ 2: a pair needs two candidates")
        _positive_int("sampling", "max_new_tokens", self.max_new_tokens)
        _fraction("sampling", "temperature", self.temperature, 0.05, 5.0)
        _fraction("sampling", "top_p", self.top_p, 0.01, 1.0)
        _positive_int("sampling", "workers", self.workers)
        _positive_number("sampling", "min_margin", self.min_margin)  # rewards lie in [0, 1]
        _positive_int("sampling", "seed", self.seed, zero_ok=True)


@dataclass
class DPOTraining:
    """The DPO objective, optimiser, budget and checkpoints."""

    beta: float = 0.1  # strength of the implicit KL to the start model (DPO's β)
    lr: float = 5e-6
    warmup_steps: int = 5  # linear warmup, then constant
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    micro_batch: int = 4  # pairs per forward/backward (twice as many sequences)
    grad_accum: int = 1  # micro-batches per optimiser step
    epochs: int = 1
    max_minutes: float | None = 60.0
    seed: int = 0
    save_every: int = 20  # optimiser steps between checkpoints
    keep_checkpoints: int = 2
    num_threads: int | None = None  # torch threads; None: torch's default

    def __post_init__(self) -> None:
        _fraction("training", "beta", self.beta, 1e-4, 100.0)
        _positive_number("training", "lr", self.lr)
        _positive_int("training", "warmup_steps", self.warmup_steps, zero_ok=True)
        _fraction("training", "weight_decay", self.weight_decay, 0.0, 1.0)
        _fraction("training", "grad_clip", self.grad_clip, 0.0, 1e6)
        for name in ("micro_batch", "grad_accum", "epochs", "save_every", "keep_checkpoints"):
            _positive_int("training", name, getattr(self, name))
        _positive_int("training", "seed", self.seed, zero_ok=True)
        if self.max_minutes is not None:
            _positive_number("training", "max_minutes", self.max_minutes)
        if self.num_threads is not None:
            _positive_int("training", "num_threads", self.num_threads)


@dataclass
class DPOConfig:
    """A whole DPO run: pairs from the start model, then preference training on them."""

    data: DPOData
    model: RLModel = field(default_factory=RLModel)
    sampling: DPOSampling = field(default_factory=DPOSampling)
    training: DPOTraining = field(default_factory=DPOTraining)
    deepspeed: str = "training/configs/deepspeed/cpu.json"
    output_dir: str = "var/models/tiny-dpo"
    run_dir: str = "var/dpo/tiny"  # pairs.jsonl, checkpoints, metrics.jsonl

    def __post_init__(self) -> None:
        sections = (
            ("data", DPOData),
            ("model", RLModel),
            ("sampling", DPOSampling),
            ("training", DPOTraining),
        )
        for name, cls in sections:
            if isinstance(getattr(self, name), dict):
                setattr(self, name, _build(cls, getattr(self, name), name))
        for name in ("deepspeed", "output_dir", "run_dir"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a path")

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
    def from_dict(cls, raw: Any) -> DPOConfig:
        """Build from parsed YAML, rejecting unknown keys."""
        return _build(cls, raw, "config")

    @classmethod
    def from_yaml(cls, path: str | Path) -> DPOConfig:
        """Load and check a YAML config file."""
        return cls.from_dict(read_yaml(path))
