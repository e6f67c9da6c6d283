"""Before/after table of two models from `genservice eval` runs over several sampling seeds.

Each side is a list of eval directories (one per seed, the same seeds on both sides, in the same
order), so every metric is compared seed by seed: Δ = after - before per seed, then the mean Δ
and its spread. A change counts as beyond noise when |mean Δ| > 2 × (std of Δ / √seeds) and
larger than `floor` — with three seeds that is a rough test, said as such in the output.

Usage: python -m training.compare --before B1 B2 B3 --after A1 A2 A3 [-o table.md]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

Metric = tuple[str, Callable[[dict[str, Any]], float | None], bool]  # label, getter, higher better


def _best(group: dict[str, Any]) -> dict[str, Any]:
    return next(v for k, v in group.items() if k.startswith("best_of_"))


def _repaired(group: dict[str, Any], which: str, key: str) -> float | None:
    """A metric after repair rounds (None when the run did not repair)."""
    after = group.get("after_repair")
    if after is None:
        return None
    scores = after["pass@1"] if which == "pass@1" else _best(after)
    value: float | None = scores.get(key)
    return value


def _pass_n(group: dict[str, Any]) -> float | None:
    return next(
        (v for k, v in group.items() if k.startswith("code_pass@") and k != "code_pass@1"), None
    )


CAD_METRICS: list[Metric] = [
    ("invalid@1", lambda g: g["pass@1"]["invalidity"], False),
    ("spec@1", lambda g: g["pass@1"]["spec_adherence"], True),
    ("all checks@1", lambda g: g["pass@1"]["all_checks"], True),
    ("mean IoU@1 (invalid = 0)", lambda g: g["pass@1"]["iou_all_mean"], True),
    ("median IoU@1 (valid)", lambda g: g["pass@1"]["iou_valid_median"], True),
    ("best-of-N invalid", lambda g: _best(g)["invalidity"], False),
    ("best-of-N spec", lambda g: _best(g)["spec_adherence"], True),
    ("request@1", lambda g: g["pass@1"].get("request_adherence"), True),
    ("best-of-N request", lambda g: _best(g).get("request_adherence"), True),
    ("median IoU@1 (invalid = 0)", lambda g: g["pass@1"].get("iou_all_median"), True),
    ("invalid@1 after repair", lambda g: _repaired(g, "pass@1", "invalidity"), False),
    ("median IoU@1 after repair", lambda g: _repaired(g, "pass@1", "iou_all_median"), True),
    ("best-of-N spec after repair", lambda g: _repaired(g, "best", "spec_adherence"), True),
]
CODE_METRICS: list[Metric] = [
    ("pass@1", lambda g: g["code_pass@1"], True),
    ("pass@N", _pass_n, True),
]


def _load(dirs: list[Path]) -> list[dict[str, Any]]:
    return [json.loads((d / "eval.json").read_text()) for d in dirs]


def _values(summaries: list[dict[str, Any]], where: Callable, get: Callable) -> list[float] | None:
    found = []
    for summary in summaries:
        group = where(summary)
        value = get(group) if group is not None else None
        if value is None:
            return None
        found.append(float(value))
    return found


def compare(
    before: list[dict[str, Any]], after: list[dict[str, Any]], where: Callable, metric: Metric,
    floor: float,
) -> dict[str, Any] | None:  # fmt: skip
    """Mean and spread of both sides and of the per-seed differences for one metric."""
    label, get, higher = metric
    b, a = _values(before, where, get), _values(after, where, get)
    if b is None or a is None:
        return None
    deltas = [y - x for x, y in zip(b, a, strict=True)]
    mean = statistics.fmean(deltas)
    spread = statistics.stdev(deltas) if len(deltas) > 1 else 0.0
    noise = 2 * spread / math.sqrt(len(deltas))
    beyond = abs(mean) > max(noise, floor)
    better = beyond and (mean > 0) == higher
    return {
        "metric": label, "before": b, "after": a, "delta": mean, "delta_spread": spread,
        "beyond_noise": beyond, "better": better, "worse": beyond and not better,
    }  # fmt: skip


def _task_scores(evals: list[dict[str, Any]]) -> list[dict[str, tuple[str, float]]] | None:
    """Per eval run: task id -> (family, share of its candidates passing every check)."""
    found = []
    for run in evals:
        tasks = run.get("tasks")
        if not tasks:
            return None
        found.append(
            {
                t["id"]: (t["family"], statistics.fmean(c["all_checks"] for c in t["candidates"]))
                for t in tasks
                if t["candidates"]
            }
        )
    return found


def task_test(
    before: list[dict[str, tuple[str, float]]], after: list[dict[str, tuple[str, float]]],
    family: str, floor: float,
) -> dict[str, Any] | None:  # fmt: skip
    """Paired over the family's tasks: mean Δ per task (over seeds) and its standard error."""
    runs = before + after
    ids = sorted(
        i for i, (f, _) in before[0].items() if f == family and all(i in run for run in runs)
    )
    if not ids:
        return None
    deltas = [
        statistics.fmean(run[i][1] for run in after) - statistics.fmean(run[i][1] for run in before)
        for i in ids
    ]
    mean = statistics.fmean(deltas)
    error = statistics.stdev(deltas) / math.sqrt(len(deltas)) if len(deltas) > 1 else 0.0
    beyond = abs(mean) > max(2 * error, floor)
    return {"delta": mean, "error": error, "tasks": len(ids), "worse": beyond and mean < 0,
            "better": beyond and mean > 0}  # fmt: skip


