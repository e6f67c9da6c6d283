"""Supervised fine-tuning on task rows: the chat prompt in, the reference program out.

Each task becomes the serving prompt (`build_messages`, through the tokenizer's chat template;
`build_repair_messages` for a repair row: the failed program and its error) followed by the
reference program and the end-of-turn token; the loss covers only the reply.
The same loop trains a tiny Qwen2 from scratch (tokenizer trained on the data) or fine-tunes any
local Hugging Face causal LM with its own tokenizer. A plain torch loop: length-grouped padded
batches, AdamW, warmup then cosine, clipping, periodic checkpoints that resume exactly, a
wall-clock budget, a JSONL metrics log, and a final safetensors model with a training summary.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import math
import random
import shlex
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genservice.generation.gallery import RETRIEVE_DEFAULT, carry_gallery, mark_look_alikes
from genservice.generation.pictures import read_by_model
from genservice.generation.prompts import DOMAINS, build_messages, repair_messages_of
from genservice.generation.retrieval import INDEX_DIR, ExampleIndex, request_messages
from training.sft_config import SFTConfig

if TYPE_CHECKING:
    import torch

IGNORE_INDEX = -100
STATE_FILE = "trainer_state.pt"
METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "training_summary.json"
_PROBE = "PROGRAM_PLACEHOLDER_7f3a"


class SetupError(ValueError):
    """The run cannot start as asked (data, checkpoints, template); the message says why."""


@dataclass
class Example:
    """One tokenised task: input ids and labels (IGNORE_INDEX outside the assistant reply)."""

    input_ids: list[int]
    labels: list[int]
    domain: str
    with_example: bool = False  # the prompt carries a retrieved solved example
    with_look_alike: bool = False  # the prompt shows a look-alike of its picture
    whole: bool = True  # the whole program (False: cut after its parameter block)
    images: list[str] = field(default_factory=list)  # picture paths of an image task


@dataclass
class ReplyFormat:
    """How a chat template frames an assistant reply: text before it and the turn's end."""

    before: str
    end: str


def load_tasks(path: str | Path, splits: list[str], domains: list[str] | None) -> list[dict]:
    """Task rows of a JSONL file in the given splits (rows without a split count as any)."""
    rows = []
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise SetupError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise SetupError(f"{path}:{number}: a task row must be a JSON object")
            if "split" in row and row["split"] not in splits:
                continue
            if domains is not None and row.get("domain") not in domains:
                continue
            if not all(isinstance(row.get(k), str) for k in ("domain", "prompt", "reference")):
                continue  # nothing to imitate
            if row["domain"] not in DOMAINS:
                raise SetupError(f"{path}:{number}: unknown domain {row['domain']!r}")
            if row.get("images"):  # picture paths are relative to the task file
                folder = Path(path).parent
                row["images"] = [str(folder / name) for name in row["images"]]
            rows.append(row)
    return rows


def row_look_alike(
    row: dict,
    loaded: Any | None = None,
    pool: Any | None = None,
    limits: Any | None = None,
    retrieve: int = 0,
) -> str | None:
    """The look-alike program a picture row's prompt shows: a training row's own (`corpus
    look-alikes`), else what serving would show the loaded model: with a sandbox `pool`, the
    best of the `retrieve` gallery parts that look like the picture once they are checked
    (engine.check_gallery), else the one closest in silhouette; None without either."""
    if row.get("look_alike") is not None:
        return str(row["look_alike"])
    if not row.get("images") or loaded is None or not loaded.reads_look_alikes:
        return None
    from training.evaluate import picture_target, task_pictures

    if pool is not None and retrieve and row["domain"] in ("cad", "scene"):
        from genservice.generation.engine import GenerationRequest, check_gallery

        pictures = tuple(task_pictures(row))
        request = GenerationRequest(row["prompt"], row["domain"], images=pictures,
                                    retrieve=retrieve)  # fmt: skip
        checked = check_gallery(request, loaded, pool, limits=limits)[1]
        if checked is not None:
            return checked
    return loaded.look_alike(row["domain"], row["prompt"], picture_target(row))


def task_messages(
    row: dict, loaded: Any | None = None, pool: Any | None = None, limits: Any | None = None
) -> list[dict[str, Any]]:
    """The serving prompt of a task row (an edit when it has previous_program + instruction,
    a repair when it has `repair: true`, failed_program and error).

    With a loaded model that uses retrieval, the prompt carries its nearest solved example
    (never the task itself), exactly as serving builds it; a repair, like an edit, carries its
    own program and no example. A picture row is shown the look-alike serving would show: with a
    sandbox `pool`, the best of its gallery parts once checked (row_look_alike).
    """
    if row.get("repair"):
        return repair_messages_of(row)
    if row.get("images"):  # a picture carries no retrieved example, when serving either
        shown = read_by_model(row["images"])  # the pictures serving shows the model
        look_alike = row_look_alike(row, loaded, pool, limits, RETRIEVE_DEFAULT)
        return build_messages(
            row["domain"], row["prompt"], images=len(shown), look_alike=look_alike
        )
    if loaded is None:
        return build_messages(
            row["domain"], row["prompt"], row.get("previous_program"), row.get("instruction")
        )
    own = (row["id"],) if isinstance(row.get("id"), str) else ()
    return loaded.messages(
        row["domain"], row["prompt"], row.get("previous_program"), row.get("instruction"),
        exclude=own,
    )  # fmt: skip


