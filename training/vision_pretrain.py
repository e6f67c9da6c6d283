"""Pretraining the vision encoder on its own: what part a picture shows, and in what proportions.

The vision-language model's encoder is trained from scratch (training/vlm.py). Trained only
through the language model's loss, it learns slowly: every picture costs a whole program's
forward and backward pass, and the loss that reaches the encoder is spread over hundreds of
tokens, most of which the picture does not decide. This stage teaches the encoder directly,
as a pretrained vision backbone would have been taught, from the corpus's own pictures:

- **kind**: which family the part is, or for a compositional part, the grammar tokens of its
  composition: its base (one of the families and bases, by cross-entropy) and each feature
  (`holes_polar`, `edge_chamfer`...: there or not, one sigmoid each);
- **proportions**: every numeric parameter of the part's program, as its log minus the mean
  log of the part's parameters (a picture has no scale; its ratios are what it shows),
  standardised per parameter.

Both are read from the patch features the language model reads (the encoder's last layer,
without its class token, averaged), through small heads that are thrown away afterwards. Only
the encoder learns; the projector and the language model are saved as they came, so the next
stage (an SFT stage with `training.language_lr`, usually 0) aligns the projector to the new
features. A picture is seen mirrored half the time: a mirrored part is the same kind with the
same parameters.

`linear_probe` measures what an encoder already knows, the same way, with the encoder frozen:
`python -m bench.vision_probe` compares encoders on the same pictures.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

MIN_KEY_ROWS = 20  # a parameter seen on fewer train pictures than this is not a target


@dataclass
class VisionPretrainConfig:
    """The run's settings: image rows in, a vision-language model in and out."""

    train: str  # an image-task JSONL (`genservice corpus images ... --images-only`)
    model_from: str  # a vision-language model directory (training/vlm.py)
    output_dir: str
    train_splits: list[str] = field(default_factory=lambda: ["train"])
    val_splits: list[str] = field(default_factory=lambda: ["val"])
    max_val_examples: int = 1024
    batch_size: int = 32
    lr: float = 5e-4
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    epochs: float = 1.0
    max_minutes: float | None = None
    weight_decay: float = 0.05
    param_weight: float = 1.0  # the proportions' loss beside the kind's
    seed: int = 0
    eval_every: int = 200
    log_every: int = 10
    num_threads: int = 2

    def __post_init__(self) -> None:
        for name in ("batch_size", "warmup_steps", "eval_every", "log_every", "num_threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"training.{name} must be an integer ≥ 1, got {value!r}")
        for name in ("lr", "epochs", "param_weight"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"training.{name} must be a positive number, got {value!r}")
        if self.max_minutes is not None and not (
            isinstance(self.max_minutes, int | float) and self.max_minutes > 0
        ):
            raise ValueError("training.max_minutes must be a positive number of minutes")
        if set(self.train_splits) & set(self.val_splits):
            raise ValueError("data.train_splits and data.val_splits must not overlap")

    @classmethod
    def from_yaml(cls, path: str | Path) -> VisionPretrainConfig:
        """Read a config: `data:` (train, splits), `model: {from: DIR}`, `training:`,
        `output_dir:`; unknown keys are errors."""
        import yaml

        raw = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(raw, dict):
            raise ValueError("the config must be a mapping of data, model, training, output_dir")
        unknown = set(raw) - {"data", "model", "training", "output_dir"}
        if unknown:
            raise ValueError(f"unknown sections {sorted(unknown)}")
        data, model, training = (raw.get(k) or {} for k in ("data", "model", "training"))
        if not isinstance(model, dict) or not model.get("from"):
            raise ValueError("model.from must name a vision-language model directory")
        if not isinstance(data, dict) or not data.get("train"):
            raise ValueError("data.train must be the path of an image-task JSONL file")
        if not raw.get("output_dir"):
            raise ValueError("output_dir must name the directory the model is written to")
        allowed = {f.name for f in dataclasses.fields(cls)}
        extra = (set(data) | set(training)) - allowed
        if extra:
            raise ValueError(f"unknown keys {sorted(extra)}")
        return cls(
            model_from=str(model["from"]), output_dir=str(raw["output_dir"]), **data, **training
        )

    def check_files(self) -> None:
        """Fail early, with the path, when an input is missing or not a vision-language model."""
        from training.vlm import is_vlm_dir

        if not Path(self.train).is_file():
            raise ValueError(f"data.train: no such file {self.train}")
        if not is_vlm_dir(self.model_from):
            raise ValueError(
                f"model.from: {self.model_from} is not a vision-language model directory "
                "(config.json with model_type llava)"
            )


class Targets:
    """The kind tokens and parameter keys learnt from the train rows, and each row's targets."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        kinds: Counter[str] = Counter()
        logs: dict[str, list[float]] = {}
        for row in rows:
            kinds.update(kind_tokens(row))
            for key, value in centred_logs(row).items():
                logs.setdefault(key, []).append(value)
        self.kinds = sorted(kinds)
        # A part is one family or one compositional base (one of these, by softmax); a
        # compositional part's features are each there or not (one sigmoid each).
        firsts = {kind_tokens(row)[0] for row in rows}
        self.is_primary = [kind in firsts for kind in self.kinds]
        self.keys = sorted(k for k, v in logs.items() if len(v) >= MIN_KEY_ROWS)
        self.mean = {k: sum(logs[k]) / len(logs[k]) for k in self.keys}
        self.std = {
            k: max(1e-3, math.sqrt(sum((v - self.mean[k]) ** 2 for v in logs[k]) / len(logs[k])))
            for k in self.keys
        }
        self._kind_index = {k: i for i, k in enumerate(self.kinds)}
        self._key_index = {k: i for i, k in enumerate(self.keys)}

    def of(self, row: dict[str, Any]) -> tuple[list[float], list[float], list[float]]:
        """(multi-hot kind, standardised parameters, which parameters the row has)."""
        kind = [0.0] * len(self.kinds)
        for token in kind_tokens(row):
            if token in self._kind_index:
                kind[self._kind_index[token]] = 1.0
        values, mask = [0.0] * len(self.keys), [0.0] * len(self.keys)
        for key, value in centred_logs(row).items():
            if key in self._key_index:
                i = self._key_index[key]
                values[i] = (value - self.mean[key]) / self.std[key]
                mask[i] = 1.0
        return kind, values, mask

    def primary_mask(self) -> torch.Tensor:
        """Which kind columns are families or bases (the softmax's), as a bool tensor."""
        return torch.tensor(self.is_primary, dtype=torch.bool)

    def primary(self, row: dict[str, Any]) -> int:
        """The index of the row's family or compositional base (-1 when not a train kind)."""
        return self._kind_index.get(kind_tokens(row)[0], -1)

    def to_json(self) -> dict[str, Any]:
        """What the heads were trained to say (written beside the model)."""
        return {"kinds": self.kinds, "parameters": self.keys}


def kind_tokens(row: dict[str, Any]) -> list[str]:
    """A part's kind: its family, or a compositional part's grammar tokens."""
    params = row.get("params") or {}
    if row.get("family") == "compositional" and isinstance(params.get("composition"), str):
        return [f"compositional:{token}" for token in params["composition"].split("+")]
    return [str(row.get("family"))]


def centred_logs(row: dict[str, Any]) -> dict[str, float]:
    """Each positive numeric parameter's log less the mean of them: the part's proportions."""
    params = row.get("params") or {}
    family = str(row.get("family"))
    logs = {
        f"{family}.{name}": math.log(float(value))
        for name, value in params.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    }
    if not logs:
        return {}
    mean = sum(logs.values()) / len(logs)
    return {key: value - mean for key, value in logs.items()}


class Heads(nn.Module):
    """Kind logits and standardised parameters from the encoder's pooled patch features."""

    def __init__(self, width: int, kinds: int, keys: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.kind = nn.Linear(width, kinds)
        self.params = nn.Linear(width, keys)

    def forward(self, pooled: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(kind logits, parameter predictions)."""
        pooled = self.norm(pooled)
        return self.kind(pooled), self.params(pooled)


def pooled_features(encoder: Any, pixels: torch.Tensor) -> torch.Tensor:
    """The mean of the patch features the language model reads (last layer, no class token)."""
    hidden = encoder(pixel_values=pixels, output_hidden_states=True).hidden_states[-1]
    return hidden[:, 1:].mean(dim=1)


def losses(
    heads: Heads, pooled: torch.Tensor, batch: dict[str, torch.Tensor], primary: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(kind loss, proportions loss) of a batch: the family or base by cross-entropy over the
    `primary` kinds (Targets.primary_mask), each compositional feature by its own sigmoid,
    proportions by squared error."""
    kind_logits, predicted = heads(pooled)
    chosen = kind_logits.masked_fill(~primary, float("-inf"))
    kind_loss = nn.functional.cross_entropy(chosen, batch["primary"], ignore_index=-1)
    if bool((~primary).any()):
        kind_loss = kind_loss + nn.functional.binary_cross_entropy_with_logits(
            kind_logits[:, ~primary], batch["kind"][:, ~primary], reduction="sum"
        ) / len(kind_logits)
    mask = batch["mask"]
    squared = (predicted - batch["params"]) ** 2 * mask
    param_loss = squared.sum() / mask.sum().clamp(min=1.0)
    return kind_loss, param_loss


@dataclass
class Scores:
    """How well the heads read held-out pictures."""

    pictures: int
    kind_exact: float  # the family or base and every compositional feature are the part's
    family_top1: float  # pictures of a family part: the family scores highest of all families
    base_top1: float  # compositional pictures: the base token scores highest of all bases
    param_r2: float  # 1 - error / variance of the standardised proportions

    def line(self) -> str:
        """One line for the terminal."""
        return (
            f"kind exact {self.kind_exact:.1%} · family top-1 {self.family_top1:.1%} · "
            f"base top-1 {self.base_top1:.1%} · proportions R² {self.param_r2:.3f}"
        )


def score(
    kind_logits: torch.Tensor, predicted: torch.Tensor, rows: list[dict], targets: Targets
) -> Scores:
    """Scores of predictions for `rows` (logits and parameters in the rows' order)."""
    families = [i for i, k in enumerate(targets.kinds) if not k.startswith("compositional:")]
    bases = sorted(
        {targets.kinds.index(kind_tokens(r)[0]) for r in rows if _compositional(r, targets)}
    )
    primaries = [j for j, p in enumerate(targets.is_primary) if p]
    exact = family_hits = family_n = base_hits = base_n = 0
    error = total = 0.0
    for i, row in enumerate(rows):
        kind, values, mask = targets.of(row)
        first = max(primaries, key=lambda j: float(kind_logits[i, j]))
        chosen = [
            float(j == first) if p else float(kind_logits[i, j] > 0)
            for j, p in enumerate(targets.is_primary)
        ]
        exact += chosen == kind
        if _compositional(row, targets) and bases:
            base_n += 1
            best = max(bases, key=lambda b: float(kind_logits[i, b]))
            base_hits += targets.kinds[best] == kind_tokens(row)[0]
        elif families:
            family_n += 1
            best = max(families, key=lambda f: float(kind_logits[i, f]))
            family_hits += targets.kinds[best] == kind_tokens(row)[0]
        for j, present in enumerate(mask):
            if present:
                error += (float(predicted[i, j]) - values[j]) ** 2
                total += values[j] ** 2  # standardised: the train mean is 0
    n = max(1, len(rows))
    return Scores(
        pictures=len(rows),
        kind_exact=exact / n,
        family_top1=family_hits / max(1, family_n),
        base_top1=base_hits / max(1, base_n),
        param_r2=1.0 - error / total if total else 0.0,
    )


def _compositional(row: dict, targets: Targets) -> bool:
    return row.get("family") == "compositional" and kind_tokens(row)[0] in targets.kinds


def read_rows(path: Path, splits: list[str]) -> list[dict[str, Any]]:
    """The image rows of `splits` in an image-task JSONL (rows without a picture are skipped)."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("images") and row.get("split") in splits:
                rows.append(row)
    return rows


def load_pictures(rows: list[dict], base: Path, processor: Any, progress: Any = None) -> Any:
    """Every row's first picture, squared and scaled as served, as uint8 (n, 3, s, s): the
    whole set stays in memory at a quarter of float32's size."""
    from training.vlm import pixel_values

    chunks = []
    for start in range(0, len(rows), 256):
        paths = [str(base / row["images"][0]) for row in rows[start : start + 256]]
        values = pixel_values(processor, paths)
        chunks.append(((values * 0.5 + 0.5) * 255).round().clamp(0, 255).to(torch.uint8))
        if progress is not None:
            progress(len(paths))
    return torch.cat(chunks) if chunks else torch.zeros(0, 3, 1, 1, dtype=torch.uint8)


def as_pixels(pictures: torch.Tensor) -> torch.Tensor:
    """uint8 pictures back to the processor's normalised floats."""
    return pictures.float() / 255.0 * 2.0 - 1.0


def target_tensors(rows: list[dict], targets: Targets) -> dict[str, torch.Tensor]:
    """Kind, parameter and mask tensors for `rows`, in order."""
    kinds, values, masks = zip(*(targets.of(row) for row in rows), strict=True)
    return {
        "primary": torch.tensor([targets.primary(row) for row in rows], dtype=torch.long),
        "kind": torch.tensor(kinds, dtype=torch.float32),
        "params": torch.tensor(values, dtype=torch.float32),
        "mask": torch.tensor(masks, dtype=torch.float32),
    }


def pooled_all(encoder: Any, pictures: torch.Tensor, batch_size: int = 64) -> torch.Tensor:
    """`pooled_features` of uint8 pictures, a batch at a time, without gradients."""
    encoder.eval()
    with torch.no_grad():
        return torch.cat(
            [
                pooled_features(encoder, as_pixels(pictures[start : start + batch_size]))
                for start in range(0, len(pictures), batch_size)
            ]
        )


def _predict(
    encoder: Any, heads: Heads, pictures: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    heads.eval()
    pooled = pooled_all(encoder, pictures)
    with torch.no_grad():
        return heads(pooled)


def pretrain_vision(config: VisionPretrainConfig, show_progress: bool = True) -> Path:
    """Train the encoder of `config.model_from` on kind and proportions; write the model (its
    projector and language model untouched) to `output_dir`, with `vision_pretrain.json`."""
    from genservice.generation.gallery import carry_gallery
    from training.vlm import load_vlm

    torch.set_num_threads(config.num_threads)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    path = Path(config.train)
    train_rows = read_rows(path, config.train_splits)
    val_rows = read_rows(path, config.val_splits)
    rng.shuffle(val_rows)
    val_rows = val_rows[: config.max_val_examples]
    if not train_rows:
        raise ValueError(f"{path} has no image rows of the splits {config.train_splits}")
    targets = Targets(train_rows)
    model, processor = load_vlm(config.model_from)
    encoder = model.model.vision_tower
    heads = Heads(encoder.config.hidden_size, len(targets.kinds), len(targets.keys))

    bar = _Bar(show_progress)
    bar.phase("reading pictures", len(train_rows) + len(val_rows))
    train_pictures = load_pictures(train_rows, path.parent, processor, bar.advance)
    val_pictures = load_pictures(val_rows, path.parent, processor, bar.advance)
    train_targets = target_tensors(train_rows, targets)
    primary = targets.primary_mask()

    steps_per_epoch = max(1, len(train_rows) // config.batch_size)
    total_steps = max(1, int(steps_per_epoch * config.epochs))
    decay = [p for p in [*encoder.parameters(), *heads.parameters()] if p.dim() >= 2]
    no_decay = [p for p in [*encoder.parameters(), *heads.parameters()] if p.dim() < 2]
    groups: list[dict[str, Any]] = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay},
    ]
    optimizer = torch.optim.AdamW(
        groups,
        lr=config.lr,
        weight_decay=0.0,
    )
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics = out / "vision_pretrain.metrics.jsonl"
    metrics.unlink(missing_ok=True)
    started = time.monotonic()
    budget = config.max_minutes * 60 if config.max_minutes else None
    bar.phase("pretraining the vision encoder", total_steps)
    step, history = 0, []
    order: list[int] = []
    while step < total_steps:
        if not order:
            order = list(range(len(train_rows)))
            rng.shuffle(order)
        picked, order = order[: config.batch_size], order[config.batch_size :]
        if len(picked) < config.batch_size:
            continue  # the epoch's remainder: the next epoch starts afresh
        index = torch.tensor(picked)
        pixels = as_pixels(train_pictures[index])
        flip = torch.rand(len(picked)) < 0.5
        pixels[flip] = pixels[flip].flip(-1)
        batch = {k: v[index] for k, v in train_targets.items()}
        used = time.monotonic() - started
        for group in optimizer.param_groups:
            group["lr"] = _lr(step, total_steps, config, used / budget if budget else 0.0)
        encoder.train()
        heads.train()
        kind_loss, param_loss = losses(heads, pooled_features(encoder, pixels), batch, primary)
        loss = kind_loss + config.param_weight * param_loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([*encoder.parameters(), *heads.parameters()], 1.0)
        optimizer.step()
        step += 1
        bar.advance(1)
        if step % config.log_every == 0:
            losses_now = {"kind_loss": kind_loss.item(), "param_loss": param_loss.item()}
            _log(metrics, {"step": step, **losses_now})
        out_of_time = budget is not None and time.monotonic() - started >= budget
        if step % config.eval_every == 0 or step == total_steps or out_of_time:
            scores = score(*_predict(encoder, heads, val_pictures), val_rows, targets)
            history.append({"step": step, **asdict(scores)})
            _log(metrics, history[-1])
            bar.note(f"step {step}: {scores.line()}")
        if out_of_time:
            break
    bar.stop()
    model.save_pretrained(str(out))
    processor.save_pretrained(str(out))
    carry_gallery(Path(config.model_from), out)
    summary = {
        "stage": "vision pretraining",
        "from": config.model_from,
        "data": {
            "train": config.train,
            "train_pictures": len(train_rows),
            "val_pictures": len(val_rows),
        },
        "steps": step,
        "minutes": round((time.monotonic() - started) / 60, 1),
        "config": asdict(config),
        "targets": targets.to_json(),
        "scores": history,
    }
    (out / "vision_pretrain.json").write_text(json.dumps(summary, indent=1) + "\n")
    return out


def linear_probe(
    model_dir: str | Path,
    rows_path: str | Path,
    train_splits: list[str],
    val_splits: list[str],
    epochs: int = 30,
    max_val: int = 1024,
    seed: int = 0,
    max_train: int | None = None,
) -> Scores:
    """What a frozen encoder's features say about kind and proportions: heads trained on its
    pooled features of the train pictures, scored on held-out ones."""
    from training.vlm import load_vlm

    torch.manual_seed(seed)
    path = Path(rows_path)
    train_rows = read_rows(path, train_splits)
    val_rows = read_rows(path, val_splits)
    random.Random(seed).shuffle(train_rows)
    random.Random(seed).shuffle(val_rows)
    train_rows, val_rows = train_rows[:max_train], val_rows[:max_val]
    targets = Targets(train_rows)
    model, processor = load_vlm(model_dir)
    encoder = model.model.vision_tower
    train_x, val_x = (
        pooled_all(encoder, load_pictures(rows, path.parent, processor))
        for rows in (train_rows, val_rows)
    )
    train_y = target_tensors(train_rows, targets)
    heads = Heads(train_x.shape[1], len(targets.kinds), len(targets.keys))
    primary = targets.primary_mask()
    optimizer = torch.optim.AdamW(heads.parameters(), lr=3e-3, weight_decay=1e-4)
    for _ in range(epochs):
        for index in torch.randperm(len(train_x)).split(256):
            batch = {k: v[index] for k, v in train_y.items()}
            kind_loss, param_loss = losses(heads, train_x[index], batch, primary)
            optimizer.zero_grad()
            (kind_loss + param_loss).backward()
            optimizer.step()
    heads.eval()
    with torch.no_grad():
        kind_logits, predicted = heads(val_x)
    return score(kind_logits, predicted, val_rows, targets)


def _lr(step: int, total: int, config: VisionPretrainConfig, time_share: float) -> float:
    """Linear warm-up, then cosine to lr × min_lr_ratio by steps or time, whichever is further."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    done = max((step - config.warmup_steps) / max(1, total - config.warmup_steps), time_share)
    low = config.lr * config.min_lr_ratio
    return low + (config.lr - low) * 0.5 * (1 + math.cos(math.pi * min(1.0, done)))


def _log(path: Path, record: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


class _Bar:
    """A rich progress bar for the run's phases, or nothing."""

    def __init__(self, shown: bool) -> None:
        self._bar: Any = None
        self._task: Any = None
        if shown:
            from training.corpus.build import _progress

            self._bar = _progress()
            self._bar.start()

    def phase(self, name: str, total: int) -> None:
        """Start a new phase of `total` units."""
        if self._bar is not None:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._task = self._bar.add_task(name, total=total)

    def advance(self, units: int) -> None:
        """Count `units` more done."""
        if self._bar is not None:
            self._bar.advance(self._task, units)

    def note(self, text: str) -> None:
        """Print a line above the bar."""
        if self._bar is not None:
            self._bar.console.print(text)

    def stop(self) -> None:
        """Leave the terminal as it was."""
        if self._bar is not None:
            self._bar.stop()
