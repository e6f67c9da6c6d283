"""The report of an RL fine-tuning run: markdown with PNG plots (`genservice train report RUN_DIR`).

Reads RUN_DIR/metrics.jsonl (step records, held-out evaluations and flags, told apart by their
"event" key) and the optional RUN_DIR/run.json, and writes report.md with reward.png,
families.png, length_kl.png, throughput.png and, when the run evaluated held-out tasks,
heldout.png next to it. "First" and "last" are the means over the first and last 10 % of a
series. Lines that are not JSON (a run killed mid-write leaves a partial last line) are skipped
and counted in the report.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WINDOW = 0.1  # share of a series that "first" and "last" average over
REGRESSION_FLOOR = 0.05  # a family's reward must fall by more than this to count as regressed
FLAG_MESSAGES = 3  # messages shown per kind of flag
TIMING = ("generate_s", "reward_wait_s", "reward_busy_s", "update_s", "step_s")
STACKED = {"generate": "generate_s", "reward wait": "reward_wait_s", "update": "update_s"}
SIGNALS = ("reward_std", "length", "truncated", "loss", "kl", "entropy", "clip_frac", "lr")
Format = Callable[[float | None], str]


@dataclass
class RunLog:
    """The records of a run's metrics.jsonl by kind, ordered by step."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    heldout: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0