def reply_format(tokenizer: Any) -> ReplyFormat:
    """Find what the chat template writes around an assistant reply."""
    probe = [{"role": "user", "content": "x"}]
    prompt = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(
        [*probe, {"role": "assistant", "content": _PROBE}], tokenize=False
    )
    if not full.startswith(prompt) or _PROBE not in full[len(prompt) :]:
        raise SetupError(
            "the tokenizer's chat template does not render the generation prompt as a prefix of "
            "the conversation; SFT needs a template where it does (ChatML-like)"
        )
    before, after = full[len(prompt) :].split(_PROBE, 1)
    end = after.rstrip() or (tokenizer.eos_token or "")
    if not end:
        raise SetupError("the chat template ends a reply with nothing and there is no eos token")
    return ReplyFormat(before=before, end=end)


def encode_task(
    tokenizer: Any,
    row: dict,
    fmt: ReplyFormat,
    messages: list[dict[str, Any]] | None = None,
    cut_at: int | None = None,
    slots: tuple[int, int] | None = None,
) -> Example:
    """Tokenise a task as prompt + reply + end of turn, with labels only on reply and end.

    `messages` replaces the task's plain prompt (a retrieval model's prompt, say). `cut_at`
    keeps only the reply's first characters, with no end of turn (the reply goes on).
    `slots` = (image token, positions per picture) of a vision-language model: an image
    task's prompt holds that many image tokens per picture, as the processor lays them out.
    """
    images = read_by_model(row.get("images") or [])  # as serving shows the model a request's
    if images and slots is None:
        raise SetupError(
            f"task {row.get('id', '?')} has pictures but the model reads text only: set "
            "model.vision in the config to train a vision-language model"
        )
    prompt = tokenizer.apply_chat_template(
        messages or task_messages(row), tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
    if images and slots is not None:
        from training.vlm import expand_image_tokens

        prompt_ids = expand_image_tokens(prompt_ids, *slots)
    reply = row["reference"] if cut_at is None else row["reference"][:cut_at]
    reply_ids = tokenizer.encode(fmt.before + reply, add_special_tokens=False)
    if cut_at is None:
        reply_ids += tokenizer.encode(fmt.end, add_special_tokens=False)
    return Example(
        input_ids=prompt_ids + reply_ids,
        labels=[IGNORE_INDEX] * len(prompt_ids) + reply_ids,
        domain=row["domain"],
        images=images,
    )


def parameter_block_end(program: str) -> int | None:
    """Where a program's leading block of parameters ends (before its newline), or None.

    Parameters are what the validators call them (validators/cad/program.py: top-level constant
    assignments); the block goes on through parameters derived from them by arithmetic on the
    lines right after them (`bore_d = 0.4 * outer_d`; a blank line starts the body). Imports
    may come before the block; the first other statement ends it. None when the program does
    not parse, has no such block or nothing after it.
    """
    from validators.cad.program import ProgramError, find_parameters, parse

    try:
        tree = parse(program)
    except ProgramError:
        return None
    parameter_lines = {p.line for p in find_parameters(tree).values()}
    lines = program.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    end, last = None, -2
    names: set[str] = set()
    for node in tree.body:
        follows = end is not None and node.lineno == last + 2  # the next line: no blank between
        if node.lineno in parameter_lines or (follows and _derived(node, names)):
            targets = (
                node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            )
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            last = (node.end_lineno or node.lineno) - 1
            # Before the line's newline: whole programs write "\n\n" after the block as one
            # token, so a cut row must not teach a lone "\n" there.
            end = starts[last] + len(lines[last].rstrip("\r\n"))
        elif not (end is None and isinstance(node, ast.Import | ast.ImportFrom)):
            break
    if end is None or not program[end:].strip():
        return None
    return end


def _derived(node: ast.stmt, names: set[str]) -> bool:
    """Whether a statement derives a parameter from those before it (`bore_d = 0.4 * outer_d`):
    one name assigned arithmetic on numbers and earlier parameters only."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return False
    if not isinstance(node.targets[0], ast.Name) or node.targets[0].id == "result":
        return False
    allowed = (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Constant, ast.Load)
    for part in ast.walk(node.value):
        if isinstance(part, ast.Name):
            if part.id not in names:
                return False
        elif not isinstance(part, allowed) or (
            isinstance(part, ast.Constant) and not isinstance(part.value, int | float)
        ):
            return False
    return True


def cut_rows(rows: list[dict], whole_share: float, seed: int) -> list[int | None]:
    """Per row, where its program is cut for training (None: kept whole).

    CAD and scene rows outside the `whole_share` (a hash of seed and id picks them) stop after
    their parameter block; rows whose body is what the request asks for stay whole: code,
    compositional parts (each body is its own composition), repairs (the fix is the point) and
    pictures shown a look-alike (adapting its body, or leaving it, is the point).
    """
    cuts: list[int | None] = []
    for i, row in enumerate(rows):
        keep = (
            row["domain"] == "code"
            or row.get("family") == "compositional"
            or bool(row.get("repair"))
            or row.get("look_alike") is not None
            or _unit_hash(f"{seed}:whole:{row.get('id', i)}") < whole_share
        )
        cuts.append(None if keep else parameter_block_end(row["reference"]))
    return cuts


def length_grouped_batches(lengths: list[int], batch_size: int, seed: int) -> list[list[int]]:
    """Shuffled batches of indices whose lengths are close (little padding), in random order."""
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    chunk = batch_size * 64
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        batches += [part[j : j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def lr_at(step: int, total: int, config: SFTConfig, time_used: float = 0.0) -> float:
    """Learning rate of an optimizer step: linear warmup, then the configured decay.

    The decay follows the larger of the share of steps done and `time_used` (the share of the
    time budget spent, when the schedule runs by time too).
    """
    train = config.training
    if step < train.warmup_steps:
        return train.lr * (step + 1) / train.warmup_steps
    if train.schedule == "constant":
        return train.lr
    progress = (step - train.warmup_steps) / max(1, total - train.warmup_steps)
    progress = min(1.0, max(progress, time_used))
    decay = 0.5 * (1 + math.cos(math.pi * progress)) if train.schedule == "cosine" else 1 - progress
    return train.lr * (train.min_lr_ratio + (1 - train.min_lr_ratio) * decay)


def collate(
    examples: list[Example], pad_id: int, processor: Any | None = None
) -> dict[str, torch.Tensor]:
    """Right-padded input_ids, attention_mask and labels of a batch (and the pictures'
    pixel_values, in order, when its image tasks have any)."""
    import torch

    width = max(len(e.input_ids) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, example in enumerate(examples):
        n = len(example.input_ids)
        ids[row, :n] = torch.tensor(example.input_ids)
        labels[row, :n] = torch.tensor(example.labels)
        mask[row, :n] = 1
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    pictures = [path for example in examples for path in example.images]
    if pictures and processor is not None:
        from training.vlm import pixel_values

        batch["pixel_values"] = pixel_values(processor, pictures)
    return batch


def loss_sum(model: Any, batch: dict[str, torch.Tensor], bf16: bool) -> torch.Tensor:
    """Summed next-token loss over labelled positions (logits only where a label follows).

    The batch moves to the model's device (pictures in the model's dtype); `bf16` turns on
    bfloat16 autocast for that device's type.
    """
    import torch
    import torch.nn.functional as F

    device, dtype = _placement(model)
    batch = {key: value.to(device) for key, value in batch.items()}
    if "pixel_values" in batch:
        batch["pixel_values"] = batch["pixel_values"].to(dtype)
    labels = batch["labels"]
    labelled = (labels != IGNORE_INDEX).any(dim=0).nonzero()
    width = labels.shape[1]
    first = int(labelled[0]) if len(labelled) else width - 1
    keep = max(2, width - first + 1)  # positions first-1 .. width-1 predict first .. width
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    if "pixel_values" in batch:
        inputs["pixel_values"] = batch["pixel_values"]
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        try:
            logits = model(**inputs, use_cache=False, logits_to_keep=keep).logits
        except TypeError:  # a model without logits_to_keep
            logits = model(**inputs, use_cache=False).logits[:, width - keep :]
    targets = labels[:, width - keep + 1 :]
    return F.cross_entropy(
        logits[:, :-1].float().reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def _placement(model: Any) -> tuple[torch.device, torch.dtype]:
    """The device and dtype of a model's weights (a DeepSpeed engine's too)."""
    weight = next(model.parameters())
    return weight.device, weight.dtype


def train_device(config: SFTConfig) -> tuple[str, bool]:
    """The device the run trains on and whether it autocasts to bfloat16 there.

    `training.device: auto` defers to $GENSERVICE_DEVICE, then to the first GPU PyTorch sees;
    `training.bf16` unset means on a GPU (with bfloat16) and off on the CPU.
    """
    import torch

    from genservice.device import DeviceError, model_dtype, resolve_device

    wanted = config.training.device
    try:
        device = resolve_device(None if wanted == "auto" else wanted)
    except DeviceError as exc:
        raise SetupError(f"training.device: {exc}") from exc
    bf16 = config.training.bf16
    if bf16 is None:
        bf16 = model_dtype(device) == torch.bfloat16
    return device, bf16


def evaluate(
    model: Any,
    examples: list[Example],
    batch_size: int,
    pad_id: int,
    bf16: bool,
    processor: Any | None = None,
) -> float | None:
    """Mean loss per reply token over examples (None without any)."""
    import torch

    if not examples:
        return None
    lengths = [len(e.input_ids) for e in examples]
    order = sorted(range(len(examples)), key=lambda i: lengths[i])
    total, tokens = 0.0, 0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            chosen = [examples[i] for i in order[start : start + batch_size]]
            batch = collate(chosen, pad_id, processor)
            total += float(loss_sum(model, batch, bf16))
            tokens += int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())
    model.train(was_training)
    return total / max(1, tokens)


def latest_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint (step-NNNNNNN with a trainer state) in folder."""
    found = sorted(p for p in folder.glob("step-*") if (p / STATE_FILE).is_file())
    return found[-1] if found else None


