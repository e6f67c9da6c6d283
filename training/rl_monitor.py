"""What an RL run records: step and held-out metrics, warnings about suspicious patterns.

Records go to RUN_DIR/metrics.jsonl (one JSON object per line, "event": step | heldout | flag)
and to TensorBoard (RUN_DIR/tensorboard). Flags are printed too, because each is a reason to
look before trusting the reward curve:
- heldout_validity_down: the training reward rose while held-out validity fell (overfitting
  the reward, or a hack the validators miss);
- length_spike: a family's mean completion length jumped above 1.5x its running average;
- identical_outputs: most groups collapsed to a few distinct programs, clearly more than in
  the run so far (entropy collapse; a peaked start model alone does not raise it);
- hack_scan: code candidates the hack scan caught (sys.exit before asserts, patched equality…);
- family_regression: a family's recent reward fell well below its own long-run average.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from training.rewards import check_means
from training.rl_loss import all_equal
from training.rl_types import Group

if TYPE_CHECKING:
    from training.curriculum import CurriculumSampler
    from training.rl_config import RLConfig

METRICS_FILE = "metrics.jsonl"


class Trainer(Protocol):
    """What the monitor reads of a run's trainer (training.rl.RLTrainer is one)."""

    @property
    def config(self) -> RLConfig: ...
    @property
    def world(self) -> int: ...
    @property
    def tasks(self) -> list[dict[str, Any]]: ...
    @property
    def heldout(self) -> list[dict[str, Any]]: ...
    @property
    def loaded(self) -> Any: ...  # the policy: genservice.generation.loader.LoadedModel
    @property
    def pool(self) -> Any: ...  # validators.sandbox.SandboxPool
    def task_messages(self, task: dict[str, Any]) -> list[dict[str, Any]]: ...
    @property
    def limits(self) -> Any: ...  # validators.sandbox.Limits
    @property
    def monitor(self) -> Monitor: ...


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _iou(judged: Any) -> float | None:
    check = judged.report.checks.get("similarity")
    return float(check.detail["iou"]) if check is not None and "iou" in check.detail else None


def _spec(judged: Any) -> float:
    """1 when the candidate is valid and passed its spec (as `genservice eval` counts it)."""
    return float(judged.valid and judged.report.checks["spec"].passed)


def step_record(
    step: int,
    elapsed: float,
    extra: dict[str, Any],
    stats: dict[str, Any],
    curriculum: CurriculumSampler,
    lr: float,
    world: int,
) -> dict[str, Any]:
    """The step's metrics (candidates of this rank; the curriculum sees every rank's)."""
    groups: list[Group] = extra["every"]
    judged = [j for g in groups for j in g.judged]
    lengths = [len(ids) for g in groups for ids in g.completions]
    rewards = [j.reward for j in judged]
    weights = curriculum.weights()
    families: dict[str, dict[str, Any]] = {}
    for name in sorted({g.task["family"] for g in groups}):
        mine = [g for g in groups if g.task["family"] == name]
        js = [j for g in mine for j in g.judged]
        ious = [v for v in (_iou(j) for j in js) if v is not None]
        families[name] = {
            "domain": mine[0].task["domain"],
            "reward": _mean([j.reward for j in js]),
            "valid": _mean([float(j.valid) for j in js]),
            "iou": _mean(ious),
            "spec": _mean([_spec(j) for j in js if "spec" in j.report.checks]),
            "length": _mean([float(len(ids)) for g in mine for ids in g.completions]),
            "n": len(js),
            "weight": weights.get(name),
        }
    timing = extra["timing"]
    return {
        "event": "step",
        "step": step,
        "time_s": round(elapsed, 3),
        "reward": _mean(rewards) or 0.0,
        "reward_std": statistics.pstdev(rewards) if rewards else 0.0,
        "valid": _mean([float(j.valid) for j in judged]) or 0.0,
        "spec": _mean([_spec(j) for j in judged if "spec" in j.report.checks]),
        "length": _mean([float(n) for n in lengths]) or 0.0,
        "truncated": _mean([float(f == "length") for g in groups for f in g.finish]) or 0.0,
        "loss": stats["loss"],
        "kl": stats["kl"],
        "anchor_nll": stats["anchor_nll"],
        "entropy": stats["entropy"],
        "clip_frac": stats["clip_frac"],
        "lr": lr,
        "groups_kept": sum(not all_equal(g.rewards) for g in groups),
        "groups_skipped": extra["skipped"],
        "samples_per_s": len(judged) * world / max(timing["step_s"], 1e-9),
        "tokens_per_s": sum(lengths) * world / max(timing["step_s"], 1e-9),
        "timing": {key: round(value, 4) for key, value in timing.items()},
        "checks": check_means([j.report for j in judged]),
        "families": families,
        "repair_turns": _second_turns(groups),
        "world_size": world,
    }