def read_metrics(run_dir: Path) -> RunLog:
    """The records of RUN_DIR/metrics.jsonl; ValueError when there is no step record to report."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise ValueError(
            f"{run_dir} has no metrics.jsonl: is it the run_dir of `genservice train rl`?"
        )
    log = RunLog()
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                log.skipped += 1
                continue
            kinds = {"step": log.steps, "heldout": log.heldout, "flag": log.flags}
            kinds.get(str(record.get("event")), []).append(record)
    if not log.steps:
        raise ValueError(
            f"{path} holds no step records ({log.skipped} lines were not JSON): has the run "
            "finished its first step?"
        )
    # A resumed run may log a step twice: the later record wins.
    log.steps = sorted({r.get("step", 0): r for r in log.steps}.values(), key=_step)
    log.heldout.sort(key=_step)
    return log


def _step(record: dict[str, Any]) -> int:
    return int(record.get("step", 0))


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _window(n: int) -> int:
    return max(1, math.ceil(WINDOW * n))


def first_last(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """The means of the first and last 10 % of a series (None values left out)."""
    k = _window(len(values))
    return _mean(values[:k]), _mean(values[-k:])


def _ends(records: list[dict[str, Any]], key: str) -> tuple[float | None, float | None]:
    return first_last([r.get(key) for r in records])


def regressed(rewards: Sequence[float]) -> bool:
    """Whether last-10 % reward is below first-10 % by more than max(0.05, 2 standard errors)."""
    first, last = first_last(rewards)
    if first is None or last is None or len(rewards) < 2:
        return False
    # Step-to-step noise from consecutive differences (a slow trend barely moves it), then the
    # standard error of the difference of two means over k steps each.
    diffs = [b - a for a, b in itertools.pairwise(rewards)]
    sigma = math.sqrt(sum(d * d for d in diffs) / (2 * len(diffs)))
    standard_error = sigma * math.sqrt(2 / _window(len(rewards)))
    return first - last > max(REGRESSION_FLOOR, 2 * standard_error)


def overlap(timing: dict[str, float | None]) -> float | None:
    """The share of reward work hidden behind generation, clamped to [0, 1]."""
    if any(timing.get(key) is None for key in TIMING) or not timing["reward_busy_s"]:
        return None
    generate, busy = timing["generate_s"] or 0.0, timing["reward_busy_s"]
    hidden = generate + busy - ((timing["step_s"] or 0.0) - (timing["update_s"] or 0.0))
    return min(1.0, max(0.0, hidden / busy))


def _families(steps: list[dict[str, Any]]) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    series: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for record in steps:
        for name, family in (record.get("families") or {}).items():
            series[name].append((_step(record), family))
    return dict(sorted(series.items()))


def _series(records: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    pairs = [(_step(r), r.get(key)) for r in records]
    return [s for s, v in pairs if v is not None], [float(v) for _, v in pairs if v is not None]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _sig(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _pair(pair: tuple[float | None, float | None], fmt: Format = _num) -> str:
    return f"{fmt(pair[0])} → {fmt(pair[1])}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def _samples(record: dict[str, Any]) -> float:
    """Samples of a step over all ranks (families' n counts rank 0 only)."""
    step_s = (record.get("timing") or {}).get("step_s")
    if record.get("samples_per_s") is not None and step_s is not None:
        return float(record["samples_per_s"] * step_s)
    return sum(f.get("n") or 0 for f in (record.get("families") or {}).values())


def _header(run_dir: Path, log: RunLog, run: dict[str, Any]) -> list[str]:
    steps = log.steps
    lines = [f"# RL run report: {run_dir.name}", ""]
    if run.get("command"):
        lines.append(f"- command: `{run['command']}`")
    labels = {"base_model": "base model", "output_dir": "output", "world_size": "world size"}
    for key, label in {**labels, "started": "started"}.items():
        if run.get(key) is not None:
            lines.append(f"- {label}: {run[key]}")
    wall = max((r.get("time_s") or 0.0) for r in steps)
    lines += [
        f"- steps: {len(steps)} (step {_step(steps[0])} to {_step(steps[-1])}), wall time "
        f"{_duration(wall)}, {sum(_samples(r) for r in steps):,.0f} samples "
        f"({_num(_mean(r.get('samples_per_s') for r in steps), 2)} samples/s, "
        f"{_num(_mean(r.get('tokens_per_s') for r in steps), 0)} tokens/s on average)",
        f"- reward (first → last 10 % of steps): {_pair(_ends(steps, 'reward'))}",
        f"- valid: {_pair(_ends(steps, 'valid'), _pct)}",
        f"- held-out evaluations: {len(log.heldout)}; flags: {len(log.flags)}",
    ]
    if log.skipped:
        lines.append(
            f"- skipped: {log.skipped} line(s) of metrics.jsonl that were not JSON "
            "(a run killed mid-write leaves a partial last line)"
        )
    return [*lines, "", "![reward and validity over steps](reward.png)", ""]


def _family_table(steps: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Families",
        "",
        "First → last 10 % of each family's steps. *regressed*: reward fell by more than "
        f"max({REGRESSION_FLOOR}, 2 × its standard error from step-to-step noise).",
        "",
        "| family | domain | reward | change | valid | IoU | length | weight | |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, series in _families(steps).items():
        records = [family for _, family in series]
        rewards = [r["reward"] for r in records if r.get("reward") is not None]
        first, last = first_last(rewards)
        change = "–" if first is None or last is None else f"{last - first:+.3f}"
        lines.append(
            f"| {name} | {records[-1].get('domain', '–')} | {_pair((first, last))} | {change} "
            f"| {_pair(_ends(records, 'valid'), _pct)} "
            f"| {_pair(_ends(records, 'iou'))} | {_pair(_ends(records, 'length'), _sig)} "
            f"| {_num(records[-1].get('weight'))} | {'⚠ regressed' if regressed(rewards) else ''} |"
        )
    return [*lines, "", "![per-family reward over steps](families.png)", ""]


def _signals_table(steps: list[dict[str, Any]]) -> list[str]:
    lines = ["## Optimisation", "", "| signal | first 10 % | last 10 % |", "|---|---|---|"]
    for key in SIGNALS:
        first, last = first_last([r.get(key) for r in steps])
        lines.append(f"| {key} | {_sig(first)} | {_sig(last)} |")
    kept = sum(r.get("groups_kept") or 0 for r in steps)
    skipped = sum(r.get("groups_skipped") or 0 for r in steps)
    if kept + skipped:
        lines.append(f"| groups skipped (all steps) | {_pct(skipped / (kept + skipped))} | |")
    return [*lines, "", "![mean length and KL over steps](length_kl.png)", ""]


def _heldout_table(heldout: list[dict[str, Any]]) -> list[str]:
    if not heldout:
        return ["## Held-out evaluations", "", "No held-out evaluations were recorded.", ""]
    lines = [
        "## Held-out evaluations",
        "",
        "| step | time | valid | spec | IoU | code pass | reward |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in heldout:
        lines.append(
            f"| {_step(r)} | {_duration(r.get('time_s') or 0.0)} | {_pct(r.get('valid'))} "
            f"| {_pct(r.get('spec'))} | {_num(r.get('iou'))} | {_pct(r.get('code_pass'))} "
            f"| {_num(r.get('reward'))} |"
        )
    return [*lines, "", "![held-out evaluations over steps](heldout.png)", ""]


def _time_table(steps: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Time per step",
        "",
        "Mean seconds per step. Reward overlap: the share of reward work done while generating, "
        "(generate + reward busy − (step − update)) / reward busy.",
        "",
        "| steps | generate | reward wait | reward busy | update | step | reward overlap |",
        "|---|---|---|---|---|---|---|",
    ]
    k = _window(len(steps))
    for label, records in (("first 10 %", steps[:k]), ("last 10 %", steps[-k:]), ("all", steps)):
        means = {key: _mean((r.get("timing") or {}).get(key) for r in records) for key in TIMING}
        cells = " | ".join(_num(means[key], 2) for key in TIMING)
        lines.append(f"| {label} | {cells} | {_pct(overlap(means))} |")
    return [*lines, "", "![throughput and time split over steps](throughput.png)", ""]


def _flag_list(flags: list[dict[str, Any]]) -> list[str]:
    lines = ["## Flags", ""]
    if not flags:
        return [*lines, "No flags were raised.", ""]
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for flag in flags:
        by_kind[str(flag.get("kind", "unknown"))].append(flag)
    for kind, group in sorted(by_kind.items(), key=lambda item: (-len(item[1]), item[0])):
        lines += [f"### {kind} ({len(group)})", ""]
        lines += [f"- step {_step(f)}: {f.get('message', '')}" for f in group[:FLAG_MESSAGES]]
        if len(group) > FLAG_MESSAGES:
            lines.append(f"- … and {len(group) - FLAG_MESSAGES} more")
        lines.append("")
    return lines


def _smooth(values: Sequence[float]) -> list[float]:
    """Trailing moving average over about 10 % of the series (1 to 50 points)."""
    width = max(1, min(50, len(values) // 10))
    smoothed, total = [], 0.0
    for i, value in enumerate(values):
        total += value - (values[i - width] if i >= width else 0.0)
        smoothed.append(total / min(i + 1, width))
    return smoothed


def write_plots(log: RunLog, out: Path) -> list[str]:
    """The run's PNG plots in `out`; returns their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[str] = []

    def save(figure: Any, name: str) -> None:
        figure.tight_layout()
        figure.savefig(out / name, dpi=100)
        plt.close(figure)
        written.append(name)

    def curve(axis: Any, xs: list[int], ys: list[float], title: str) -> None:
        if ys:
            axis.plot(xs, ys, color="C0", alpha=0.25, linewidth=0.8, label="raw")
            axis.plot(xs, _smooth(ys), color="C0", label="moving average")
            axis.legend(fontsize=7)
        else:
            axis.text(0.5, 0.5, "not measured", transform=axis.transAxes, ha="center")
        axis.set_title(title)

    steps = log.steps
    figure, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    curve(axes[0], *_series(steps, "reward"), "reward")
    curve(axes[1], *_series(steps, "valid"), "valid share")
    axes[1].set_xlabel("step")
    save(figure, "reward.png")

    figure, axis = plt.subplots(figsize=(10, 5))
    for i, (name, series) in enumerate(_families(steps).items()):
        points = [(s, f["reward"]) for s, f in series if f.get("reward") is not None]
        style = ("-", "--", ":")[i // 10 % 3]
        axis.plot([s for s, _ in points], _smooth([v for _, v in points]), style, label=name)
    axis.set(title="reward per family (moving average)", xlabel="step")
    if axis.lines:
        axis.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save(figure, "families.png")

    figure, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    curve(axes[0], *_series(steps, "length"), "mean completion length (tokens)")
    curve(axes[1], *_series(steps, "kl"), "KL to the reference")
    axes[1].set_xlabel("step")
    save(figure, "length_kl.png")

    figure, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    curve(axes[0], *_series(steps, "samples_per_s"), "samples / s")
    timed = [r for r in steps if all((r.get("timing") or {}).get(k) is not None for k in TIMING)]
    if timed:
        xs = [_step(r) for r in timed]
        parts = [[r["timing"][key] for r in timed] for key in STACKED.values()]
        axes[1].stackplot(xs, *parts, labels=list(STACKED))
        axes[1].plot(xs, [r["timing"]["step_s"] for r in timed], "k--", label="whole step")
        axes[1].legend(fontsize=7, loc="upper left")
    axes[1].set(title="time per step (s)", xlabel="step")
    save(figure, "throughput.png")

    if log.heldout:
        figure, axis = plt.subplots(figsize=(8, 4))
        for key in ("valid", "spec", "iou", "code_pass"):
            xs, ys = _series(log.heldout, key)
            if ys:
                axis.plot(xs, ys, marker="o", label=key)
        axis.set(title="held-out evaluations", xlabel="step", ylim=(0, 1.05))
        if axis.lines:
            axis.legend(fontsize=7)
        save(figure, "heldout.png")
    return written


def write_report(run_dir: Path, output: Path | None = None) -> Path:
    """Write RUN_DIR/report.md (or `output`) with plots next to it; return the markdown path."""
    run_dir = Path(run_dir)
    log = read_metrics(run_dir)
    try:
        run = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        run = {}
    path = Path(output) if output is not None else run_dir / "report.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_plots(log, path.parent)
    lines = [
        *_header(run_dir, log, run if isinstance(run, dict) else {}),
        *_family_table(log.steps),
        *_signals_table(log.steps),
        *_heldout_table(log.heldout),
        *_time_table(log.steps),
        *_flag_list(log.flags),
    ]
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path
