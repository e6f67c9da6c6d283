"""Plots of the benchmark results for the documentation: bench/results/*.json -> docs/img/bench/.

Each benchmark writes its raw figures to bench/results/; this draws those that are there (a
missing file is skipped with a note), so a plot in the docs is always the figures of a run.

Usage: .venv/bin/python -m bench.plots [--results bench/results] [--out docs/img/bench]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def judge_throughput(results: dict[str, Any], out: Path) -> Path | None:
    """Tasks/s of the code judge: warm pool against one fresh interpreter per task."""
    suites = [
        (name, results[key])
        for name, key in (("HumanEval", "humaneval"), ("MBPP 601-974", "mbpp"))
        if key in results
    ]
    if not suites:
        return None
    figure, axis = plt.subplots(figsize=(6, 3))
    names = [name for name, _ in suites]
    positions = range(len(suites))
    pool = [s["pool_tasks_per_s"] for _, s in suites]
    fresh = [s["one_shot_tasks_per_s"] for _, s in suites]
    axis.barh([p + 0.2 for p in positions], pool, height=0.4, label="warm pool")
    axis.barh([p - 0.2 for p in positions], fresh, height=0.4, label="fresh interpreter per task")
    for position, value in zip(positions, pool, strict=True):
        axis.text(value, position + 0.2, f" {value:.1f}", va="center")
    for position, value in zip(positions, fresh, strict=True):
        axis.text(value, position - 0.2, f" {value:.1f}", va="center")
    axis.set_yticks(list(positions), names)
    axis.set_xlabel("canonical solutions judged per second (2 cores)")
    axis.legend(loc="lower right")
    axis.set_xlim(0, max(pool) * 1.2)
    return _save(figure, out / "code-judge-throughput.png")


def wire_cost(results: dict[str, Any], out: Path) -> Path | None:
    """Microseconds per value across the judge's wire: plain data against standard values."""
    wire = results.get("wire")
    if not wire:
        return None
    figure, axis = plt.subplots(figsize=(6, 2.2))
    labels = ["plain data", "standard-library values"]
    values = [wire["plain_us"], wire["standard_us"]]
    axis.barh(labels, values, color=["#607d8b", "#1e88e5"])
    for position, value in enumerate(values):
        axis.text(value, position, f" {value:.1f} µs", va="center")
    axis.set_xlabel(f"encode → rebuild, µs a value ({wire['values']} MBPP expected values)")
    axis.set_xlim(0, max(values) * 1.3)
    return _save(figure, out / "wire-cost.png")


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed metadata, so a rerun on the same figures gives the same bytes.
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)
    return path


PLOTS: dict[str, list[Callable[[dict[str, Any], Path], Path | None]]] = {
    "validators.json": [judge_throughput, wire_cost],
}


def main() -> None:
    """Draw every plot whose results file exists."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    parser.add_argument("--out", type=Path, default=Path("docs/img/bench"))
    args = parser.parse_args()
    for file_name, plots in PLOTS.items():
        source = args.results / file_name
        if not source.is_file():
            print(f"skipped {file_name}: no results (run its benchmark first)")
            continue
        results = json.loads(source.read_text())
        for plot in plots:
            made = plot(results, args.out)
            print(f"wrote {made}" if made else f"{plot.__name__}: not in {file_name}")


if __name__ == "__main__":
    main()