def _second_turns(groups: list[Group]) -> dict[str, Any]:
    """The step's second-turn (repair) groups: how many, their reward and how many fixed."""
    second = [j for g in groups if g.task.get("turn") == 2 for j in g.judged]
    return {
        "groups": sum(1 for g in groups if g.task.get("turn") == 2),
        "reward": _mean([j.reward for j in second]),
        "valid": _mean([float(j.valid) for j in second]),
    }


def heldout_record(trainer: Trainer, step: int, elapsed: float) -> dict[str, Any]:
    """Score the held-out tasks: 2 candidates each, the same seeds at every evaluation."""
    from genservice.generation.prompts import clean_completion
    from genservice.generation.sampler import sample
    from training.evaluate import evaluate_task

    results = []
    for index, task in enumerate(trainer.heldout):
        completions = sample(
            trainer.loaded, trainer.task_messages(task), n=2, seed=index,
            max_new_tokens=trainer.config.rollout.max_new_tokens, temperature=0.8, top_p=0.95,
        )  # fmt: skip
        programs = [clean_completion(c.text) for c in completions]
        results.append(evaluate_task(task, programs, trainer.pool, trainer.limits))

    def summary(rows: list[Any]) -> dict[str, Any]:
        cad = [c for r in rows if r.domain != "code" for c in r.candidates]
        code = [c for r in rows if r.domain == "code" for c in r.candidates]
        every = [c for r in rows for c in r.candidates]
        specs = [float(bool(c.spec_passed)) for c in cad if c.spec_passed is not None]
        return {
            "valid": _mean([float(c.valid) for c in every]) or 0.0,
            "spec": _mean(specs),
            "iou": _mean([c.iou for c in cad if c.iou is not None]),
            "code_pass": _mean([float(c.valid) for c in code]),
            "reward": _mean([c.reward for c in every]) or 0.0,
        }

    families = {
        name: summary([r for r in results if r.family == name])
        for name in sorted({r.family for r in results})
    }
    return {"event": "heldout", "step": step, "time_s": round(elapsed, 3), **summary(results),
            "families": families}  # fmt: skip