def train_sft(
    config: SFTConfig,
    resume: bool | str | Path = False,
    command: str | None = None,
    show_progress: bool = True,
) -> Path:
    """Run SFT as configured (resume=True: from the latest checkpoint); return the model dir."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Writing model shards" bar at every checkpoint
    try:
        return _train_sft(config, resume, command, show_progress)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _train_sft(
    config: SFTConfig, resume: bool | str | Path, command: str | None, show_progress: bool
) -> Path:
    import torch

    started = time.monotonic()
    try:
        config.check_files()
    except ValueError as exc:
        raise SetupError(str(exc)) from exc
    train_cfg = config.training
    device, bf16 = train_device(config)
    if train_cfg.num_threads:
        torch.set_num_threads(train_cfg.num_threads)
    output = Path(config.output_dir)
    checkpoints = config.checkpoints
    checkpoint = _resume_point(checkpoints, resume)
    state: dict[str, Any] = {}
    if checkpoint is not None:
        # On the CPU first (a GPU run's state loads anywhere); the optimizer's state then
        # follows its parameters to the device.
        state = torch.load(checkpoint / STATE_FILE, weights_only=True, map_location="cpu")
        _check_same_run(state["config"], config, checkpoint)
    elif latest_checkpoint(checkpoints) is not None:
        raise SetupError(
            f"{checkpoints} already holds checkpoints: pass --resume to continue that run, "
            "or remove the folder (or set checkpoint_dir) to start a new one"
        )

    train_rows = load_tasks(config.data.train, config.data.train_splits, config.data.domains)
    if not train_rows:
        raise SetupError(
            f"{config.data.train}: no task rows with a reference in splits "
            f"{config.data.train_splits}"
            + (f" and domains {config.data.domains}" if config.data.domains else "")
        )
    val_source = config.data.val or config.data.train
    val_rows = load_tasks(val_source, config.data.val_splits, config.data.domains)
    random.Random(train_cfg.seed).shuffle(val_rows)
    val_rows = val_rows[: config.data.max_val_examples]

    base_summary = _base_summary(config)
    tokenizer, model, processor = _tokenizer_and_model(config, train_rows, checkpoint)
    model.to(device)
    from training.vlm import image_slots

    slots = image_slots(model)
    if train_cfg.language_lr == 0:
        _freeze_language_model(model, slots)
        train_rows, val_rows = _pictured(train_rows, "train"), _pictured(val_rows, "val")
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = tokenizer.eos_token_id
    fmt = reply_format(tokenizer)
    solved_index = None
    plain_share = 0.0
    if config.retrieval is not None:
        solved_index = ExampleIndex.from_tasks(
            train_rows, config.retrieval.per_family, config.retrieval.seed, train_cfg.max_seq_len
        )
        plain_share = config.retrieval.plain_share
        print(f"retrieval: {len(solved_index)} solved train tasks indexed", file=sys.stderr)
    share = config.data.whole_program_share
    cuts = cut_rows(train_rows, share, train_cfg.seed) if share < 1 else None
    train, dropped = _encode_all(
        tokenizer, train_rows, fmt, train_cfg.max_seq_len, solved_index, plain_share, cuts, slots
    )
    if not train:
        raise SetupError(
            f"every training example is longer than training.max_seq_len={train_cfg.max_seq_len}"
        )
    val, _ = _encode_all(
        tokenizer, val_rows, fmt, train_cfg.max_seq_len, solved_index, plain_share, None, slots
    )

    lengths = [len(e.input_ids) for e in train]
    batches_per_epoch = math.ceil(len(train) / train_cfg.batch_size)
    candidates = []
    if train_cfg.max_steps is not None:
        candidates.append(train_cfg.max_steps)
    if train_cfg.epochs is not None:
        candidates.append(
            max(1, math.ceil(train_cfg.epochs * batches_per_epoch / train_cfg.grad_accum))
        )
    total_steps = min(candidates)
    optimizer = _optimizer(model, config)
    step = 0
    tokens_seen = 0
    previous_time = 0.0
    if checkpoint is not None:
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        tokens_seen = int(state["tokens_seen"])
        previous_time = float(state["train_time_s"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(_as_random_state(state["python_rng"]))
    else:
        torch.manual_seed(train_cfg.seed)
        random.seed(train_cfg.seed)

    output.mkdir(parents=True, exist_ok=True)
    metrics_path = output / METRICS_FILE
    _truncate_metrics(metrics_path, step)
    n_params = sum(p.numel() for p in model.parameters())
    look_alike_rows = sum(e.with_look_alike for e in train)
    print(
        f"SFT: {len(train)} train examples ({dropped} longer than {train_cfg.max_seq_len} "
        f"tokens dropped), {len(val)} val; "
        + (f"{sum(e.with_example for e in train)} with an example; " if solved_index else "")
        + (f"{sum(not e.whole for e in train)} cut after their parameters; " if cuts else "")
        + (f"{look_alike_rows} show a look-alike; " if look_alike_rows else "")
        + f"{n_params / 1e6:.2f}M parameters; "
        f"{total_steps} steps of {train_cfg.batch_size}×{train_cfg.grad_accum} on {device}"
        + (" (bf16 autocast)" if bf16 else "")
        + (f"; resuming at step {step} from {checkpoint}" if checkpoint else ""),
        file=sys.stderr,
    )

    def batch_stream(first_batch: int) -> Iterator[list[Example]]:
        index = first_batch
        while True:
            epoch, position = divmod(index, batches_per_epoch)
            order = length_grouped_batches(lengths, train_cfg.batch_size, train_cfg.seed + epoch)
            for indices in order[position:]:
                yield [train[i] for i in indices]
            index = (epoch + 1) * batches_per_epoch

    def save_checkpoint() -> Path:
        return _save_checkpoint(
            checkpoints,
            step,
            model,
            processor or tokenizer,
            solved_index,
            {
                "step": step,
                "optimizer": optimizer.state_dict(),
                "tokens_seen": tokens_seen,
                "train_time_s": previous_time + time.monotonic() - started,
                "torch_rng": torch.get_rng_state(),
                "python_rng": random.getstate(),
                "config": config.to_dict(),
            },
            train_cfg.keep_checkpoints,
        )

    stream = batch_stream(step * train_cfg.grad_accum)
    stop_reason = "max_steps"
    last_loss: float | None = None
    val_loss: float | None = None
    window: list[float] = []
    window_tokens, window_start = 0, time.monotonic()
    stop_requested = _StopFlag()
    model.train()
    budget_s = train_cfg.max_minutes * 60 if train_cfg.max_minutes else math.inf
    with stop_requested.installed(), _progress(show_progress) as progress:
        task = progress.add_task("SFT", total=total_steps, completed=step, info="")
        while step < total_steps:
            micro = [next(stream) for _ in range(train_cfg.grad_accum)]
            label_tokens = sum(
                sum(1 for t in e.labels[1:] if t != IGNORE_INDEX) for b in micro for e in b
            )
            time_used = (
                (previous_time + time.monotonic() - started) / budget_s
                if train_cfg.schedule_by_time
                else 0.0
            )
            lr = lr_at(step, total_steps, config, time_used)
            for lr_group in optimizer.param_groups:
                lr_group["lr"] = lr * lr_group["lr_scale"]
            step_loss = 0.0
            for examples in micro:
                batch = collate(examples, pad_id, processor)
                loss = loss_sum(model, batch, bf16) / max(1, label_tokens)
                loss.backward()
                step_loss += float(loss.detach())
                window_tokens += int(batch["attention_mask"].sum())
            grad_norm = (
                float(torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip))
                if train_cfg.grad_clip
                else None
            )
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            window.append(step_loss)
            elapsed = previous_time + time.monotonic() - started
            if step % train_cfg.log_every == 0 or step == total_steps:
                now = time.monotonic()
                speed = window_tokens / max(1e-9, now - window_start)
                tokens_seen += window_tokens
                last_loss = sum(window) / len(window)
                _log(
                    metrics_path,
                    {
                        "event": "train",
                        "step": step,
                        "epoch": round(step * train_cfg.grad_accum / batches_per_epoch, 4),
                        "loss": last_loss,
                        "step_losses": window,
                        "lr": lr,
                        "grad_norm": grad_norm,
                        "tokens_per_s": round(speed, 1),
                        "tokens_seen": tokens_seen,
                        "elapsed_s": round(elapsed, 2),
                    },
                )
                progress.update(
                    task,
                    info=f"loss {last_loss:.4f}  {speed:,.0f} tok/s"
                    + (f"  val {val_loss:.4f}" if val_loss is not None else ""),
                )
                window, window_tokens, window_start = [], 0, now
            progress.update(task, completed=step)
            last_step = step == total_steps
            over_budget = elapsed >= budget_s
            if (train_cfg.eval_every and step % train_cfg.eval_every == 0) or (
                last_step or over_budget or stop_requested.set
            ):
                val_loss = evaluate(model, val, train_cfg.batch_size, pad_id, bf16, processor)
                if val_loss is not None:
                    _log(metrics_path, {"event": "eval", "step": step, "val_loss": val_loss})
            if over_budget and not last_step:
                stop_reason = "max_minutes"
            if stop_requested.set and not last_step:
                stop_reason = "interrupted"
            if (
                (train_cfg.save_every and step % train_cfg.save_every == 0)
                or last_step
                or stop_reason != "max_steps"
            ):
                save_checkpoint()
            if stop_reason != "max_steps":
                break
    if window:  # steps after the last log line
        tokens_seen += window_tokens
        last_loss = sum(window) / len(window)
    if stop_reason == "interrupted":
        print(f"stopped at step {step}; continue with --resume", file=sys.stderr)
        raise KeyboardInterrupt
    _save_final(model, tokenizer, output, fmt, solved_index, processor)
    carry_gallery(config.model.from_dir, output)
    if look_alike_rows:
        mark_look_alikes(output, look_alike_rows)
    summary = {
        "command": command if command is not None else shlex.join(sys.argv),
        "config": config.to_dict(),
        "stopped": stop_reason,
        "steps": step,
        "total_steps": total_steps,
        "epochs": round(step * train_cfg.grad_accum / batches_per_epoch, 4),
        "resumed_from": str(checkpoint) if checkpoint else None,
        "wall_time_s": round(time.monotonic() - started, 2),
        "train_time_s": round(previous_time + time.monotonic() - started, 2),
        "tokens_seen": tokens_seen,
        "final_train_loss": last_loss,
        "final_val_loss": val_loss,
        "data": _data_summary(
            config, val_source, train, val, dropped, len(solved_index) if solved_index else 0
        ),
        "model": {
            "architecture": type(model).__name__,
            "parameters": n_params,
            "vocab_size": len(tokenizer),
            "from": config.model.from_dir,
        },
        "num_threads": torch.get_num_threads(),
        "device": device,
        "bf16_autocast": bf16,
        "versions": _versions(),
    }
    if base_summary is not None:  # a fine-tune: the runs before it stay on record (model card)
        summary["base"] = base_summary
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    losses = f"train loss {last_loss:.4f}" if last_loss is not None else "no new steps"
    print(
        f"saved {output} after {step} steps ({stop_reason}); {losses}"
        + (f", val loss {val_loss:.4f}" if val_loss is not None else ""),
        file=sys.stderr,
    )
    return output


def _encode_all(
    tokenizer: Any,
    rows: list[dict],
    fmt: ReplyFormat,
    max_len: int,
    index: ExampleIndex | None = None,
    plain_share: float = 0.0,
    cuts: list[int | None] | None = None,
    slots: tuple[int, int] | None = None,
) -> tuple[list[Example], int]:
    """Examples no longer than max_len, and how many were dropped for being longer.

    With an index, each row's prompt carries its nearest solved example (never itself), as
    serving builds it, except a `plain_share` of rows (a hash of the id picks them) and rows
    whose example does not fit; a row too long with its example falls back to the plain prompt.
    `cuts` (from cut_rows) shortens programs.
    """
    prompts = _retrieval_prompts(tokenizer, rows, index, plain_share)
    encoded = []
    for row, messages, cut in zip(rows, prompts, cuts or [None] * len(rows), strict=True):
        example = encode_task(tokenizer, row, fmt, messages, cut, slots)
        if messages is not None and len(example.input_ids) > max_len:
            example = encode_task(tokenizer, row, fmt, cut_at=cut, slots=slots)
        else:
            example.with_example = messages is not None
        if row.get("look_alike") is not None:  # too long with it: the plain picture prompt
            example.with_look_alike = len(example.input_ids) <= max_len
            if not example.with_look_alike:
                plain = {k: v for k, v in row.items() if k != "look_alike"}
                example = encode_task(tokenizer, plain, fmt, cut_at=cut, slots=slots)
        example.whole = cut is None
        encoded.append(example)
    kept = [e for e in encoded if len(e.input_ids) <= max_len]
    return kept, len(encoded) - len(kept)


def _retrieval_prompts(
    tokenizer: Any, rows: list[dict], index: ExampleIndex | None, plain_share: float
) -> list[list[dict[str, Any]] | None]:
    """Each row's prompt with its retrieved example (None: the plain prompt)."""
    if index is None:
        return [None] * len(rows)
    wanted = [
        row.get("previous_program") is None
        and not row.get("repair")
        and not row.get("images")
        and _unit_hash(str(row.get("id", i))) >= plain_share
        for i, row in enumerate(rows)
    ]
    queries = [
        (row["domain"], row["prompt"], (row["id"],) if isinstance(row.get("id"), str) else ())
        for row, want in zip(rows, wanted, strict=True)
        if want
    ]
    nearest = iter(index.nearest_many(queries))
    prompts: list[list[dict[str, Any]] | None] = []
    for row, want in zip(rows, wanted, strict=True):
        example = next(nearest) if want else None
        if example is None:
            prompts.append(None)
            continue
        prompts.append(
            request_messages(tokenizer, index, row["domain"], row["prompt"], example=example)
        )
    return prompts


