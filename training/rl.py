"""`genservice train rl`: online GRPO-family RL on validator rewards, on the DeepSpeed engine.

One step: the curriculum draws `prompts_per_step` tasks (the same draw on every rank; rank r
takes every world-th task). For each task the policy samples a group of candidates sharing the
prompt's KV cache (`genservice.generation.sampler.sample`, seeded per step and task, so a
resumed run samples the same candidates); while the next task generates, this group is judged
on the sandbox pool by the task's own validators (`training/rewards.py`). Groups whose rewards
are all equal carry no signal and are replaced by fresh draws (dynamic sampling, up to
`loss.max_resample` rounds). Advantages compare a group's members; the clipped surrogate
(`training/rl_loss.py`) is back-propagated through the DeepSpeed engine, which averages
gradients across ranks (gloo on CPU, NCCL on GPUs; ZeRO-2/3 by config).

Why our own loop and not TRL's GRPOTrainer: TRL scores a batch only after generating all of
it, so validation could not overlap generation; its sampler cannot follow per-family reward
progress, and its resume does not restore such a sampler's state or the sampling seeds. The
objective is TRL's (loss types, clip-higher, KL, overlong penalty, masked truncation), and
`training.rewards.reward_functions` plugs the same rewards into TRL when that suits better.

Logs: RUN_DIR/metrics.jsonl (step, held-out and flag records), TensorBoard in
RUN_DIR/tensorboard, checkpoints in RUN_DIR/checkpoints (DeepSpeed's, with the sampler's state),
the final model in output_dir (a model directory `genservice run/generate/eval --model` load).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from genservice.generation.gallery import carry_gallery
from training.rl_config import RLConfig
from training.rl_loss import LossSettings, all_equal, group_advantages
from training.rl_monitor import Monitor, step_record
from training.rl_types import Group

RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"


def repair_task(group: Group) -> dict[str, Any] | None:
    """The second turn of a repair episode: the group's best failing candidate and its
    validator error as a repair task (prompts.build_repair_messages asks it as serving does),
    judged against the same request; None when nothing failed or the task is not CAD or scene
    (or is a repair already)."""
    task = group.task
    if task.get("repair") or task["domain"] not in ("cad", "scene"):
        return None
    failing = [
        (judged.reward, program, judged.report)
        for program, judged in zip(group.programs, group.judged, strict=True)
        if not judged.valid and program.strip()
    ]
    if not failing:
        return None
    _, program, report = max(failing, key=lambda f: f[0])
    error = report.error
    return {
        **task,
        "id": f"{task['id']}~repair",
        "repair": True,
        "turn": 2,
        "failed_program": program,
        "error": {
            "kind": error.kind if error else "check_failed",
            "message": error.message if error else "",
            "line": error.line if error else None,
        },
    }


def setup_distributed() -> tuple[int, int]:
    """Environment for DeepSpeed: a single process gets rank 0 of 1 on a free local port."""
    if "RANK" not in os.environ:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        defaults = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
        defaults |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        for key, value in defaults.items():
            os.environ.setdefault(key, value)
    if not on_gpu():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def on_gpu() -> bool:
    """Whether training runs on GPUs: a GPU is there and GENSERVICE_DEVICE does not say cpu."""
    from genservice.device import resolve_device

    return resolve_device().startswith("cuda")


def training_device() -> str:
    """This process's device: its launcher's GPU (cuda:LOCAL_RANK) on GPUs, else the CPU."""
    return f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if on_gpu() else "cpu"


def step_seed(seed: int, step: int, round_: int, index: int) -> int:
    """The sampling seed of one group: fixed by the run seed, step, round and task position."""
    digest = hashlib.sha256(f"rl:{seed}:{step}:{round_}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def deepspeed_config(config: RLConfig, world: int, gas: int) -> dict[str, Any]:
    """The shipped DeepSpeed JSON with this run's batch, optimiser and clipping filled in."""
    raw = json.loads(Path(config.deepspeed).read_text())
    raw["train_micro_batch_size_per_gpu"] = config.training.micro_batch
    raw["gradient_accumulation_steps"] = gas
    raw.pop("train_batch_size", None)
    raw["gradient_clipping"] = config.training.grad_clip
    optimizer = raw.setdefault("optimizer", {"type": "AdamW", "params": {}})
    params = optimizer.setdefault("params", {})
    params["lr"] = config.training.lr
    params["weight_decay"] = config.training.weight_decay
    params.setdefault("betas", [0.9, 0.99])
    raw.setdefault("steps_per_print", 10**9)
    return raw