class Monitor:
    """Writes records (rank 0 only) and raises flags on suspicious patterns."""

    def __init__(self, run_dir: Path, enabled: bool = True):
        self.run_dir = run_dir
        self.enabled = enabled
        self.path = run_dir / METRICS_FILE
        self.writer: Any = None
        self.family_length: dict[str, tuple[float, int]] = {}  # family -> (average, steps)
        self.rewards: list[float] = []  # step rewards since the run began
        self.last_heldout: dict[str, Any] | None = None
        self.regressing: list[str] = []
        self.collapsed_ema: float | None = None  # share of groups with few distinct programs

    def truncate(self, step: int) -> None:
        """Drop records after `step` (a resumed run writes them again) and open TensorBoard."""
        if not self.enabled:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        kept = []
        if step and self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    if json.loads(line).get("step", 0) <= step:
                        kept.append(line)
                except ValueError:
                    continue  # a line cut short by a kill
        self.path.write_text("".join(line + "\n" for line in kept))
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=step + 1)

    def _write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def _scalars(self, prefix: str, values: dict[str, Any], step: int) -> None:
        for key, value in values.items():
            if isinstance(value, dict):
                self._scalars(f"{prefix}{key}/", value, step)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                self.writer.add_scalar(f"{prefix}{key}", value, step)

    def flag(self, step: int, kind: str, message: str) -> None:
        """Record and print a warning about the run."""
        if not self.enabled:
            return
        print(f"warning (step {step}): {kind}: {message}", file=sys.stderr)
        self._write({"event": "flag", "step": step, "kind": kind, "message": message})

    def step(self, record: dict[str, Any], groups: list[Group], curriculum: Any) -> None:
        """Log a step record and check it for suspicious patterns."""
        step = record["step"]
        self.rewards.append(record["reward"])
        if not self.enabled:
            return
        self._write(record)
        self._scalars("train/", {k: v for k, v in record.items() if k != "step"}, step)
        spikes = []
        for name, family in record["families"].items():  # lengths differ by family: compare like
            usual, seen = self.family_length.get(name, (family["length"], 0))
            if seen >= 5 and family["length"] > max(1.5 * usual, usual + 50):
                spikes.append(f"{name} {family['length']:.0f} tokens (usually {usual:.0f})")
            self.family_length[name] = (usual + 0.2 * (family["length"] - usual), seen + 1)
        if spikes:
            self.flag(step, "length_spike", "mean completion length jumped: " + ", ".join(spikes))
        collapsed = sum(len(set(g.programs)) <= max(1, len(g.programs) // 4) for g in groups)
        share = collapsed / len(groups) if groups else 0.0
        usual = self.collapsed_ema
        if usual is not None and len(self.rewards) > 5 and share >= max(0.5, usual + 0.25):
            self.flag(step, "identical_outputs", f"{collapsed} of {len(groups)} groups wrote at "
                      f"most a quarter distinct programs (usually {usual:.0%})")  # fmt: skip
        self.collapsed_ema = share if usual is None else usual + 0.1 * (share - usual)
        hacks = sum(
            1
            for g in groups
            for j in g.judged
            if "hack_scan" in j.report.checks and not j.report.checks["hack_scan"].passed
        )
        if hacks:
            self.flag(step, "hack_scan", f"{hacks} candidates caught by the hack scan")
        regressing = curriculum.regressions()
        for name in sorted(set(regressing) - set(self.regressing)):
            stats = curriculum.stats[name]
            self.flag(step, "family_regression", f"{name}: recent reward {stats.fast:.3f} below "
                      f"its average {stats.slow:.3f}")  # fmt: skip
        self.regressing = regressing
        self.writer.flush()

    def heldout(self, record: dict[str, Any]) -> None:
        """Log a held-out evaluation; flag validity falling while the training reward rises."""
        step = record["step"]
        self._write(record)
        self._scalars("heldout/", {k: v for k, v in record.items() if k != "step"}, step)
        previous = self.last_heldout
        if previous is not None:
            since = self.rewards[previous["step"] :]
            before = self.rewards[: previous["step"]][-len(since) :] if since else []
            rising = since and before and statistics.fmean(since) > statistics.fmean(before)
            if rising and record["valid"] < previous["valid"] - 0.1:
                self.flag(step, "heldout_validity_down", f"held-out validity "
                          f"{previous['valid']:.0%} -> {record['valid']:.0%} while the training "
                          "reward rose")  # fmt: skip
        self.last_heldout = record
        self.writer.flush()

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to flag as an uninterrupted one would."""
        return {"family_length": dict(self.family_length), "rewards": list(self.rewards),
                "last_heldout": self.last_heldout, "regressing": list(self.regressing),
                "collapsed_ema": self.collapsed_ema}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore `state_dict`."""
        lengths = state["family_length"].items()
        self.family_length = {k: (float(average), int(seen)) for k, (average, seen) in lengths}
        self.rewards = list(state["rewards"])
        self.last_heldout = state["last_heldout"]
        self.regressing = list(state["regressing"])
        self.collapsed_ema = state.get("collapsed_ema")

    def close(self) -> None:
        """Flush TensorBoard."""
        if self.writer is not None:
            self.writer.close()


def run_summary(trainer: Trainer, step: int, elapsed: float) -> dict[str, Any]:
    """training_summary.json of the RL model: this run, on top of its base model's summary."""
    import torch
    import transformers

    config = trainer.config
    base_file = Path(config.model.from_dir) / "training_summary.json"
    base = json.loads(base_file.read_text()) if base_file.is_file() else None
    records = []
    if trainer.monitor.path.exists():
        for line in trainer.monitor.path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    steps = [r for r in records if r.get("event") == "step"]
    tail = steps[-max(1, len(steps) // 10) :]
    return {
        "kind": "rl",
        "command": " ".join(["genservice", *sys.argv[1:]]),
        "config": config.to_dict(),
        "steps": step,
        "train_time_s": round(elapsed, 1),
        "world_size": trainer.world,
        "tasks": len(trainer.tasks),
        "final_reward": _mean([r["reward"] for r in tail]),
        "final_valid": _mean([r["valid"] for r in tail]),
        "heldout": [r for r in records if r.get("event") == "heldout"],
        "num_threads": torch.get_num_threads(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "corpus_command": (base or {}).get("corpus_command"),
        "data": (base or {}).get("data"),
        "model": (base or {}).get("model"),
        "base": base,
    }