def _unit_hash(text: str) -> float:
    """A stable number in [0, 1) for a string (which rows go without an example)."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32


def _optimizer(model: Any, config: SFTConfig) -> Any:
    """AdamW; no weight decay on vectors (norms, biases); with `training.language_lr`, the
    language model's parameters learn at that rate, the vision encoder and projector at `lr`."""
    import torch

    train = config.training
    scale = 1.0 if train.language_lr is None else train.language_lr / train.lr
    groups: list[dict[str, Any]] = []
    for is_language, lr_scale in ((False, 1.0), (True, scale)):
        params = [
            p
            for name, p in model.named_parameters()
            if p.requires_grad and _is_language_parameter(name) == is_language
        ]
        groups += [
            {"params": [p for p in params if p.dim() >= 2], "lr_scale": lr_scale},
            {
                "params": [p for p in params if p.dim() < 2],
                "weight_decay": 0.0,
                "lr_scale": lr_scale,
            },
        ]
    groups = [group for group in groups if group["params"]]
    return torch.optim.AdamW(
        groups,
        lr=config.training.lr,
        betas=(config.training.betas[0], config.training.betas[1]),
        weight_decay=config.training.weight_decay,
    )


def _freeze_language_model(model: Any, slots: tuple[int, int] | None) -> None:
    """Stop the language model learning (`training.language_lr: 0`): only the vision encoder and
    projector train, so every text request is answered exactly as before."""
    if slots is None:
        raise SetupError(
            "training.language_lr: 0 freezes the language model, which leaves a text model "
            "nothing to train: set model.vision or give language_lr a positive rate"
        )
    for name, parameter in model.named_parameters():
        if _is_language_parameter(name):
            parameter.requires_grad_(False)


