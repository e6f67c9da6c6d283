"""`genservice train dpo`: offline preference optimisation on pairs the model itself wrote.

Why: online RL (`training/rl.py`) samples, judges and updates in every step, so most of its time
goes to generation and validation. DPO does those once: the start model writes `sampling.n`
candidates per task, the tasks' own validators judge them (`training/rewards.py`), and the best
and the worst candidate become a (chosen, rejected) pair when their rewards differ by at least
`sampling.min_margin`. The training phase then only runs forward/backward passes over the pairs,
with the loss `-logsigmoid(β·((π_c - ref_c) - (π_r - ref_r)))` on summed completion
log-probabilities. β sets how far the policy may move from the start model (the reference);
the reference log-probabilities are computed once, while sampling, and stored with each pair,
so training holds no second model.

Phase 1 writes RUN_DIR/pairs.jsonl (and RUN_DIR/sampled.jsonl, one line per task judged, pair or
not) as it goes, so a stopped run resumes sampling at the next task. Phase 2 runs on the
DeepSpeed engine like the RL trainer (gloo on CPU), in one process: epochs over the pairs in a
seeded order, linear warmup then a constant learning rate, checkpoints whose client state holds
the step, epoch, position and RNG so `--resume` continues exactly, a wall-clock budget (for the
training phase; data.max_tasks bounds the sampling), and
RUN_DIR/metrics.jsonl (loss, reward margin, accuracy, lr per optimiser step). The final model
goes to output_dir with a training_summary.json on top of the start model's.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genservice.generation.gallery import carry_gallery
from training.dpo_config import PAIR_SECTIONS, DPOConfig, DPOTraining

if TYPE_CHECKING:
    import torch

PAIRS_FILE, SAMPLED_FILE = "pairs.jsonl", "sampled.jsonl"
METRICS_FILE, RUN_FILE, SUMMARY_FILE = "metrics.jsonl", "run.json", "training_summary.json"


@dataclass(frozen=True)
class Candidate:
    """One sampled reply: its token ids, program and the validators' verdict."""

    ids: tuple[int, ...]  # the end token included when the reply stopped
    program: str
    valid: bool
    reward: float


def select_pair(
    candidates: Sequence[Candidate], min_margin: float
) -> tuple[Candidate, Candidate] | None:
    """(chosen, rejected): best and worst by (valid, reward); None when too close or the same."""
    ranked = sorted(candidates, key=lambda c: (c.valid, c.reward))
    chosen, rejected = ranked[-1], ranked[0]
    if chosen.reward - rejected.reward < min_margin or chosen.program == rejected.program:
        return None
    return chosen, rejected


