"""Benchmark: which start's fit should a picture request serve?

A picture request fits up to three starts of different designs (fit.fit_starts) and serves one
of the fitted parts. Each fit climbs `image_match`, the score that then chooses among them, so
the fitted parts often end within a few thousandths of each other whatever their shapes.
Serving takes the highest match (settle.SERVE_WITHIN = 0); the alternative measured here keeps
the earliest start (the best-ranked before any fit) unless a later start's fit matches by more
than settle.MARGIN better. `genservice eval` records every start's fitted part (`fit.by_start`:
passing every check, its match, its IoU to the pictured part), so one run holds both choices
on the very same fitted parts: this reads eval outputs and compares them, paired.

Usage: .venv/bin/python -m bench.served_fit var/eval/served/s0 [var/eval/served/s1 ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from genservice.generation.settle import MARGIN, served_fit

CLOSER = 0.01  # an IoU difference smaller than this is the same answer


def chosen(by_start: list[dict[str, Any]], within: float) -> int:
    """The start settle.served_fit serves with `within`: passing every check first, then the
    earliest whose match is within `within` of the highest."""
    return served_fit(
        [(not s["all_checks"], s["image_match"] or 0.0) for s in by_start], within=within
    )


def compare(run: Path) -> dict[str, Any]:
    """Paired IoU of the served answer under both rules over one eval run's fitted tasks."""
    tasks = json.loads((run / "eval.json").read_text())["tasks"]
    now, before, changed = [], [], []
    for task in tasks:
        fit, answer = task.get("fit") or {}, task.get("after_fit") or {}
        served_iou = answer.get("iou") or 0.0
        by_start = fit.get("by_start")
        old_iou, kept_iou = served_iou, served_iou
        if by_start:
            old_iou = by_start[chosen(by_start, 0.0)]["iou"] or 0.0
            kept_iou = by_start[chosen(by_start, MARGIN)]["iou"] or 0.0
        before.append(old_iou)
        now.append(kept_iou)
        if abs(kept_iou - old_iou) >= CLOSER:
            changed.append(
                {
                    "task": task["id"],
                    "highest_match": round(old_iou, 3),
                    "earlier_start": round(kept_iou, 3),
                }
            )
    return {
        "run": str(run),
        "tasks": len(tasks),
        "median_iou": {
            "highest_match": statistics.median(before),
            "earlier_start": statistics.median(now),
        },
        "mean_iou": {
            "highest_match": statistics.fmean(before),
            "earlier_start": statistics.fmean(now),
        },
        "closer": sum(c["earlier_start"] > c["highest_match"] for c in changed),
        "further": sum(c["earlier_start"] < c["highest_match"] for c in changed),
        "changed": changed,
    }


def main() -> None:
    """Print the comparison for each eval run given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="genservice eval output folders")
    for run in parser.parse_args().runs:
        result = compare(run)
        median, mean = result["median_iou"], result["mean_iou"]
        print(
            f"{run}: {result['tasks']} tasks; median IoU {median['highest_match']:.3f} -> "
            f"{median['earlier_start']:.3f}, mean {mean['highest_match']:.3f} -> "
            f"{mean['earlier_start']:.3f}; "
            f"{result['closer']} closer, {result['further']} further"
        )
        for change in result["changed"]:
            print(f"  {change['task']}: {change['highest_match']} -> {change['earlier_start']}")


if __name__ == "__main__":
    main()