def _pictured(rows: list[dict], which: str) -> list[dict]:
    """The rows with a picture: with the language model frozen, a text row has nothing to teach."""
    pictured = [row for row in rows if row.get("images")]
    if not pictured and which == "train":
        raise SetupError(
            "training.language_lr: 0 trains only the vision encoder, and the training file "
            "has no rows with pictures"
        )
    if len(pictured) < len(rows):
        print(
            f"language model frozen: {len(rows) - len(pictured)} {which} rows without a "
            "picture left out",
            file=sys.stderr,
        )
    return pictured


def _is_language_parameter(name: str) -> bool:
    """Whether a parameter belongs to the language model (not a LLaVA vision tower or projector)."""
    return not any(part in name for part in ("vision_tower", "multi_modal_projector"))


def _data_summary(
    config: SFTConfig,
    val_source: str,
    train: list[Example],
    val: list[Example],
    dropped: int,
    indexed: int,
) -> dict[str, Any]:
    return {
        "train_file": config.data.train,
        "val_file": val_source,
        "train_examples": len(train),
        "dropped_too_long": dropped,
        "val_examples": len(val),
        "train_tokens": sum(len(e.input_ids) for e in train),
        "reply_tokens": sum(sum(1 for t in e.labels if t != IGNORE_INDEX) for e in train),
        "by_domain": dict(sorted(Counter(e.domain for e in train).items())),
        "with_retrieved_example": sum(e.with_example for e in train),
        "with_look_alike": sum(e.with_look_alike for e in train),
        "cut_after_parameters": sum(not e.whole for e in train),
        "retrieval": (
            None
            if config.retrieval is None
            else {**dataclasses.asdict(config.retrieval), "indexed": indexed}
        ),
    }