def dpo_loss(
    chosen: torch.Tensor, rejected: torch.Tensor, ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor, beta: float,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Mean DPO loss over the pairs, and each pair's reward margin β·((π_c-ref_c)-(π_r-ref_r))."""
    import torch.nn.functional as F

    margins = beta * ((chosen - ref_chosen) - (rejected - ref_rejected))
    return -F.logsigmoid(margins).mean(), margins.detach()


def sequence_logprobs(
    model: Any, rows: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int, device: Any
) -> torch.Tensor:
    """Summed log-probability of each (prompt, completion) row's completion tokens."""
    import torch

    from training.rl_loss import token_logprobs

    length = max(len(prompt) + len(completion) for prompt, completion in rows)
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attn = torch.zeros((len(rows), length), dtype=torch.long)
    mask = torch.zeros((len(rows), length - 1))
    for row, (prompt, completion) in enumerate(rows):
        full = [*prompt, *completion]
        ids[row, : len(full)] = torch.tensor(full)
        attn[row, : len(full)] = 1
        mask[row, len(prompt) - 1 : len(full) - 1] = 1  # position t predicts token t + 1
    logps, _ = token_logprobs(model, ids.to(device), attn.to(device), temperature=1.0)
    return (logps * mask.to(device)).sum(-1)


def task_seed(seed: int, task_id: str) -> int:
    """The sampling seed of one task: the same on every run with this seed (resume included)."""
    digest = hashlib.sha256(f"dpo:{seed}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def epoch_order(count: int, seed: int, epoch: int, per_step: int) -> list[int]:
    """One epoch's pair indices, shuffled by (seed, epoch), topped up to whole optimiser steps."""
    order = list(range(count))
    random.Random(f"dpo:{seed}:{epoch}").shuffle(order)
    need = math.ceil(count / per_step) * per_step
    while len(order) < need:  # the last step takes the epoch's first pairs again
        order += order[: need - len(order)]
    return order


def lr_at(step: int, training: DPOTraining) -> float:
    """Learning rate of optimiser step `step` (1-based): linear warmup, then constant."""
    warmup = training.warmup_steps
    return training.lr * (min(1.0, step / warmup) if warmup else 1.0)


def deepspeed_config(config: DPOConfig) -> dict[str, Any]:
    """The shipped DeepSpeed JSON with this run's batch, optimiser and clipping filled in."""
    raw = json.loads(Path(config.deepspeed).read_text())
    raw["train_micro_batch_size_per_gpu"] = config.training.micro_batch
    raw["gradient_accumulation_steps"] = config.training.grad_accum
    raw.pop("train_batch_size", None)
    raw["gradient_clipping"] = config.training.grad_clip
    params = raw.setdefault("optimizer", {"type": "AdamW", "params": {}}).setdefault("params", {})
    params["lr"] = config.training.lr
    params["weight_decay"] = config.training.weight_decay
    params.setdefault("betas", [0.9, 0.99])
    raw.setdefault("steps_per_print", 10**9)
    return raw


def read_jsonl(path: Path, repair: bool = False) -> list[dict[str, Any]]:
    """The records of a JSONL file; `repair` rewrites it without a line cut short by a kill."""
    if not path.is_file():
        return []
    records, lines = [], []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
            lines.append(line)
        except ValueError:
            continue
    if repair:
        path.write_text("".join(line + "\n" for line in lines))
    return records


def _comparable(config: DPOConfig) -> dict[str, Any]:
    """The config a checkpoint must match (the budget and the output may change on resume)."""
    raw = config.to_dict()
    raw["training"].pop("max_minutes")
    raw.pop("output_dir")
    raw.pop("run_dir")
    return raw


def _append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")


class DPOTrainer:
    """The state of one run; `train()` samples the pairs, trains on them and saves the model."""

    def __init__(self, config: DPOConfig, resume: bool = False, show_progress: bool = True):
        self.config = config
        self.resume = resume
        self.show_progress = show_progress
        self.run_dir = Path(config.run_dir)
        self.checkpoints = self.run_dir / "checkpoints"

    def train(self) -> Path:
        """Run both phases; the final model directory."""
        from training.sft import _progress, _StopFlag

        self._check_run_dir()
        self._setup()
        stop = _StopFlag()
        with stop.installed(), _progress(self.show_progress) as progress:
            pairs = self._collect_pairs(progress, stop)
            if stop.set:
                raise KeyboardInterrupt
            if not pairs:
                raise ValueError(
                    f"no preference pairs in {self.run_dir / PAIRS_FILE}: no task's candidates "
                    f"differed by sampling.min_margin ({self.config.sampling.min_margin}); lower "
                    "it, or raise sampling.n or data.max_tasks (in a new run_dir)"
                )
            return self._optimise(pairs, progress, stop)

    # ----------------------------------------------------------------- setup
    def _check_run_dir(self) -> None:
        """Refuse to mix runs: a fresh run needs an empty run_dir, a resumed one its own pairs."""
        config = self.config
        if Path(config.output_dir).resolve() == Path(config.model.from_dir).resolve():
            raise ValueError("output_dir must differ from model.from: the start model is kept")
        run = self.run_dir
        marks = (run / SAMPLED_FILE, run / PAIRS_FILE, self.checkpoints / "latest")
        started = any(path.is_file() for path in marks)
        if started and not self.resume:
            raise ValueError(
                f"{self.run_dir} holds a run: continue it with --resume, or choose another "
                "run_dir (or delete that one) to start afresh"
            )
        if self.resume and not started:
            raise ValueError(f"nothing to resume: no pairs or checkpoints in {self.run_dir}")
        run_file = self.run_dir / RUN_FILE
        if self.resume and run_file.is_file():
            saved = json.loads(run_file.read_text())["config"]
            current = config.to_dict()
            if any(saved.get(key) != current[key] for key in PAIR_SECTIONS):
                raise ValueError(
                    f"the pairs in {self.run_dir} were sampled with other "
                    f"{'/'.join(PAIR_SECTIONS)} settings: use the run's config or a new run_dir"
                )

    def _setup(self) -> None:
        """Threads, the (one-process) process group, the start model and run.json."""
        import deepspeed
        import torch

        from genservice.generation.loader import load_model
        from training.rl import setup_distributed, training_device

        config = self.config
        if config.training.num_threads:
            torch.set_num_threads(config.training.num_threads)
        _, world = setup_distributed()
        if world > 1:
            raise ValueError("genservice train dpo runs in one process (no launcher)")
        self.device = training_device()
        deepspeed.init_distributed(dist_backend="nccl" if self.device != "cpu" else "gloo")
        self.loaded = load_model(config.model.from_dir, device=self.device, dtype=torch.float32)
        self.pad_id = self.loaded.tokenizer.pad_token_id or 0
        self.run_dir.mkdir(parents=True, exist_ok=True)
        info = {
            "config": config.to_dict(), "base_model": config.model.from_dir,
            "output_dir": config.output_dir, "command": " ".join(["genservice", *sys.argv[1:]]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }  # fmt: skip
        (self.run_dir / RUN_FILE).write_text(json.dumps(info, indent=2) + "\n")

    # ----------------------------------------------------------------- pairs
    def _tasks(self) -> list[dict[str, Any]]:
        from training.sft import load_tasks

        data = self.config.data
        tasks = load_tasks(data.tasks, data.splits, data.domains)
        if not tasks:
            raise ValueError(f"{data.tasks} has no tasks in the splits {data.splits}")
        random.Random(self.config.sampling.seed).shuffle(tasks)
        return tasks[: data.max_tasks] if data.max_tasks else tasks

    def _collect_pairs(self, progress: Any, stop: Any) -> list[dict[str, Any]]:
        """Phase 1: sample, judge and pair each task not yet sampled; every pair of the run."""
        from genservice.sandboxes import sandbox_limits
        from training.rewards import TaskRewards
        from validators.sandbox import SandboxPool
        from validators.sandbox.pool import DEFAULT_PRELOAD

        sampling = self.config.sampling
        tasks = self._tasks()
        pairs = read_jsonl(self.run_dir / PAIRS_FILE, repair=True)
        sampled = read_jsonl(self.run_dir / SAMPLED_FILE, repair=True)
        done = {r["task_id"] for r in pairs} | {r["task_id"] for r in sampled}
        todo = [task for task in tasks if str(task["id"]) not in done]
        if not todo:
            return pairs
        if done:
            print(f"resuming sampling: {len(tasks) - len(todo)} tasks done", file=sys.stderr)
        bar = progress.add_task(
            "pairs", total=len(tasks), completed=len(tasks) - len(todo), info=f"{len(pairs)} pairs"
        )
        limits, _, isolation = sandbox_limits(None, None)
        code_only = all(task["domain"] == "code" for task in todo)  # then no CadQuery to warm
        preload = ("validators.code.guest",) if code_only else DEFAULT_PRELOAD
        pool = SandboxPool(sampling.workers, limits, isolation, preload=preload)
        rewards = TaskRewards(pool, limits, base=Path(self.config.data.tasks).parent)
        self.loaded.model.eval()
        try:
            with ThreadPoolExecutor(sampling.workers, thread_name_prefix="judge") as threads:
                pending = None
                for task in [*todo, None]:  # judging one task overlaps generating the next
                    drawn = None if task is None or stop.set else self._draw(task, threads, rewards)
                    if pending is not None:
                        pairs += self._pair(*pending)
                        progress.update(bar, advance=1, info=f"{len(pairs)} pairs")
                    if drawn is None:
                        break
                    pending = drawn
        finally:
            pool.close()
        return pairs

    def _draw(self, task: dict[str, Any], threads: ThreadPoolExecutor, rewards: Any) -> tuple:
        """Sample a task's candidates and submit them to the judges."""
        from genservice.generation.prompts import clean_completion
        from genservice.generation.sampler import encode_prompt, sample
        from training.sft import task_messages

        sampling = self.config.sampling
        messages = task_messages(task, self.loaded, rewards.pool, rewards.limits)
        prompt = encode_prompt(self.loaded, messages)["input_ids"][0].tolist()
        completions = sample(
            self.loaded, messages, n=sampling.n, seed=task_seed(sampling.seed, str(task["id"])),
            max_new_tokens=sampling.max_new_tokens, temperature=sampling.temperature,
            top_p=sampling.top_p,
        )  # fmt: skip
        end = self.loaded.eos_token_ids[0]
        ids = [(*c.tokens, *([end] if c.finish_reason == "stop" else [])) for c in completions]
        programs = [clean_completion(c.text) for c in completions]
        futures = [threads.submit(rewards.report, task, program) for program in programs]
        return task, prompt, ids, programs, futures

    def _pair(
        self, task: dict[str, Any], prompt: list[int], ids: list[tuple[int, ...]],
        programs: list[str], futures: list[Future],
    ) -> list[dict[str, Any]]:  # fmt: skip
        """Wait for a task's verdicts, record them and its pair (with reference log-probs)."""
        import torch

        reports = [future.result() for future in futures]
        candidates = [
            Candidate(tokens, program, report.valid, report.reward)
            for tokens, program, report in zip(ids, programs, reports, strict=True)
        ]
        found = select_pair(candidates, self.config.sampling.min_margin)
        rows = []
        if found is not None:
            chosen, rejected = found
            with torch.no_grad():  # the frozen start model: DPO's reference
                ref = sequence_logprobs(
                    self.loaded.model, [(prompt, chosen.ids), (prompt, rejected.ids)],
                    self.pad_id, self.device,
                ).tolist()  # fmt: skip
            rows.append({
                "task_id": str(task["id"]), "family": task.get("family"),
                "domain": task["domain"], "prompt_ids": prompt, "chosen_ids": list(chosen.ids),
                "rejected_ids": list(rejected.ids), "chosen_reward": chosen.reward,
                "rejected_reward": rejected.reward, "chosen_valid": chosen.valid,
                "rejected_valid": rejected.valid, "ref_chosen": ref[0], "ref_rejected": ref[1],
            })  # fmt: skip
            _append(self.run_dir / PAIRS_FILE, rows[0])
        _append(self.run_dir / SAMPLED_FILE, {
            "task_id": str(task["id"]), "family": task.get("family"), "pair": bool(rows),
            "rewards": [c.reward for c in candidates], "valid": [c.valid for c in candidates],
        })  # fmt: skip
        return rows

    # -------------------------------------------------------------- training
    def _optimise(self, pairs: list[dict[str, Any]], progress: Any, stop: Any) -> Path:
        """Phase 2: DPO epochs over the pairs on the DeepSpeed engine; save the final model."""
        import deepspeed

        training = self.config.training
        per_step = training.micro_batch * training.grad_accum
        steps_per_epoch = math.ceil(len(pairs) / per_step)
        total = steps_per_epoch * training.epochs
        model = self.loaded.model.train()
        self.engine, *_ = deepspeed.initialize(
            model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],
            config=deepspeed_config(self.config),
        )  # fmt: skip
        step, elapsed = self._restore(len(pairs))
        budget = training.max_minutes * 60 if training.max_minutes else None
        started = time.monotonic() - elapsed
        bar = progress.add_task("dpo", total=total, completed=step, info=f"{len(pairs)} pairs")
        orders: dict[int, list[int]] = {}
        last_saved = step
        while step < total and not stop.set:
            if budget is not None and time.monotonic() - started >= budget:
                print("time budget spent: saving the model", file=sys.stderr)
                break
            epoch, position = divmod(step, steps_per_epoch)
            if epoch not in orders:
                orders = {epoch: epoch_order(len(pairs), training.seed, epoch, per_step)}
            batch = orders[epoch][position * per_step : (position + 1) * per_step]
            step += 1
            record = self._step(step, epoch, [pairs[i] for i in batch])
            record["time_s"] = round(time.monotonic() - started, 3)
            _append(self.run_dir / METRICS_FILE, record)
            info = f"loss {record['loss']:.3f} acc {record['accuracy']:.0%}"
            progress.update(bar, completed=step, info=info)
            if step % training.save_every == 0:
                self._save(step, steps_per_epoch, time.monotonic() - started, len(pairs))
                last_saved = step
        elapsed = time.monotonic() - started
        if last_saved != step or not (self.checkpoints / "latest").is_file():
            self._save(step, steps_per_epoch, elapsed, len(pairs))
        output = self._save_final(step, elapsed, len(pairs))
        if stop.set:
            raise KeyboardInterrupt
        return output

    def _step(self, step: int, epoch: int, batch: list[dict[str, Any]]) -> dict[str, Any]:
        """One optimiser step: grad_accum micro-batches of chosen and rejected sequences."""
        import torch

        training = self.config.training
        lr = lr_at(step, training)
        for group in self.engine.optimizer.param_groups:
            group["lr"] = lr
        losses: list[float] = []
        margins: list[float] = []
        for start in range(0, len(batch), training.micro_batch):
            chunk = batch[start : start + training.micro_batch]
            rows = [(p["prompt_ids"], p["chosen_ids"]) for p in chunk]
            rows += [(p["prompt_ids"], p["rejected_ids"]) for p in chunk]
            logps = sequence_logprobs(self.engine, rows, self.pad_id, self.engine.device)
            ref = [p["ref_chosen"] for p in chunk] + [p["ref_rejected"] for p in chunk]
            ref_t = torch.tensor(ref, dtype=logps.dtype, device=logps.device)
            m = len(chunk)
            loss, margin = dpo_loss(logps[:m], logps[m:], ref_t[:m], ref_t[m:], training.beta)
            self.engine.backward(loss)
            self.engine.step()
            losses.append(float(loss.detach()))
            margins += margin.tolist()
        return {
            "event": "step", "step": step, "epoch": epoch, "loss": statistics.fmean(losses),
            "margin": statistics.fmean(margins),
            "accuracy": statistics.fmean(float(v > 0) for v in margins), "lr": lr,
        }  # fmt: skip

    # ---------------------------------------------------------- checkpoints
    def _restore(self, pair_count: int) -> tuple[int, float]:
        """Load the latest checkpoint when resuming; (step, elapsed seconds)."""
        import torch

        metrics = self.run_dir / METRICS_FILE
        if not self.resume or not (self.checkpoints / "latest").is_file():
            metrics.write_text("")
            return 0, 0.0
        _, client = self.engine.load_checkpoint(str(self.checkpoints))
        if client is None:
            raise ValueError(f"the checkpoint in {self.checkpoints} could not be loaded")
        if client.get("config") != _comparable(self.config) or client.get("pairs") != pair_count:
            raise ValueError("the checkpoint belongs to a run with another config or other pairs")
        torch.set_rng_state(client["rng"].cpu())
        step = int(client["step"])
        kept = [r for r in read_jsonl(metrics) if r.get("step", 0) <= step]
        metrics.write_text("".join(json.dumps(r) + "\n" for r in kept))
        print(f"resuming at step {step} from {self.checkpoints}", file=sys.stderr)
        return step, float(client["elapsed_s"])

    def _save(self, step: int, steps_per_epoch: int, elapsed: float, pair_count: int) -> None:
        import torch

        epoch, position = divmod(step, steps_per_epoch)
        client = {
            "step": step, "epoch": epoch, "position": position, "elapsed_s": elapsed,
            "pairs": pair_count, "config": _comparable(self.config), "rng": torch.get_rng_state(),
        }  # fmt: skip
        self.engine.save_checkpoint(
            str(self.checkpoints), tag=f"step-{step:07d}", client_state=client
        )
        tags = sorted(p for p in self.checkpoints.glob("step-*") if p.is_dir())
        for old in tags[: -self.config.training.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)

    def _save_final(self, step: int, elapsed: float, pair_count: int) -> Path:
        output = Path(self.config.output_dir)
        output.mkdir(parents=True, exist_ok=True)
        self.engine.module.save_pretrained(str(output))
        (self.loaded.processor or self.loaded.tokenizer).save_pretrained(str(output))
        carry_gallery(self.config.model.from_dir, output)
        summary = self._summary(step, elapsed, pair_count)
        (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
        return output

    def _summary(self, step: int, elapsed: float, pair_count: int) -> dict[str, Any]:
        """training_summary.json of the DPO model: this run, on top of its start model's."""
        import torch
        import transformers

        base_file = Path(self.config.model.from_dir) / SUMMARY_FILE
        base = json.loads(base_file.read_text()) if base_file.is_file() else None
        steps = [r for r in read_jsonl(self.run_dir / METRICS_FILE) if r.get("event") == "step"]
        tail = steps[-max(1, len(steps) // 10) :]

        def final(key: str) -> float | None:
            return statistics.fmean(r[key] for r in tail) if tail else None

        return {
            "kind": "dpo", "command": " ".join(["genservice", *sys.argv[1:]]),
            "config": self.config.to_dict(), "pairs": pair_count,
            "tasks_sampled": len(read_jsonl(self.run_dir / SAMPLED_FILE)), "steps": step,
            "train_time_s": round(elapsed, 1), "final_loss": final("loss"),
            "final_accuracy": final("accuracy"), "final_margin": final("margin"),
            "num_threads": torch.get_num_threads(),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
            "data": (base or {}).get("data"), "model": (base or {}).get("model"), "base": base,
        }  # fmt: skip


def train_dpo(config: DPOConfig, resume: bool = False, show_progress: bool = True) -> Path:
    """Run `genservice train dpo` with this config; the final model directory."""
    return DPOTrainer(config, resume, show_progress).train()
