"""Accelerator proof run: the sampler, generation throughput, training steps and splat refinement
measured on one device, written as gpu.json and gpu.md (a table of every figure).

Sections (each timed and guarded: a failing section records its error and the next one runs;
together they keep to a time budget, `--budget`, default 420 s, 150 s with `--tiny`):
- sampler: greedy tokens (temperature 0) of the batched sampler on the device, float32, against
  the CPU float32 reference, token for token, with the shipped model on three prompts; then the
  device's low precision (bfloat16) against the same reference: the share of prompts that match
  and where each first diverges (bfloat16 is not expected to match). On a CPU-only run both
  sides are the CPU (a rehearsal of the same code).
- throughput: best-of-8 candidates/s and time to first token (prefill and first token of the 8)
  of the shipped model and of random-initialised causal LMs of the Qwen2-0.5B and Qwen2-1.5B
  shapes (bfloat16 on a GPU; nothing downloaded), three ways at a fixed length so the work is
  equal: the batched sampler (one prefill, KV cache shared), one candidate at a time, and
  transformers' generate(num_return_sequences=8) (bench/generate.py `compare_paths`).
- train: a few SFT steps under DeepSpeed ZeRO-2 (training/configs/deepspeed/zero2.json on a GPU,
  zero2_cpu.json on the CPU) of the same models on code tasks, with the SFT trainer's loss
  (training/sft.py): step time, tokens/s and MFU = 6 x parameters x tokens/s / the device's
  dense bfloat16 peak (PEAK_BF16; null on the CPU); then a few steps of the real RL trainer
  (training/rl.py) on code tasks, skipped with the reason when the sandbox is unavailable.
- splat: on a GPU, gsplat's picture of the sample part's splats against the CPU renderer's
  (PSNR); then `exporters.splat_refine.refine_splats` of those splats on the device: held-out
  PSNR, SSIM and silhouette IoU before and after, steps/s. The part is the flange tessellated by
  bench/gpu/prepare.sh (bench/gpu/data/part.npz), else a block with a peg made with trimesh.

`--tiny` shrinks everything (small random shapes instead of the Qwen2 ones, a few tokens, one
RL step) so that the whole run rehearses on a CPU in about a minute.

Usage: bench/gpu/run.sh [--device auto|cpu|cuda|cuda:N] [--tiny] [--out DIR]
       [--sections sampler,throughput,train,splat] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import math
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "genservice" / "models" / "tiny"
PART = Path(__file__).resolve().parent / "data" / "part.npz"
DEEPSPEED_CONFIGS = REPO / "training" / "configs" / "deepspeed"
DEFAULT_OUT = REPO / "bench" / "results" / "gpu"
FULL_BUDGET_S = 420.0
TINY_BUDGET_S = 150.0  # a cap: the tiny run takes about a minute on two busy cores
GRACE_S = 60.0  # past the budget, a run still inside a section is stopped outright
# The share of the budget kept for each section while the ones before it run: a section may use
# what is left but the reserves of the sections after it.
RESERVES = {"sampler": 0.1, "throughput": 0.3, "train": 0.35, "splat": 0.05}

# Dense (no sparsity) bfloat16 tensor-core peak, FLOP/s, from NVIDIA's data sheets; the first
# name contained in the device's name wins.
PEAK_BF16: tuple[tuple[str, float, str], ...] = (
    ("H200 NVL", 835e12, "NVIDIA H200 NVL data sheet: 835 TFLOP/s dense BF16"),
    ("H200", 989e12, "NVIDIA H200 SXM data sheet: 989 TFLOP/s dense BF16"),
    ("H100 PCIe", 756e12, "NVIDIA H100 PCIe data sheet: 756 TFLOP/s dense BF16"),
    ("H100", 989e12, "NVIDIA H100 SXM data sheet: 989 TFLOP/s dense BF16"),
    ("A100", 312e12, "NVIDIA A100 data sheet: 312 TFLOP/s dense BF16"),
)

PROMPTS = (
    ("cad", "A mounting plate 80 mm by 50 mm, 6 mm thick, with four 5 mm holes 8 mm from each "
     "corner."),
    ("code", "Please implement keep_first(people) so that it returns `people` without "
     "duplicates. Keep the first occurrence of each item, in the original order."),
    ("scene", "A small table with four legs and a lamp standing on it."),
)  # fmt: skip


@dataclass(frozen=True)
class Shape:
    """A Qwen2 causal LM built from its config with random weights (vocab None: the shipped
    tokenizer's)."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int | None


QWEN2_SHAPES = (
    Shape("qwen2-0.5b-shape", 896, 24, 14, 2, 4864, 151936),
    Shape("qwen2-1.5b-shape", 1536, 28, 12, 2, 8960, 151936),
)
TINY_SHAPES = (
    Shape("tiny-shape-h64", 64, 2, 4, 2, 128, None),
    Shape("tiny-shape-h96", 96, 2, 4, 2, 192, None),
)


@dataclass(frozen=True)
class Plan:
    """How much each section measures."""

    sampler_prompts: int  # of PROMPTS
    sampler_tokens: int  # greedy tokens per prompt
    n: int  # candidates per request
    tokens: int  # new tokens per candidate (throughput)
    repeats: int  # timed rounds per path, after one warm-up
    first_token_repeats: int
    shapes: tuple[Shape, ...]
    sft_batch: int
    sft_steps: int  # timed, after one warm-up step
    sft_max_len: int
    rl_steps: int
    rl_prompts: int
    rl_group: int
    rl_tokens: int
    rl_micro: int
    splat_steps: int
    splat_views: int
    splat_size: int
    splat_count: int | None


FULL = Plan(
    sampler_prompts=3, sampler_tokens=64, n=8, tokens=128, repeats=3, first_token_repeats=5,
    shapes=QWEN2_SHAPES, sft_batch=16, sft_steps=4, sft_max_len=1024, rl_steps=3, rl_prompts=4,
    rl_group=8, rl_tokens=256, rl_micro=8, splat_steps=200, splat_views=8, splat_size=128,
    splat_count=None,
)  # fmt: skip
TINY = Plan(
    sampler_prompts=2, sampler_tokens=8, n=8, tokens=8, repeats=1, first_token_repeats=2,
    shapes=TINY_SHAPES, sft_batch=2, sft_steps=1, sft_max_len=384, rl_steps=1, rl_prompts=2,
    rl_group=2, rl_tokens=16, rl_micro=2, splat_steps=2, splat_views=2, splat_size=32,
    splat_count=300,
)  # fmt: skip


class OutOfTime(Exception):
    """A section ran past its share of the time budget."""


@dataclass
class Run:
    """What every section gets: the device, the plan, a scratch folder and the clock."""

    device: str
    tiny: bool
    plan: Plan
    scratch: Path
    section_deadline: float = math.inf

    def left(self) -> float:
        """Seconds left to the running section."""
        return self.section_deadline - time.monotonic()

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def sync(self) -> None:
        """Wait for the device's queued work (timings end when the work does)."""
        if self.cuda:
            import torch

            torch.cuda.synchronize(self.device)


# ------------------------------------------------------------------------------- sampler
def sampler_section(run: Run) -> dict[str, Any]:
    """Greedy tokens on the device against the CPU float32 reference, token for token."""
    import torch

    from genservice.device import model_dtype
    from genservice.generation.loader import load_model
    from genservice.generation.sampler import sample

    tokens = run.plan.sampler_tokens
    prompts = PROMPTS[: run.plan.sampler_prompts]

    def greedy(loaded: Any) -> list[list[int]]:
        out = []
        for domain, prompt in prompts:
            messages = loaded.messages(domain, prompt)
            (reply,) = sample(loaded, messages, n=1, seed=0, max_new_tokens=tokens, temperature=0)
            out.append(list(reply.tokens))
        return out

    reference = load_model(SHIPPED, device="cpu", dtype=torch.float32)
    want = greedy(reference)
    del reference
    result: dict[str, Any] = {
        "model": "shipped",
        "reference": "cpu float32",
        "prompts": [domain for domain, _ in prompts],
        "max_new_tokens": tokens,
        "reference_tokens": [len(t) for t in want],
    }
    if run.cuda:
        result["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
    loaded = load_model(SHIPPED, device=run.device, dtype=torch.float32)
    result["float32"] = {"device": run.device, **_compare(want, greedy(loaded))}
    del loaded
    _free()
    low = model_dtype(run.device) if run.cuda else torch.bfloat16
    loaded = load_model(SHIPPED, device=run.device, dtype=low)
    label = str(low).removeprefix("torch.")
    result[label] = {"device": run.device, **_compare(want, greedy(loaded))}
    if label != "bfloat16":  # a GPU without bfloat16: float16 stands in
        result["bfloat16"] = {"skipped": f"{run.device} has no bfloat16; {label} measured"}
    return result


def _compare(want: list[list[int]], got: list[list[int]]) -> dict[str, Any]:
    """How many prompts match token for token, and where each first diverges (None: never)."""
    firsts = [_first_divergence(a, b) for a, b in zip(want, got, strict=True)]
    matching = sum(first is None for first in firsts)
    return {
        "matching": matching,
        "prompts": len(want),
        "share": matching / len(want),
        "all_match": matching == len(want),
        "first_divergence": firsts,
        "tokens": [len(t) for t in got],
    }


def _first_divergence(a: list[int], b: list[int]) -> int | None:
    for position, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return position
    return None if len(a) == len(b) else min(len(a), len(b))


# ---------------------------------------------------------------------------- throughput
def throughput_section(run: Run) -> dict[str, Any]:
    """Best-of-n candidates/s and time to first token: the shipped model, then the shapes."""
    from genservice.generation.loader import load_model

    plan = run.plan
    shipped = load_model(SHIPPED, device=run.device)  # bfloat16 on a GPU, float32 on the CPU
    messages = shipped.messages(*PROMPTS[0])
    models: dict[str, Any] = {}
    result: dict[str, Any] = {
        "n": plan.n,
        "max_new_tokens": plan.tokens,
        "repeats": plan.repeats,
        "prompt": PROMPTS[0][0],
        "models": models,
    }
    todo: list[tuple[str, Callable[[], Any]]] = [("shipped", lambda: shipped)]
    todo += [(shape.name, _shape_loader(shape, shipped, run)) for shape in plan.shapes]
    for number, (name, make) in enumerate(todo):
        try:
            loaded = make()
            models[name] = _throughput(run, loaded, messages)
            models[name]["random_weights"] = name != "shipped"
            del loaded
            _free()
        except OutOfTime:
            models[name] = {"skipped": "stopped at the section's share of the time budget"}
            for later, _ in todo[number + 1 :]:
                models[later] = {"skipped": "time budget"}
            result["status"] = "partial"
            break
        except Exception as exc:  # one model failing (out of memory, say) leaves the others
            models[name] = _failure(exc)
            result["status"] = "partial"
            _free()
    return result


def _throughput(run: Run, loaded: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    import dataclasses

    from bench.generate import compare_paths
    from genservice.generation.sampler import sample

    plan = run.plan
    endless = dataclasses.replace(loaded, eos_token_ids=(-1,))  # fixed length: equal work
    first: list[float] = []
    for attempt in range(plan.first_token_repeats + 1):  # the first is a warm-up
        run.sync()
        begun = time.perf_counter()
        sample(endless, messages, n=plan.n, seed=attempt, max_new_tokens=1)
        run.sync()
        if attempt:
            first.append(time.perf_counter() - begun)
    found = compare_paths(loaded, messages, plan.n, plan.tokens, plan.repeats)  # fixed length
    for row in found["paths"].values():
        row["tokens_per_s"] = row["candidates_per_s"] * plan.tokens
    model = loaded.model
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": str(model.dtype).removeprefix("torch."),
        "first_token_s": statistics.median(first),
        "first_token_candidates": plan.n,
        **found,
    }


def _shape_loader(shape: Shape, shipped: Any, run: Run) -> Callable[[], Any]:
    """Builds a LoadedModel of a random Qwen2 of `shape`, in the device's dtype, with the
    shipped tokenizer (its ids are a subset of the shape's vocabulary)."""

    def make() -> Any:
        import dataclasses

        from genservice.device import model_dtype

        model = random_causal(shape, shipped, run.device, model_dtype(run.device))
        return dataclasses.replace(
            shipped, model=model, processor=None, kind="causal", model_id=shape.name
        )

    return make


def random_causal(shape: Shape, shipped: Any, device: str, dtype: Any) -> Any:
    """A random-initialised Qwen2 causal LM of `shape`, made on the device (nothing downloaded)."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    from genservice.device import ATTENTION

    tokenizer = shipped.tokenizer
    config = Qwen2Config(
        vocab_size=shape.vocab or len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
        eos_token_id=shipped.eos_token_ids[0],
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=ATTENTION)
    return model.to(device).eval()


# --------------------------------------------------------------------------------- train
def train_section(run: Run) -> dict[str, Any]:
    """SFT steps under DeepSpeed ZeRO-2 (shipped model and shapes), then RL trainer steps."""
    import torch

    from genservice.generation.loader import load_model
    from training.sft import encode_task, reply_format
    from training.throughput import init_deepspeed

    version = init_deepspeed(run.cuda)
    peak, source = peak_bf16(run.device)
    tasks = code_tasks(run.scratch / "tasks.jsonl")
    base = load_model(SHIPPED, device="cpu", dtype=torch.float32)  # tokenizer and end tokens
    fmt = reply_format(base.tokenizer)
    examples = [encode_task(base.tokenizer, row, fmt) for row in tasks]
    result: dict[str, Any] = {
        "deepspeed": version,
        "zero_stage": 2,
        "config": _ds_config_name(run),
        "optimizer": "AdamW (torch.optim, DeepSpeed torch_adam: no op to build)",
        "code_tasks": len(tasks),
        "peak_flops": peak,
        "peak_source": source,
        "mfu_formula": "6 x parameters (embeddings included) x tokens/s / peak_flops",
    }
    sft: dict[str, Any] = {}
    result["sft"] = sft
    sft_until = time.monotonic() + 0.4 * run.left()  # the rest is the RL run's
    todo = ["shipped", *(shape.name for shape in run.plan.shapes)]
    for number, name in enumerate(todo):
        if time.monotonic() > sft_until:
            for later in todo[number:]:
                sft[later] = {"skipped": "time budget"}
            break
        try:
            sft[name] = _sft_steps(run, name, base, examples, peak)
        except OutOfTime:
            sft[name] = {"skipped": "stopped at the section's share of the time budget"}
            result["rl"] = {"skipped": "time budget"}
            result["status"] = "partial"
            return result
        except Exception as exc:  # one model failing leaves the others to measure
            sft[name] = _failure(exc)
            result["status"] = "partial"
        _free()
    try:
        result["rl"] = _rl_steps(run, tasks)
    except OutOfTime:
        result["rl"] = {"skipped": "stopped at the section's share of the time budget"}
        result["status"] = "partial"
    except Exception as exc:
        result["rl"] = _failure(exc)
        result["status"] = "partial"
    return result


def code_tasks(path: Path, count: int = 80) -> list[dict[str, Any]]:
    """Code-domain task rows from the corpus builder (no CadQuery needed), also written as JSONL
    for the RL trainer."""
    from training.corpus.build import build_corpus

    rows = list(build_corpus(count, 0, domains=["code"]))
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def peak_bf16(device: str) -> tuple[float | None, str]:
    """The device's dense bfloat16 peak in FLOP/s and where the figure comes from."""
    if not device.startswith("cuda"):
        return None, "no peak for the CPU: MFU is not reported"
    import torch

    name = torch.cuda.get_device_name(device)
    for key, flops, source in PEAK_BF16:
        if key in name:
            return flops, source
    return None, f"no peak on record for {name}: MFU is not reported"


def _ds_config_name(run: Run) -> str:
    return "zero2.json" if run.cuda else "zero2_cpu.json"


def _ds_config(run: Run, micro_batch: int, lr: float) -> dict[str, Any]:
    """The shipped ZeRO-2 JSON with its "auto" fields filled in; AdamW from torch (DeepSpeed's
    fused Adam would compile a CUDA op on first use, which needs nvcc)."""
    raw = json.loads((DEEPSPEED_CONFIGS / _ds_config_name(run)).read_text())
    raw["train_micro_batch_size_per_gpu"] = micro_batch
    raw["gradient_accumulation_steps"] = 1
    raw["gradient_clipping"] = 1.0
    params = raw.setdefault("optimizer", {"type": "AdamW", "params": {}}).setdefault("params", {})
    params.update(lr=lr, weight_decay=0.0, torch_adam=True)
    return raw


def _sft_steps(run: Run, name: str, base: Any, examples: list[Any], peak: float | None) -> dict:
    """A few SFT steps of one model under DeepSpeed (float32 weights; bfloat16 where the
    config says so), with the SFT trainer's loss: step time, tokens/s, MFU."""
    import torch

    from genservice.generation.loader import load_model
    from training.throughput import deepspeed_sft_steps

    plan = run.plan
    if name == "shipped":
        model = load_model(SHIPPED, device=run.device, dtype=torch.float32).model
    else:
        shape = next(s for s in plan.shapes if s.name == name)
        model = random_causal(shape, base, run.device, torch.float32)
    model.train()
    tokenizer = base.tokenizer
    examples = [e for e in examples if len(e.input_ids) <= plan.sft_max_len]
    examples.sort(key=lambda e: len(e.input_ids))  # batches of similar length: little padding
    batches = [
        examples[start : start + plan.sft_batch]
        for start in range(0, len(examples) - plan.sft_batch + 1, plan.sft_batch)
    ]
    if not batches:
        raise ValueError(f"fewer than {plan.sft_batch} code tasks fit {plan.sft_max_len} tokens")
    spread = [batches[i * len(batches) // (plan.sft_steps + 1)] for i in range(plan.sft_steps + 1)]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    try:
        measured = deepspeed_sft_steps(
            model, spread, _ds_config(run, plan.sft_batch, 1e-5), pad, run.sync
        )
    finally:
        del model
    return {
        **measured,
        "random_weights": name != "shipped",
        "micro_batch": plan.sft_batch,
        "mfu": 6 * measured["parameters"] * measured["tokens_per_s"] / peak if peak else None,
    }


def _rl_steps(run: Run, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """A few steps of the real RL trainer on code tasks, or why it cannot run here."""
    from validators.sandbox import SandboxUnavailable
    from validators.sandbox.isolation import probe

    reason = probe()
    if reason:
        return {"skipped": f"no sandbox: {reason}"}
    from training.rl import RLTrainer
    from training.rl_config import RLConfig

    plan = run.plan
    folder = run.scratch / "rl"
    folder.mkdir(parents=True, exist_ok=True)
    ds_path = folder / _ds_config_name(run)
    raw_ds = json.loads((DEEPSPEED_CONFIGS / _ds_config_name(run)).read_text())
    raw_ds["optimizer"]["params"]["torch_adam"] = True  # no CUDA op to compile
    ds_path.write_text(json.dumps(raw_ds))
    raw = {
        "data": {"tasks": str(run.scratch / "tasks.jsonl"), "domains": ["code"],
                 "heldout_tasks": 0, "audit_tasks": 0},
        "model": {"from": str(SHIPPED)},
        "rollout": {"prompts_per_step": plan.rl_prompts, "group_size": plan.rl_group,
                    "max_new_tokens": plan.rl_tokens, "reward_workers": 2},
        "loss": {"type": "dapo", "max_resample": 0, "dynamic_sampling": False,
                 "log_kl": False, "overlong_buffer": min(100, plan.rl_tokens // 4)},
        "training": {"lr": 1e-5, "warmup_steps": 0, "micro_batch": plan.rl_micro,
                     "updates_per_rollout": 1, "max_steps": plan.rl_steps,
                     "max_minutes": max(0.1, run.left() / 60), "save_every": 1000,
                     "heldout_every": 0},
        "deepspeed": str(ds_path),
        "output_dir": str(folder / "model"),
        "run_dir": str(folder / "run"),
    }  # fmt: skip
    config = RLConfig.from_dict(raw)
    trainer = RLTrainer(config, show_progress=False)
    begun = time.perf_counter()
    try:
        trainer.train()
    except SandboxUnavailable as exc:
        return {"skipped": f"no sandbox: {exc}"}
    finally:
        pool = getattr(trainer, "pool", None)
        if pool is not None:
            pool.close()
        engine = getattr(trainer, "engine", None)
        if engine is not None:
            engine.destroy()
    wall = time.perf_counter() - begun
    lines = (folder / "run" / "metrics.jsonl").read_text().splitlines()
    steps = [r for r in map(json.loads, lines) if r.get("event") == "step"]
    if not steps:
        raise RuntimeError("the RL run logged no step")
    step_s = [r["timing"]["step_s"] for r in steps]
    phases = sorted({k for r in steps for k in r["timing"]} - {"step_s"})
    return {
        "model": "shipped",
        "steps": len(steps),
        "prompts_per_step": plan.rl_prompts,
        "group_size": plan.rl_group,
        "max_new_tokens": plan.rl_tokens,
        "step_s": step_s,
        "step_s_median": statistics.median(step_s),
        # Sampled tokens per second of a whole step (generation, validation and update), as
        # the trainer logs it.
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in steps),
        "samples_per_s": statistics.median(r["samples_per_s"] for r in steps),
        "phase_s_median": {
            k: statistics.median(r["timing"].get(k, 0.0) for r in steps) for k in phases
        },
        "reward": [r["reward"] for r in steps],
        "mfu": None,
        "mfu_note": "RL steps are mostly sampling and validation: MFU is reported for SFT",
        "wall_s": wall,
    }


# --------------------------------------------------------------------------------- splat
def splat_section(device: str, tiny: bool) -> dict[str, Any]:
    """Refine the splats of a sample part on `device`: quality on held-out views before and
    after (against the CPU renderer's flat-coloured pictures of the mesh), time, and on a GPU
    how closely gsplat's picture of the same splats matches the CPU renderer's."""
    import numpy as np
    import torch

    from exporters.splat import gaussians_from_parts
    from exporters.splat_refine import psnr, refine_splats
    from exporters.splat_render import SplatTensors, bounding_sphere, look_at_cameras, render

    plan = TINY if tiny else FULL
    part, source = sample_part()
    gaussians = gaussians_from_parts([part], count=plan.splat_count)
    result: dict[str, Any] = {"part": source, "gaussians": gaussians.count}
    if device.startswith("cuda"):
        from exporters.splat_refine import gsplat_rasterizer

        begun = time.perf_counter()
        rasterize = gsplat_rasterizer(device)
        tensors = SplatTensors(
            *(t.float().to(device) for t in vars(SplatTensors.of(gaussians)).values())
        )
        cameras = look_at_cameras(*bounding_sphere([part]), 4, plan.splat_size)
        agreement = []
        for camera in cameras:
            rgb, _ = rasterize(tensors, camera)
            cpu_rgb, _ = render(gaussians, camera)
            agreement.append(psnr(rgb.float().cpu().clamp(0, 1), torch.from_numpy(cpu_rgb).float()))
        result["gsplat_vs_cpu_psnr"] = float(np.mean(agreement))
        result["gsplat_first_use_s"] = time.perf_counter() - begun  # includes its JIT build
    begun = time.perf_counter()
    refined = refine_splats(
        gaussians, [part], plan.splat_steps, device, views=plan.splat_views, size=plan.splat_size
    )
    return result | {
        "steps": plan.splat_steps,
        "views": plan.splat_views,
        "size": plan.splat_size,
        "before": dict(refined.before),
        "after": dict(refined.after),
        "seconds": float(refined.seconds),
        "steps_per_s": plan.splat_steps / max(refined.seconds, 1e-9),
        "wall_s": time.perf_counter() - begun,
        "backend": refined.backend,
    }


def sample_part() -> tuple[Any, str]:
    """The tessellated sample part (bench/gpu/data/part.npz, made by prepare.sh from a CAD
    sample), else a block with a peg built with trimesh (no CAD packages needed)."""
    import numpy as np

    from exporters.parts import PartMesh

    if PART.is_file():
        with np.load(PART) as data:
            part = PartMesh("part", data["vertices"], data["triangles"], None, (0.8, 0.35, 0.2, 1))
        return part, str(PART.relative_to(REPO))
    import trimesh

    block = trimesh.creation.box((30, 20, 6))
    peg = trimesh.creation.cylinder(radius=4, height=14, sections=32)
    mesh = trimesh.util.concatenate([block, peg])
    part = PartMesh(
        "part", np.asarray(mesh.vertices), np.asarray(mesh.faces), None, (0.8, 0.35, 0.2, 1)
    )
    return part, "block with a peg (trimesh)"


# --------------------------------------------------------------------------------- report
def _failure(exc: BaseException) -> dict[str, Any]:
    return {
        "error": f"{type(exc).__name__}: {exc}".strip()[:2000],
        "traceback": traceback.format_exc()[-6000:],
    }


def _free() -> None:
    gc.collect()
    with contextlib.suppress(Exception):
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise OutOfTime in the main thread once `seconds` have passed."""
    if seconds <= 0:
        raise OutOfTime("no time left in the budget")
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise OutOfTime(f"stopped after {seconds:.0f} s, the section's share of the budget")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_section(name: str, work: Callable[[], dict[str, Any]], seconds: float) -> dict[str, Any]:
    """One section, timed and guarded: its figures, or its error; never raises (but ^C)."""
    begun, cpu = time.perf_counter(), time.process_time()
    try:
        with time_limit(seconds):
            found = work()
        status = found.pop("status", "skipped" if "skipped" in found else "ok")
        result = {"status": status, **found}
    except OutOfTime as exc:
        result = {"status": "error", "error": f"time budget: {exc}"}
    except Exception as exc:
        result = {"status": "error", **_failure(exc)}
    result["seconds"] = time.perf_counter() - begun
    result["cpu_s"] = time.process_time() - cpu  # this process, all its threads
    result["limit_s"] = seconds
    _free()
    print(f"[gpu bench] {name}: {result['status']} in {result['seconds']:.1f} s", file=sys.stderr)
    return result


def environment(device: str) -> dict[str, Any]:
    """Date, device and versions for the report's head."""
    from importlib import metadata

    import torch

    from genservice.device import describe

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("torch", "transformers", "deepspeed", "accelerate", "gsplat"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    versions["cuda"] = torch.version.cuda
    info = describe(device)
    if not device.startswith("cuda"):
        info["name"] = _cpu_name()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "device": info,
        "versions": versions,
        "commit": _commit(),
    }


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"cpu ({line.split(':', 1)[1].strip()}, {os.cpu_count()} cores)"
    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def _commit() -> str | None:
    import subprocess

    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
            timeout=5,
        )  # fmt: skip
        if done.returncode == 0:
            return done.stdout.strip()
    return None


def markdown(report: dict[str, Any]) -> str:
    """The report as one table: the run's head, then every figure of every section."""
    env = report.get("environment", {})
    device = env.get("device", {})
    versions = env.get("versions", {})
    name = device.get("name", "?")
    if "memory_gib" in device:
        name += f" ({device['memory_gib']} GiB)"
    head = [
        ("date", env.get("date")),
        ("device", f"{device.get('device', '?')}: {name}"),
        ("dtype on the device", device.get("dtype")),
        *((("torch threads", device["threads"]),) if "threads" in device else ()),
        *((package, version) for package, version in versions.items()),
        ("commit", env.get("commit")),
        ("mode", "tiny (rehearsal)" if report.get("tiny") else "full"),
        ("time budget s", report.get("budget_s")),
        ("total s", report.get("total_s")),
    ]
    lines = [
        "# Accelerator proof run",
        "",
        "| section | figure | value |",
        "|---|---|---|",
    ]
    lines += [f"| run | {key} | {_cell(value)} |" for key, value in head]
    for section, found in report.get("sections", {}).items():
        for key, value in _flatten(found):
            if key == "traceback":
                continue
            lines.append(f"| {section} | {key} | {_cell(value)} |")
    return "\n".join(lines) + "\n"


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        rows: list[tuple[str, Any]] = []
        for key, inner in value.items():
            rows += _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        rows = []
        for index, inner in enumerate(value):
            rows += _flatten(inner, f"{prefix}[{index}]")
        return rows
    return [(prefix, value)]


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def write(report: dict[str, Any], out: Path) -> None:
    """gpu.json and gpu.md in `out` (rewritten after every section)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / "gpu.md").write_text(markdown(report))


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections within the budget and write the report."""
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--tiny", action="store_true", help="small shapes, few tokens (CI)")
    parser.add_argument("--out", type=Path, help="folder for gpu.json and gpu.md")
    parser.add_argument("--sections", default=",".join(RESERVES), help="comma-separated")
    parser.add_argument("--budget", type=float, help="seconds for the whole run")
    parser.add_argument(
        "--threads",
        type=int,
        help="torch CPU threads (default: 1 with --tiny on the CPU, where a busy machine makes "
        "more threads wait on each other; else torch's choice)",
    )
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(RESERVES))
    if unknown or not sections:
        parser.error(f"--sections: unknown {unknown}; choose from {list(RESERVES)}")
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else DEFAULT_OUT)
    budget = args.budget or (TINY_BUDGET_S if args.tiny else FULL_BUDGET_S)
    if args.device == "cpu":  # nothing (DeepSpeed, the RL trainer) may pick a GPU then
        os.environ["CUDA_VISIBLE_DEVICES"] = ""

    from transformers.utils import logging as hf_logging

    from genservice.device import DeviceError, resolve_device

    hf_logging.disable_progress_bar()
    try:
        device = resolve_device(args.device)
    except DeviceError as exc:
        parser.error(str(exc))
    threads = args.threads or (1 if args.tiny and device == "cpu" else None)
    if threads:
        import torch

        torch.set_num_threads(threads)
    if device.startswith("cuda:"):
        os.environ.setdefault("LOCAL_RANK", device.split(":", 1)[1])  # the RL trainer's GPU
    report: dict[str, Any] = {
        "environment": environment(device),
        "tiny": args.tiny,
        "budget_s": budget,
        "sections": {},
    }
    watchdog = threading.Timer(budget + GRACE_S, _hard_stop, (report, out, started))
    watchdog.daemon = True
    watchdog.start()
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as scratch:
        run = Run(device, args.tiny, TINY if args.tiny else FULL, Path(scratch))
        works: dict[str, Callable[[], dict[str, Any]]] = {
            "sampler": lambda: sampler_section(run),
            "throughput": lambda: throughput_section(run),
            "train": lambda: train_section(run),
            "splat": lambda: splat_section(device, args.tiny),
        }
        for index, name in enumerate(sections):
            left = budget - (time.monotonic() - started)
            seconds = left - budget * sum(RESERVES[s] for s in sections[index + 1 :])
            run.section_deadline = time.monotonic() + seconds
            report["sections"][name] = run_section(name, works[name], seconds)
            report["total_s"] = time.monotonic() - started
            write(report, out)
    watchdog.cancel()
    report["total_s"] = time.monotonic() - started
    write(report, out)
    print(markdown(report))
    print(f"[gpu bench] wrote {out / 'gpu.json'} and {out / 'gpu.md'}", file=sys.stderr)
    return 0


def _hard_stop(report: dict[str, Any], out: Path, started: float) -> None:
    """Past the budget and its grace: save what there is and end the process."""
    report["total_s"] = time.monotonic() - started
    report["stopped"] = "past the time budget: the section running then is missing"
    with contextlib.suppress(Exception):
        write(report, out)
    print("[gpu bench] past the time budget: stopped", file=sys.stderr)
    os._exit(124)


if __name__ == "__main__":
    sys.exit(main())
