"""The SFT run's settings: one dataclass per YAML section, each checked when built.

Errors are ValueErrors that say which key is wrong and how to fix it. Relative paths are taken
from the working directory (run training from the repository root).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEDULES = ("cosine", "linear", "constant")
ARCHITECTURES = ("qwen2",)
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:[0-9]+)?")


def _positive_int(section: str, name: str, value: Any, zero_ok: bool = False) -> None:
    low = 0 if zero_ok else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(
            f"{section}.{name} must be an integer ≥ {low}, got {value!r}"
            + (" (0 turns it off)" if zero_ok else "")
        )


def _positive_number(section: str, name: str, value: Any, zero_ok: bool = False) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero_ok)
    ):
        raise ValueError(
            f"{section}.{name} must be a {'non-negative' if zero_ok else 'positive'} number, "
            f"got {value!r}" + (" (0 freezes it)" if zero_ok else "")
        )


def _splits(section: str, name: str, value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(
            f"{section}.{name} must be a list of split names like [train], got {value!r}"
        )
    return list(value)


@dataclass
class DataConfig:
    """Where the task rows come from and which of them train and validate."""

    train: str
    val: str | None = None  # None: validation rows come from the train file, by val_splits
    train_splits: list[str] = field(default_factory=lambda: ["train"])
    val_splits: list[str] = field(default_factory=lambda: ["val"])
    domains: list[str] | None = None  # None: every domain
    max_val_examples: int = 256
    # CAD and scene programs are a parameter block the request decides, then a body that the
    # family fixes and a model learns early. Below 1, only this share of their train rows keeps
    # the whole program; the others stop after the parameter block, so a time budget sees more
    # requests (see training/sft.py). Validation rows stay whole.
    whole_program_share: float = 1.0

    def __post_init__(self) -> None:
        share = self.whole_program_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ValueError("data.whole_program_share must be a number in (0, 1]")
        if not isinstance(self.train, str) or not self.train:
            raise ValueError("data.train must be the path of a task JSONL file")
        if self.val is not None and (not isinstance(self.val, str) or not self.val):
            raise ValueError("data.val must be the path of a task JSONL file, or null")
        self.train_splits = _splits("data", "train_splits", self.train_splits)
        self.val_splits = _splits("data", "val_splits", self.val_splits)
        if self.val is None and set(self.train_splits) & set(self.val_splits):
            raise ValueError(
                "data.train_splits and data.val_splits overlap while both come from data.train: "
                "set data.val to a separate file or use different splits"
            )
        if self.domains is not None:
            from genservice.generation.prompts import DOMAINS

            self.domains = _splits("data", "domains", self.domains)
            unknown = sorted(set(self.domains) - set(DOMAINS))
            if unknown:
                raise ValueError(f"data.domains: unknown {unknown}; choose from {list(DOMAINS)}")
        _positive_int("data", "max_val_examples", self.max_val_examples, zero_ok=True)


@dataclass
class ModelInit:
    """A model built from scratch, with a tokenizer trained on the training data."""

    architecture: str = "qwen2"
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 768
    max_position_embeddings: int = 1024
    vocab_size: int = 3072
    tie_word_embeddings: bool = True
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(
                f"model.init.architecture must be one of {list(ARCHITECTURES)}, got "
                f"{self.architecture!r} (to fine-tune another architecture, use model.from)"
            )
        for name in (
            "hidden_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "intermediate_size",
            "max_position_embeddings",
            "vocab_size",
        ):
            _positive_int("model.init", name, getattr(self, name))
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"model.init.hidden_size ({self.hidden_size}) must be a multiple of num_heads "
                f"({self.num_heads})"
            )
        if (self.hidden_size // self.num_heads) % 2:
            raise ValueError("model.init: hidden_size / num_heads must be even (rotary embeddings)")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"model.init.num_heads ({self.num_heads}) must be a multiple of num_kv_heads "
                f"({self.num_kv_heads})"
            )
        if self.vocab_size < 260:
            raise ValueError("model.init.vocab_size must be at least 260 (256 bytes + specials)")
        _positive_number("model.init", "rope_theta", self.rope_theta)


@dataclass
class ModelConfig:
    """Either `init` (train from scratch) or `from` (fine-tune a local HF causal LM directory)."""

    init: ModelInit | None = None
    from_dir: str | None = None
    # A vision encoder of this shape (training/vlm.py VisionSpec) joined to the `from` text
    # model: the run trains a vision-language model (image tasks with text replay).
    vision: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.init, dict):
            self.init = _build(ModelInit, self.init, "model.init")
        if isinstance(self.vision, dict):
            from training.vlm import VisionSpec

            try:
                self.vision = _build(VisionSpec, self.vision, "model.vision")
            except TypeError as exc:
                raise ValueError(f"model.vision: {exc}") from exc
        if self.vision is not None and self.from_dir is None:
            raise ValueError("model.vision joins a vision encoder to a `from:` text model")
        if (self.init is None) == (self.from_dir is None):
            raise ValueError(
                "model needs exactly one of `init:` (architecture and sizes, to train from "
                "scratch) or `from:` (a local model directory to fine-tune)"
            )
        if self.from_dir is not None and (not isinstance(self.from_dir, str) or not self.from_dir):
            raise ValueError("model.from must be the path of a local model directory")


@dataclass
class TrainingConfig:
    """Optimisation, budget, evaluation and checkpoint cadence."""

    max_seq_len: int = 768
    batch_size: int = 8
    grad_accum: int = 1
    lr: float = 1e-3
    min_lr_ratio: float = 0.1  # the schedule ends at lr * min_lr_ratio
    warmup_steps: int = 50
    schedule: str = "cosine"
    epochs: float | None = None
    max_steps: int | None = None  # with epochs too, the smaller of the two ends the run
    # Wall-clock budget, counted over resumed runs too: at the end of the step that reaches it,
    # the run evaluates, saves a checkpoint and the final model, and stops.
    max_minutes: float | None = None
    # With max_minutes: the schedule decays by the larger of steps done and budget used, so a
    # run the budget cuts short still ends at the low learning rate (not reproducible exactly).
    schedule_by_time: bool = False
    weight_decay: float = 0.1
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    grad_clip: float = 1.0  # 0 turns clipping off
    seed: int = 0
    eval_every: int = 200  # steps; 0: only at the end
    save_every: int = 200  # steps; 0: only at the end
    log_every: int = 10
    keep_checkpoints: int = 2
    num_threads: int = 2  # torch intra-op threads; 0 leaves torch's default
    # Where the model trains: auto (the $GENSERVICE_DEVICE device, else the first GPU when
    # PyTorch sees one, else the CPU), cpu, cuda or cuda:N (genservice/device.py).
    device: str = "auto"
    # bfloat16 autocast (weights and optimizer stay float32); None: on a GPU, off on the CPU.
    bf16: bool | None = None
    # With model.vision: the peak learning rate of the pre-trained language model, lower than
    # `lr` (the new vision encoder and projector) so text requests keep their quality; 0
    # freezes it, so that only the encoder and projector learn (text answers stay as they were).
    language_lr: float | None = None

    def __post_init__(self) -> None:
        section = "training"
        for name in ("max_seq_len", "batch_size", "grad_accum", "log_every", "keep_checkpoints"):
            _positive_int(section, name, getattr(self, name))
        for name in ("warmup_steps", "seed", "eval_every", "save_every", "num_threads"):
            _positive_int(section, name, getattr(self, name), zero_ok=True)
        _positive_number(section, "lr", self.lr)
        if self.language_lr is not None:
            _positive_number(section, "language_lr", self.language_lr, zero_ok=True)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"training.schedule must be one of {list(SCHEDULES)}")
        if not (isinstance(self.min_lr_ratio, int | float) and 0 <= self.min_lr_ratio <= 1):
            raise ValueError("training.min_lr_ratio must be in [0, 1]")
        if self.epochs is None and self.max_steps is None:
            raise ValueError("training needs epochs or max_steps (or both; the smaller wins)")
        if self.epochs is not None:
            _positive_number(section, "epochs", self.epochs)
        if self.max_steps is not None:
            _positive_int(section, "max_steps", self.max_steps)
        if self.max_minutes is not None:
            _positive_number(section, "max_minutes", self.max_minutes)
        if not (isinstance(self.weight_decay, int | float) and self.weight_decay >= 0):
            raise ValueError("training.weight_decay must be a number ≥ 0")
        if not (isinstance(self.grad_clip, int | float) and self.grad_clip >= 0):
            raise ValueError("training.grad_clip must be a number ≥ 0 (0 turns it off)")
        if (
            not isinstance(self.betas, list | tuple)
            or len(self.betas) != 2
            or not all(isinstance(b, int | float) and 0 <= b < 1 for b in self.betas)
        ):
            raise ValueError("training.betas must be two numbers in [0, 1), like [0.9, 0.95]")
        self.betas = [float(b) for b in self.betas]
        if not isinstance(self.schedule_by_time, bool):
            raise ValueError("training.schedule_by_time must be true or false")
        if self.schedule_by_time and self.max_minutes is None:
            raise ValueError("training.schedule_by_time needs training.max_minutes")
        if self.bf16 is not None and not isinstance(self.bf16, bool):
            raise ValueError("training.bf16 must be true, false or null (on a GPU only)")
        if not isinstance(self.device, str) or not DEVICE_PATTERN.fullmatch(self.device):
            raise ValueError(
                f"training.device must be auto, cpu, cuda or cuda:N, got {self.device!r}"
            )


@dataclass
class RetrievalConfig:
    """Train with retrieved examples: an index of solved train tasks saved with the model."""

    per_family: int = 200  # indexed tasks per family (a seeded draw of the train rows)
    plain_share: float = 0.1  # rows trained without an example, so the model copes with none
    seed: int = 0

    def __post_init__(self) -> None:
        _positive_int("retrieval", "per_family", self.per_family)
        if isinstance(self.plain_share, bool) or not isinstance(self.plain_share, int | float):
            raise ValueError("retrieval.plain_share must be a number in [0, 1)")
        if not 0 <= self.plain_share < 1:
            raise ValueError("retrieval.plain_share must be in [0, 1)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError("retrieval.seed must be an integer")


@dataclass
class SFTConfig:
    """A whole SFT run: data, model, training and where results go."""

    data: DataConfig
    model: ModelConfig
    training: TrainingConfig = field(default_factory=TrainingConfig)
    output_dir: str = "genservice/models/tiny"
    checkpoint_dir: str | None = None  # None: <output_dir>/checkpoints
    retrieval: RetrievalConfig | None = None  # None: prompts without retrieved examples

    def __post_init__(self) -> None:
        if isinstance(self.retrieval, dict):
            self.retrieval = _build(RetrievalConfig, self.retrieval, "retrieval")
        elif self.retrieval is not None and not isinstance(self.retrieval, RetrievalConfig):
            raise ValueError("retrieval must be a mapping (per_family, plain_share, seed) or null")
        if isinstance(self.data, dict):
            self.data = _build(DataConfig, self.data, "data")
        if isinstance(self.model, dict):
            self.model = _build(ModelConfig, self.model, "model")
        if isinstance(self.training, dict):
            self.training = _build(TrainingConfig, self.training, "training")
        if not isinstance(self.output_dir, str) or not self.output_dir:
            raise ValueError("output_dir must be a directory path")
        init = self.model.init
        if init is not None and self.training.max_seq_len > init.max_position_embeddings:
            raise ValueError(
                f"training.max_seq_len ({self.training.max_seq_len}) exceeds "
                f"model.init.max_position_embeddings ({init.max_position_embeddings}): raise the "
                "latter or lower the former"
            )

    @property
    def checkpoints(self) -> Path:
        """The folder that holds this run's checkpoints."""
        return Path(self.checkpoint_dir or Path(self.output_dir) / "checkpoints")

    def check_files(self) -> None:
        """Raise ValueError when a data file or the model directory to fine-tune is missing."""
        for key, path in (("data.train", self.data.train), ("data.val", self.data.val)):
            if path is not None and not Path(path).is_file():
                raise ValueError(
                    f"{key}: no such file {path} (build it with `genservice corpus build`, or "
                    "fix the path; relative paths start at the working directory)"
                )
        model_dir = self.model.from_dir
        if model_dir is not None and not (Path(model_dir) / "config.json").is_file():
            raise ValueError(f"model.from: {model_dir} is not a model directory (no config.json)")

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (YAML keys), for logs and checkpoints."""
        raw = dataclasses.asdict(self)
        raw["model"]["from"] = raw["model"].pop("from_dir")
        return raw

    @classmethod
    def from_dict(cls, raw: Any) -> SFTConfig:
        """Build from parsed YAML, rejecting unknown keys."""
        if not isinstance(raw, dict):
            raise ValueError("the config must be a mapping with data, model, training, output_dir")
        return _build(cls, raw, "config")

    @classmethod
    def from_yaml(cls, path: str | Path) -> SFTConfig:
        """Load and check a YAML config file."""
        return cls.from_dict(read_yaml(path))


def read_yaml(path: str | Path) -> Any:
    """Parsed YAML of a run config, or a ValueError that says what is wrong with the file."""
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"cannot read config {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"config {path} is not valid YAML: {exc}") from exc


def _build(cls: Any, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a mapping, got {type(raw).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    aliases = {"from": "from_dir"} if "from_dir" in names else {}
    unknown = sorted(str(k) for k in raw if k not in names and k not in aliases)
    if unknown:
        allowed = sorted(n for n in names if n not in aliases.values()) + sorted(aliases)
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {allowed}")
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in raw]
    if missing:
        raise ValueError(f"{where}: missing keys {missing}")
    return cls(**{aliases.get(str(k), str(k)): v for k, v in raw.items()})