def _resume_point(checkpoints: Path, resume: bool | str | Path) -> Path | None:
    if resume is False:
        return None
    if resume is True:
        found = latest_checkpoint(checkpoints)
        if found is None:
            raise SetupError(f"--resume: no checkpoint in {checkpoints}")
        return found
    path = Path(resume)
    if not (path / STATE_FILE).is_file():
        raise SetupError(f"--resume: {path} is not a checkpoint (no {STATE_FILE})")
    return path


def _check_same_run(saved: dict, config: SFTConfig, checkpoint: Path) -> None:
    current = config.to_dict()
    for key in ("data", "model"):
        if saved.get(key) != current[key]:
            raise SetupError(
                f"{checkpoint} was trained with a different `{key}` section; resume with the "
                "config it was started with, or start a new run in another checkpoint_dir"
            )


def _as_random_state(saved: Any) -> tuple:
    version, internal, gauss = saved
    return (version, tuple(internal), gauss)


def _tokenizer_and_model(
    config: SFTConfig, rows: list[dict], checkpoint: Path | None
) -> tuple[Any, Any, Any]:
    """The tokenizer, the model and (a vision-language model's) processor to train."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.vlm import assemble_vlm, is_vlm_dir, load_vlm

    source = checkpoint or (Path(config.model.from_dir) if config.model.from_dir else None)
    if source is not None and is_vlm_dir(source):
        model, processor = load_vlm(source)
        return processor.tokenizer, model, processor
    if source is not None and config.model.vision is not None:
        # A text model and a vision encoder of this shape: joined here, trained together.
        model, processor = assemble_vlm(source, config.model.vision, config.training.seed)
        return processor.tokenizer, model, processor
    if source is not None:
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        _warn_if_resplit(tokenizer, Path(source))
        model = AutoModelForCausalLM.from_pretrained(
            str(source), local_files_only=True, dtype=torch.float32
        )
        if checkpoint is None:
            _ensure_chat_format(tokenizer, model)
        return tokenizer, model, None
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from training.tokenizer import iter_rows_texts, train_tokenizer

    init = config.model.init
    assert init is not None
    tokenizer = train_tokenizer(iter_rows_texts(rows), init.vocab_size)
    tokenizer.model_max_length = init.max_position_embeddings
    torch.manual_seed(config.training.seed)
    model_config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=init.hidden_size,
        intermediate_size=init.intermediate_size,
        num_hidden_layers=init.num_layers,
        num_attention_heads=init.num_heads,
        num_key_value_heads=init.num_kv_heads,
        max_position_embeddings=init.max_position_embeddings,
        tie_word_embeddings=init.tie_word_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": float(init.rope_theta)},
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    scratch = Qwen2ForCausalLM(model_config)
    return tokenizer, scratch.float(), None


def _warn_if_resplit(tokenizer: Any, folder: Path) -> None:
    """Say so when transformers loads a tokenizer with other splitting than tokenizer.json's."""
    saved = folder / "tokenizer.json"
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not saved.is_file():
        return
    on_disk, loaded = json.loads(saved.read_text()), json.loads(backend.to_str())
    if any(on_disk.get(k) != loaded.get(k) for k in ("normalizer", "pre_tokenizer")):
        print(
            f"warning: transformers loads {folder} as {type(tokenizer).__name__}, which splits "
            f"text differently from its tokenizer.json: a model trained with that file's "
            "splitting now sees other token sequences (retrain its tokenizer with this code)",
            file=sys.stderr,
        )