class RLTrainer:
    """The state of one run; `train()` runs it to the budget or the step limit."""

    def __init__(self, config: RLConfig, resume: bool = False, show_progress: bool = True):
        self.config = config
        self.resume = resume
        self.show_progress = show_progress
        self.rank, self.world = setup_distributed()
        self.run_dir = Path(config.run_dir)
        self.checkpoints = self.run_dir / "checkpoints"
        if config.rollout.prompts_per_step % self.world:
            raise ValueError(
                f"rollout.prompts_per_step ({config.rollout.prompts_per_step}) must be a "
                f"multiple of the number of processes ({self.world})"
            )
        self.per_rank = config.rollout.prompts_per_step // self.world
        latest = self.checkpoints / "latest"
        if resume and not latest.is_file():
            raise ValueError(f"nothing to resume: no checkpoint in {self.checkpoints}")
        if not resume and latest.is_file():
            raise ValueError(
                f"{self.checkpoints} holds a run's checkpoints: continue it with --resume, "
                "or choose another run_dir (or delete that one) to start afresh"
            )

    # ----------------------------------------------------------------- setup
    def _setup(self) -> None:
        import deepspeed
        import torch

        from genservice.generation.loader import load_model
        from genservice.sandboxes import sandbox_limits
        from training.curriculum import CurriculumSampler
        from training.rewards import TaskRewards
        from validators.sandbox import SandboxPool
        from validators.sandbox.pool import DEFAULT_PRELOAD

        config = self.config
        if config.training.num_threads:
            torch.set_num_threads(config.training.num_threads)
        self.device = training_device()
        deepspeed.init_distributed(dist_backend="nccl" if self.device != "cpu" else "gloo")
        self.limits, _, isolation = sandbox_limits(None, None)
        # A code-only run warms no CadQuery: its checks need none (and a GPU box may lack it).
        code_only = config.data.domains == ["code"]
        self.pool = SandboxPool(
            size=config.rollout.reward_workers,
            limits=self.limits,
            isolation=isolation,
            preload=("validators.code.guest",) if code_only else DEFAULT_PRELOAD,
        )
        self.rewards = TaskRewards(
            self.pool, self.limits, base=Path(config.data.tasks).parent, shaping=config.reward
        )
        self.tasks, self.heldout = self._load_tasks()
        families: dict[str, list[int]] = {}
        for index, task in enumerate(self.tasks):
            families.setdefault(task["family"], []).append(index)
        cur = config.curriculum
        self.families = families
        self.curriculum = CurriculumSampler(
            families, seed=config.training.seed, enabled=cur.enabled, min_share=cur.min_share,
            fast=cur.fast, slow=cur.slow, temperature=cur.temperature, headroom=cur.headroom,
            learnability=cur.learnability,
        )  # fmt: skip
        self.loaded = load_model(config.model.from_dir, device=self.device, dtype=torch.float32)
        self._prompts: dict[str, list[dict[str, Any]]] = {}  # task id -> its messages
        model = self.loaded.model
        model.train()
        self.reference = None
        if config.loss.beta > 0 or config.loss.log_kl:
            self.reference = copy.deepcopy(model).eval().requires_grad_(False)
        sequences = self.per_rank * config.rollout.group_size
        self.gas = sequences // (config.training.micro_batch * config.training.updates_per_rollout)
        if self.gas < 1:
            raise ValueError("training.micro_batch is larger than a process's share of a step")
        ds_config = deepspeed_config(config, self.world, self.gas)
        self.engine, *_ = deepspeed.initialize(
            model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],
            config=ds_config,
        )  # fmt: skip
        self.loaded.model = self.engine.module
        self.settings = LossSettings(
            config.loss.type, config.loss.epsilon_low, config.loss.epsilon_high,
            config.loss.beta, config.rollout.max_new_tokens,
        )  # fmt: skip
        self.monitor = Monitor(self.run_dir, enabled=self.rank == 0)
        if config.loss.sft_anchor > 0:
            from training.sft import reply_format

            self.reply_format = reply_format(self.loaded.tokenizer)

    def _load_tasks(self) -> tuple[list[dict], list[dict]]:
        from training.sft import load_tasks

        data = self.config.data
        tasks = load_tasks(data.tasks, data.splits, data.domains)
        heldout = load_tasks(data.tasks, data.heldout_splits, data.domains)
        if data.families is not None:
            unknown = sorted(set(data.families) - {t["family"] for t in tasks})
            if unknown:
                raise ValueError(f"data.families: no training tasks of {unknown}")
            tasks = [t for t in tasks if t["family"] in data.families]
            heldout = [t for t in heldout if t["family"] in data.families]
        if not tasks:
            raise ValueError(f"{data.tasks} has no tasks in the splits {data.splits}")
        tasks = self._audited(tasks)
        rng = random.Random(self.config.training.seed)
        by_family: dict[str, list[dict]] = {}
        for task in heldout:
            by_family.setdefault(task["family"], []).append(task)
        picked: list[dict] = []
        while len(picked) < min(data.heldout_tasks, len(heldout)):  # round robin over families
            for name in sorted(by_family):
                if by_family[name] and len(picked) < data.heldout_tasks:
                    picked.append(by_family[name].pop(rng.randrange(len(by_family[name]))))
        return tasks, picked

    def _audited(self, tasks: list[dict]) -> list[dict]:
        """Run validate-tasks on a sample of the tasks (rank 0) and drop every broken one."""
        import torch.distributed as dist

        from genservice.task_audit import audit_task

        count = min(self.config.data.audit_tasks, len(tasks))
        broken: list[Any] = [[]]
        if self.rank == 0 and count:
            sample = random.Random(self.config.training.seed).sample(range(len(tasks)), count)
            base = Path(self.config.data.tasks).parent
            with ThreadPoolExecutor(self.config.rollout.reward_workers) as threads:
                verdicts = list(
                    threads.map(
                        lambda i: audit_task(tasks[i], i, base, self.pool, self.limits), sample
                    )
                )
            broken = [[v.task_id for v in verdicts if not v.ok]]
            for verdict in verdicts:
                if not verdict.ok:
                    print(
                        f"validate-tasks: {verdict.task_id}: {'; '.join(verdict.reasons)}",
                        file=sys.stderr,
                    )
            print(
                f"validate-tasks: {count - len(broken[0])}/{count} sampled tasks sound",
                file=sys.stderr,
            )
            if len(broken[0]) > count // 2:
                raise ValueError(
                    f"{len(broken[0])} of {count} audited tasks are broken: fix the task set"
                )
        dist.broadcast_object_list(broken, src=0)
        bad = set(broken[0])
        return [task for task in tasks if str(task["id"]) not in bad]

    # --------------------------------------------------------------- rollout
    def task_messages(self, task: dict) -> list[dict[str, Any]]:
        """The task's prompt, made once per task (a task is drawn many times, and a picture
        task shown a look-alike costs a gallery search to make)."""
        from training.sft import task_messages

        key = str(task["id"])
        if key not in self._prompts:
            self._prompts[key] = task_messages(task, self.loaded, self.pool, self.limits)
        return self._prompts[key]

    def _generate_group(self, task: dict, seed: int) -> Group:
        from genservice.generation.prompts import clean_completion
        from genservice.generation.sampler import encode_prompt, sample

        rollout = self.config.rollout
        messages = self.task_messages(task)
        pictures = task.get("images") or None  # an image task is asked with its pictures
        prompt = encode_prompt(self.loaded, messages, pictures)["input_ids"][0].tolist()
        completions = sample(
            self.loaded, messages, n=rollout.group_size, seed=seed,
            max_new_tokens=rollout.max_new_tokens, temperature=rollout.temperature,
            top_p=rollout.top_p, images=pictures,
        )  # fmt: skip
        end = self.loaded.eos_token_ids[0]
        ids = [list(c.tokens) + ([end] if c.finish_reason == "stop" else []) for c in completions]
        programs = [clean_completion(c.text) for c in completions]
        return Group(task, prompt, ids, programs, [c.finish_reason for c in completions])

    def _rollout(self, step: int, threads: ThreadPoolExecutor) -> tuple[list[Group], dict]:
        """This rank's groups for the step (fillers masked when too few carry signal)."""
        import torch.distributed as dist

        loss = self.config.loss
        timing = {"generate_s": 0.0, "reward_wait_s": 0.0}
        intervals: list[tuple[float, float]] = []
        kept: list[Group] = []
        skipped: list[Group] = []
        every: list[Group] = []
        for round_ in range(loss.max_resample + 1 if loss.dynamic_sampling else 1):
            draw = self.curriculum.draw(self.config.rollout.prompts_per_step)
            mine = list(enumerate(draw))[self.rank :: self.world]
            if round_:  # a resample round draws only what this rank still misses
                mine = mine[: max(0, self.per_rank - len(kept))]
            generated: list[Group] = []
            pending: list[tuple[Group, list]] = []
            for index, task_index in mine:
                started = time.monotonic()
                seed = step_seed(self.config.training.seed, step, round_, index)
                group = self._generate_group(self.tasks[task_index], seed)
                timing["generate_s"] += time.monotonic() - started
                generated.append(group)
                if self.config.rollout.overlap:  # judged while the next group generates
                    pending.append((group, self._judge_group(group, threads)))
            if not self.config.rollout.overlap:
                pending = [(group, self._judge_group(group, threads)) for group in generated]
            waited = time.monotonic()
            judged: list[Group] = []
            for group, futures in pending:
                group.judged = [future.result() for future in futures]
                judged.append(group)
            timing["reward_wait_s"] += time.monotonic() - waited
            if self.config.rollout.repair_turns:  # second turns: the policy fixes its own failure
                # Each second turn follows its first, and takes one of the step's group slots
                # (every rank trains the same number of groups), so a step keeps pairs.
                firsts, judged = judged, []
                for index, group in enumerate(firsts):
                    judged.append(group)
                    second = repair_task(group)
                    if second is None:
                        continue
                    started = time.monotonic()
                    seed = step_seed(self.config.training.seed, step, round_, 1000 + index)
                    repaired = self._generate_group(second, seed)
                    timing["generate_s"] += time.monotonic() - started
                    waited = time.monotonic()
                    futures = self._judge_group(repaired, threads)
                    repaired.judged = [future.result() for future in futures]
                    timing["reward_wait_s"] += time.monotonic() - waited
                    judged.append(repaired)
            for group in judged:
                intervals += [(j.started, j.finished) for j in group.judged]
                every.append(group)
                signal = not (loss.dynamic_sampling and all_equal(group.rewards))
                (kept if signal else skipped).append(group)
            short = [len(kept) < self.per_rank]
            if self.world > 1:
                flags: list[Any] = [None] * self.world
                dist.all_gather_object(flags, short)
                short = [any(f[0] for f in flags)]
            if not short[0]:
                break
        groups = kept[: self.per_rank]
        for filler in skipped[: self.per_rank - len(groups)]:
            filler.train = False
            groups.append(filler)
        scale = self.config.loss.type != "dr_grpo"
        for group in groups:
            group.advantages = group_advantages(group.rewards, scale)
        timing["reward_busy_s"] = _union(intervals)
        return groups, {"timing": timing, "every": every, "skipped": len(skipped)}

    def _judge_group(self, group: Group, threads: ThreadPoolExecutor) -> list:
        """Futures of the group's judgements (validation on the sandbox pool's threads)."""
        loss = self.config.loss
        return [
            self.rewards.submit(
                threads, group.task, program, length=len(tokens),
                max_new_tokens=self.config.rollout.max_new_tokens,
                buffer=loss.overlong_buffer, penalty=loss.overlong_penalty,
            )
            for program, tokens in zip(group.programs, group.completions, strict=True)
        ]  # fmt: skip

    # ---------------------------------------------------------------- update
    def _update(self, groups: list[Group], step: int) -> dict[str, float | None]:
        """Clipped-surrogate steps over the rollouts; statistics of the update."""
        import torch

        from training.rl_loss import policy_loss, token_logprobs

        rows = [
            (
                g.prompt_ids,
                ids,
                adv,
                g.train and not (self.config.loss.mask_truncated and fin == "length"),
                list(g.task.get("images") or []),
            )
            for g in groups
            for ids, adv, fin in zip(g.completions, g.advantages, g.finish, strict=True)
        ]
        micro = self.config.training.micro_batch
        chunks = self.config.training.updates_per_rollout
        per_chunk = len(rows) // chunks
        temperature = self.config.rollout.temperature
        batches = [self._collate(rows[i : i + micro]) for i in range(0, len(rows), micro)]
        old: list[Any] = [None] * len(batches)
        ref: list[Any] = [None] * len(batches)
        with torch.no_grad():
            for i, batch in enumerate(batches):
                pictures = batch.get("pixel_values")
                if chunks > 1:
                    old[i] = token_logprobs(
                        self.engine.module, batch["ids"], batch["attn"], temperature, pictures
                    )[0]
                if self.reference is not None:
                    ref[i] = token_logprobs(
                        self.reference, batch["ids"], batch["attn"], temperature, pictures
                    )[0]
        totals = {"loss": 0.0, "clip_tokens": 0.0, "tokens": 0.0, "kl_sum": 0.0, "entropy_sum": 0.0}
        anchor_nll: list[float] = []
        for chunk in range(chunks):
            span = range(chunk * per_chunk // micro, (chunk + 1) * per_chunk // micro)
            sequences = sum(int(batches[i]["train"].sum()) for i in span)
            tokens = sum(int(batches[i]["mask"].sum()) for i in span)
            for i in span:
                batch = batches[i]
                logps, entropy = token_logprobs(
                    self.engine, batch["ids"], batch["attn"], temperature,
                    batch.get("pixel_values"),
                )  # fmt: skip
                previous = old[i] if old[i] is not None else logps.detach()
                loss, stats = policy_loss(
                    logps, previous, ref[i], batch["adv"], batch["mask"], self.settings,
                    sequences, tokens,
                )  # fmt: skip
                if not tokens:
                    loss = logps.sum() * 0.0  # keeps every rank's backward hooks in step
                if self.config.loss.sft_anchor > 0 and i == span[0]:  # once per update
                    nll = self._anchor_nll(step, chunk)
                    anchor_nll.append(float(nll.detach()))
                    loss = loss + self.config.loss.sft_anchor * nll
                self.engine.backward(loss, scale_wrt_gas=False)
                self.engine.step()
                totals["loss"] += float(loss.detach())
                totals["entropy_sum"] += float((entropy * batch["mask"]).sum())
                for key in ("clip_tokens", "tokens", "kl_sum"):
                    totals[key] += stats[key]
        count = max(1.0, totals["tokens"])
        kl = totals["kl_sum"] / count if self.reference is not None else None
        return {
            "loss": totals["loss"] / chunks,
            "clip_frac": totals["clip_tokens"] / count,
            "entropy": totals["entropy_sum"] / count,
            "kl": kl,
            "anchor_nll": sum(anchor_nll) / len(anchor_nll) if anchor_nll else None,
        }

    def _anchor_nll(self, step: int, chunk: int) -> Any:
        """Mean next-token loss of reference programs drawn evenly over the training families.

        The draw is seeded by step, update and rank, so a resumed run anchors on the same rows.
        """
        from training.sft import IGNORE_INDEX, collate, encode_task, loss_sum
        from training.vlm import image_slots

        rng = random.Random(step_seed(self.config.training.seed, step, 1000 + chunk, self.rank))
        names = sorted(self.families)
        examples: list[Any] = []
        for _ in range(20 * self.config.loss.sft_anchor_rows):
            if len(examples) == self.config.loss.sft_anchor_rows:
                break
            task = self.tasks[rng.choice(self.families[rng.choice(names)])]
            example = encode_task(
                self.loaded.tokenizer, task, self.reply_format, self.task_messages(task),
                slots=image_slots(self.loaded.model),
            )  # fmt: skip
            reply = sum(1 for label in example.labels if label != IGNORE_INDEX)
            if reply <= self.config.rollout.max_new_tokens:  # as long as a rollout may be
                examples.append(example)
        if not examples:
            import torch

            return torch.zeros((), device=self.engine.device)
        pad = self.loaded.tokenizer.pad_token_id or 0
        batch = {
            k: v.to(self.engine.device)
            for k, v in collate(examples, pad, self.loaded.processor).items()
        }
        labelled = int((batch["labels"] != IGNORE_INDEX).sum())
        return loss_sum(self.engine, batch, bf16=False) / max(1, labelled)

    def _collate(self, rows: list[tuple]) -> dict[str, Any]:
        import torch

        pad = self.loaded.tokenizer.pad_token_id or 0
        length = max(len(p) + len(c) for p, c, *_ in rows)
        ids = torch.full((len(rows), length), pad, dtype=torch.long)
        attn = torch.zeros((len(rows), length), dtype=torch.long)
        mask = torch.zeros((len(rows), length - 1))
        for row, (prompt, completion, _, train, _) in enumerate(rows):
            full = prompt + completion
            ids[row, : len(full)] = torch.tensor(full)
            attn[row, : len(full)] = 1
            if train:  # position t predicts token t + 1: completion tokens start at len(prompt)
                mask[row, len(prompt) - 1 : len(full) - 1] = 1
        adv = torch.tensor([a for _, _, a, _, _ in rows], dtype=torch.float32)
        train_rows = torch.tensor([float(t) for _, _, _, t, _ in rows])
        device = self.engine.device
        batch = {
            "ids": ids.to(device), "attn": attn.to(device), "mask": mask.to(device),
            "adv": adv.to(device), "train": train_rows,
        }  # fmt: skip
        pictures = [path for *_, paths in rows for path in paths]
        if pictures:  # in row order, as the rows' image tokens come
            from training.vlm import pixel_values

            values = pixel_values(self.loaded.processor, pictures)
            batch["pixel_values"] = values.to(device, dtype=self.engine.module.dtype)
        return batch

    # ----------------------------------------------------------------- train
    def train(self) -> Path:
        """Run to max_steps or the time budget; save checkpoints and the final model."""
        import torch.distributed as dist

        from training.sft import _progress, _StopFlag

        self._setup()
        config = self.config
        step, elapsed = self._restore()
        self._write_run_file()
        stop = _StopFlag()
        budget = config.training.max_minutes * 60 if config.training.max_minutes else None
        started = time.monotonic() - elapsed
        last_saved = step
        progress = _progress(self.show_progress and self.rank == 0)
        threads = ThreadPoolExecutor(config.rollout.reward_workers, thread_name_prefix="reward")
        with stop.installed(), progress, threads:
            bar = progress.add_task("rl", total=config.training.max_steps, completed=step, info="")
            while step < config.training.max_steps:
                if budget is not None and time.monotonic() - started >= budget:
                    break
                step += 1
                self._set_lr(step)
                step_started = time.monotonic()
                with self._whole_model():
                    groups, extra = self._rollout(step, threads)
                update_started = time.monotonic()
                stats = self._update(groups, step)
                extra["timing"]["update_s"] = time.monotonic() - update_started
                extra["timing"]["step_s"] = time.monotonic() - step_started
                every = self._gather(extra["every"])
                for family, rewards in every:
                    self.curriculum.update(family, rewards)
                record = step_record(
                    step, time.monotonic() - started, extra, stats, self.curriculum,
                    self.engine.optimizer.param_groups[0]["lr"], self.world,
                )  # fmt: skip
                self.monitor.step(record, extra["every"], self.curriculum)
                if config.training.heldout_every and step % config.training.heldout_every == 0:
                    self._heldout(step, time.monotonic() - started)
                progress.update(
                    bar,
                    completed=step,
                    info=f"reward {record['reward']:.3f} valid {record['valid']:.0%}",
                )
                stopping = stop.set or step >= config.training.max_steps
                if step % config.training.save_every == 0 or stopping:
                    self._save(step, time.monotonic() - started)
                    last_saved = step
                if stop.set:
                    break
        if last_saved != step:
            self._save(step, time.monotonic() - started)
        dist.barrier()
        output = self._save_final(step, time.monotonic() - started)
        self.pool.close()
        self.monitor.close()
        if stop.set:
            raise KeyboardInterrupt
        return output

    def _gather(self, groups: list[Group]) -> list[tuple[str, list[float]]]:
        """Every rank's (family, rewards) of the step, in rank order (the same on all ranks)."""
        import torch.distributed as dist

        # The curriculum weighs families by their first turns (a repair's reward says how well
        # the policy fixes, not how well it makes).
        mine = [(g.task["family"], g.rewards) for g in groups if g.task.get("turn") != 2]
        if self.world == 1:
            return mine
        found: list[Any] = [None] * self.world
        dist.all_gather_object(found, mine)
        return [item for part in found for item in part]

    def _set_lr(self, step: int) -> None:
        warmup = self.config.training.warmup_steps
        lr = self.config.training.lr * (min(1.0, step / warmup) if warmup else 1.0)
        for group in self.engine.optimizer.param_groups:
            group["lr"] = lr

    def _heldout(self, step: int, elapsed: float) -> None:
        import torch.distributed as dist

        with self._whole_model():
            if self.rank == 0 and self.heldout:
                from training.rl_monitor import heldout_record

                self.engine.module.eval()
                record = heldout_record(self, step, elapsed)
                self.engine.module.train()
                self.monitor.heldout(record)
            dist.barrier()

    @contextlib.contextmanager
    def _whole_model(self) -> Iterator[None]:
        """Under ZeRO-3, every rank holds the whole model inside this block (else a no-op).

        Sampling runs one forward per token, and replies end at different lengths on each rank:
        with the weights sharded, every forward gathers them collectively, so a rank that had
        finished would leave the others waiting. Gathering them once and lifting ZeRO's
        per-module hooks makes sampling local; the hooks come back for the update.
        """
        if self.engine.zero_optimization_stage() < 3:
            yield
            return
        import deepspeed

        offload = self.engine.optimizer.parameter_offload
        module = self.engine.module
        # The root's start-of-forward hook checks that all ranks are at the same step (a
        # collective), so it is lifted too and put back first, as ZeRO registered it.
        root_hooks = module._forward_pre_hooks
        order = list(root_hooks)
        start_of_forward = root_hooks.pop(offload.fwd_pre_hook.id)
        with deepspeed.zero.GatheredParameters(list(module.parameters())):
            for param in module.parameters():
                param.ds_active_sub_modules.clear()
            for hook in offload.forward_hooks + offload.backward_hooks:
                hook.remove()
            offload.forward_hooks, offload.backward_hooks = [], []
            try:
                yield
            finally:
                offload._register_deepspeed_module(module)
                root_hooks[offload.fwd_pre_hook.id] = start_of_forward
                for key in [key for key in root_hooks if key not in order]:
                    root_hooks.move_to_end(key)  # the re-registered hooks after the kept ones

    # ---------------------------------------------------------- checkpoints
    def _restore(self) -> tuple[int, float]:
        if not self.resume:
            self.monitor.truncate(0)
            return 0, 0.0
        _, client = self.engine.load_checkpoint(str(self.checkpoints))
        if client is None:
            raise ValueError(f"the checkpoint in {self.checkpoints} could not be loaded")
        if client.get("config") != self.config.to_dict() or client.get("world") != self.world:
            raise ValueError("the checkpoint belongs to a run with another config or process count")
        self.curriculum.load_state_dict(client["curriculum"])
        self.monitor.load_state_dict(client["monitor"])
        self.monitor.truncate(client["step"])
        print(f"resuming at step {client['step']} from {self.checkpoints}", file=sys.stderr)
        return int(client["step"]), float(client["elapsed_s"])

    def _save(self, step: int, elapsed: float) -> None:
        import torch.distributed as dist

        client = {
            "step": step, "elapsed_s": elapsed, "config": self.config.to_dict(),
            "world": self.world, "curriculum": self.curriculum.state_dict(),
            "monitor": self.monitor.state_dict(),
        }  # fmt: skip
        self.engine.save_checkpoint(
            str(self.checkpoints), tag=f"step-{step:07d}", client_state=client
        )
        dist.barrier()
        if self.rank == 0:
            tags = sorted(p for p in self.checkpoints.glob("step-*") if p.is_dir())
            for old in tags[: -self.config.training.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)

    def _save_final(self, step: int, elapsed: float) -> Path:
        import torch.distributed as dist

        output = Path(self.config.output_dir)
        with self._whole_model():  # ZeRO 0-2: every rank holds the whole model anyway
            if self.rank == 0:
                from training.rl_monitor import run_summary

                output.mkdir(parents=True, exist_ok=True)
                self.engine.module.save_pretrained(str(output))
                (self.loaded.processor or self.loaded.tokenizer).save_pretrained(str(output))
                carry_gallery(self.config.model.from_dir, output)
                summary = run_summary(self, step, elapsed)
                text = json.dumps(summary, indent=2) + "\n"
                (output / "training_summary.json").write_text(text)
            dist.barrier()
        return output

    def _write_run_file(self) -> None:
        if self.rank != 0:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        info = {
            "config": self.config.to_dict(),
            "base_model": self.config.model.from_dir,
            "output_dir": self.config.output_dir,
            "command": " ".join(["genservice", *sys.argv[1:]]),
            "world_size": self.world,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (self.run_dir / RUN_FILE).write_text(json.dumps(info, indent=2) + "\n")


def _union(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals (time some validation was running)."""
    total, end = 0.0, float("-inf")
    for start, finish in sorted(intervals):
        if finish > end:
            total += finish - max(start, end)
            end = finish
    return total


def train_rl(config: RLConfig, resume: bool = False, show_progress: bool = True) -> Path:
    """Run `genservice train rl` with this config; the final model directory."""
    return RLTrainer(config, resume, show_progress).train()