def _mark(result: dict[str, Any]) -> str:
    return " ✔" if result["better"] else (" ✘" if result["worse"] else "")


def _task_cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return " – |"
    return (
        f" {100 * result['delta']:+.1f} ± {100 * result['error']:.1f} ({result['tasks']})"
        f"{_mark(result)} |"
    )


def _cell(values: list[float]) -> str:
    mean = statistics.fmean(values)
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * mean:.1f} ± {100 * spread:.1f}"


def _row(name: str, result: dict[str, Any]) -> str:
    mark = _mark(result)
    return (
        f"| {name} | {result['metric']} | {_cell(result['before'])} | {_cell(result['after'])} | "
        f"{100 * result['delta']:+.1f} ± {100 * result['delta_spread']:.1f}{mark} |"
    )


def table(before_dirs: list[Path], after_dirs: list[Path], floor: float = 0.02) -> str:
    """The markdown comparison: domains with every metric, then one line per family."""
    if len(before_dirs) != len(after_dirs) or not before_dirs:
        raise ValueError("give the same number (≥ 1) of eval directories before and after")
    before_runs, after_runs = _load(before_dirs), _load(after_dirs)
    before = [run["summary"] for run in before_runs]
    after = [run["summary"] for run in after_runs]
    header = "| | metric | before (mean ± sd, %) | after | Δ per seed (mean ± sd) |\n"
    header += "|---" * 5 + "|"
    lines = [
        f"{len(before)} sampling seeds, the same on both sides; ✔/✘ = a change beyond noise "
        f"(|mean Δ| > 2 sd/√{len(before)} and > {100 * floor:.0f} points).",
        "",
        header,
    ]
    for domain in before[0]["domains"]:
        metrics = CODE_METRICS if domain == "code" else CAD_METRICS
        for metric in metrics:
            result = compare(before, after, lambda s, d=domain: s["domains"].get(d), metric, floor)
            if result is not None:
                lines.append(_row(domain, result))
    tasks_before, tasks_after = _task_scores(before_runs), _task_scores(after_runs)
    with_tasks = tasks_before is not None and tasks_after is not None
    family_header = header
    if with_tasks:
        family_header = header.replace(" |\n", " | Δ per task (mean ± se, tasks) |\n", 1) + "---|"
    lines += ["", "Per family (CAD and scenes: all checks@1; code: pass@1):", "", family_header]
    regressed, regressed_tasks = [], []
    for family in sorted(before[0]["families"]):
        group = before[0]["families"][family]
        metric = CODE_METRICS[0] if "code_pass@1" in group else CAD_METRICS[2]
        result = compare(before, after, lambda s, f=family: s["families"].get(f), metric, 0.1)
        if result is None:
            continue
        row = _row(family, result)
        if result["worse"]:
            regressed.append(family)
        if with_tasks:
            by_task = task_test(tasks_before or [], tasks_after or [], family, 0.1)
            row += _task_cell(by_task)
            if by_task is not None and by_task["worse"]:
                regressed_tasks.append(family)
        lines.append(row)
    lines += ["", f"Families worse beyond noise: {', '.join(regressed) or 'none'}."]
    if with_tasks:
        lines.append(
            f"Families worse beyond noise by the task test: {', '.join(regressed_tasks) or 'none'}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print (or write) the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", nargs="+", type=Path, required=True)
    parser.add_argument("--after", nargs="+", type=Path, required=True)
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    text = table(args.before, args.after)
    if args.output:
        args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