def _ensure_chat_format(tokenizer: Any, model: Any) -> None:
    """Give a tokenizer without a chat template the ChatML one (and its tokens)."""
    from training.tokenizer import CHAT_TEMPLATE, IM_END, IM_START

    if tokenizer.chat_template:
        return
    added = tokenizer.add_special_tokens({"additional_special_tokens": [IM_START, IM_END]})
    tokenizer.chat_template = CHAT_TEMPLATE
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or IM_END
    if added or len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer))


def _save_checkpoint(
    folder: Path,
    step: int,
    model: Any,
    text_files: Any,
    examples: ExampleIndex | None,
    state: dict,
    keep: int,
) -> Path:
    """Save a resumable checkpoint; `text_files`: the tokenizer, or a VLM's processor."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"step-{step:07d}"
    partial = folder / f".{final.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial))
    text_files.save_pretrained(str(partial))
    if examples is not None:  # a checkpoint is a usable model, so it carries the index
        examples.save(partial)
    torch.save(state, partial / STATE_FILE)
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    complete = sorted(p for p in folder.glob("step-*") if (p / STATE_FILE).is_file())
    for old in complete[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _base_summary(config: SFTConfig) -> dict[str, Any] | None:
    """The training summary of the model a fine-tune starts from, when it has one."""
    if config.model.from_dir is None:
        return None
    path = Path(config.model.from_dir) / SUMMARY_FILE
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _save_final(
    model: Any,
    tokenizer: Any,
    output: Path,
    fmt: ReplyFormat,
    index: ExampleIndex | None,
    processor: Any | None = None,
) -> None:
    from transformers import GenerationConfig

    end_ids = tokenizer.encode(fmt.end, add_special_tokens=False)
    eos = [end_ids[-1]] if end_ids else []
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos:
        eos.append(tokenizer.eos_token_id)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
    model.generation_config = GenerationConfig(
        eos_token_id=eos[0] if len(eos) == 1 else eos,
        pad_token_id=pad,
        bos_token_id=getattr(model.config, "bos_token_id", None),
    )
    model.config.eos_token_id = eos[0]
    model.config.pad_token_id = pad
    model.save_pretrained(str(output))
    (processor or tokenizer).save_pretrained(str(output))  # a processor saves its tokenizer
    # The index belongs to these weights: a model trained without one must not keep an old one.
    shutil.rmtree(output / INDEX_DIR, ignore_errors=True)
    if index is not None:
        index.save(output)


def _log(path: Path, record: dict) -> None:
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")


def _truncate_metrics(path: Path, step: int) -> None:
    """Keep the log lines up to `step` (a resumed run rewrites what came after)."""
    if not path.exists():
        return
    if step == 0:
        path.unlink()
        return
    kept = [
        line
        for line in path.read_text().splitlines()
        if line.strip() and json.loads(line).get("step", 0) <= step
    ]
    path.write_text("".join(line + "\n" for line in kept))


def _versions() -> dict[str, str]:
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__}


class _StopFlag:
    """Ctrl-C / SIGTERM ask the loop to stop at the end of the step and save; twice aborts."""

    def __init__(self) -> None:
        self.set = False

    def _handle(self, signum: int, frame: Any) -> None:
        if self.set:
            raise KeyboardInterrupt
        self.set = True
        print("\nstopping after this step (again to abort)…", file=sys.stderr)

    def installed(self) -> Any:
        import contextlib

        @contextlib.contextmanager
        def scope() -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

        return scope()


def _progress(enabled: bool) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )
