"""Benchmark: where an RL step's time goes, and how much validation hides behind generation.

Runs `genservice train rl` side by side (subprocesses of this one, alternating, same seeds, so
both write the very same candidates and do the very same work):
- overlapped (the default): a group is validated on the sandbox pool while the next generates;
- sequential (the baseline, `rollout.overlap: false`): validation starts once every group of
  the round is generated.
Per step it reports generation, reward (time some validation was running, and time spent
waiting for it after generation) and update; the overlap is the share of the reward time that
ran during generation: (generate + reward busy - rollout wall) / reward busy, where rollout wall
= step - update. The headline is the ratio of rollout wall times, overlapped / sequential.

Usage: .venv/bin/python -m bench.rl [--tasks FILE] [--steps 3] [--repeats 1]
Without --tasks it builds a 400-task corpus in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
GENSERVICE = Path(sys.executable).parent / "genservice"
MODES = {"overlapped": True, "sequential": False}


def _config(tasks: Path, root: Path, overlap: bool, steps: int) -> Path:
    raw = {
        "data": {"tasks": str(tasks), "heldout_tasks": 0, "audit_tasks": 0},
        "model": {"from": str(REPO / "genservice/models/tiny")},
        "rollout": {"prompts_per_step": 4, "group_size": 8, "max_new_tokens": 600,
                    "reward_workers": 2, "overlap": overlap},
        "loss": {"type": "dapo", "max_resample": 0},
        "training": {"max_steps": steps, "max_minutes": None, "save_every": 10**6,
                     "heldout_every": 0, "num_threads": 2, "updates_per_rollout": 2},
        "deepspeed": str(REPO / "training/configs/deepspeed/cpu.json"),
        "output_dir": str(root / "model"),
        "run_dir": str(root / "run"),
    }  # fmt: skip
    root.mkdir(parents=True)
    path = root / "rl.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _run(config: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(GENSERVICE), "train", "rl", "--no-progress", "--config", str(config)],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"genservice train rl failed:\n{done.stderr[-3000:]}")
    lines = (config.parent / "run/metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == "step"]


def _summary(records: list[dict[str, Any]]) -> dict[str, float]:
    def mean(key: str) -> float:
        return statistics.fmean(r["timing"][key] for r in records)

    generate, busy, wait = mean("generate_s"), mean("reward_busy_s"), mean("reward_wait_s")
    update, step = mean("update_s"), mean("step_s")
    rollout = step - update
    overlap = (generate + busy - rollout) / busy if busy else 0.0
    return {
        "steps": len(records),
        "step_s": step,
        "generate_s": generate,
        "reward_busy_s": busy,
        "reward_wait_s": wait,
        "update_s": update,
        "rollout_wall_s": rollout,
        "sum_of_parts_s": generate + busy + update,
        "overlap": max(0.0, min(1.0, overlap)),
        "samples_per_s": statistics.fmean(r["samples_per_s"] for r in records),
    }


def main() -> None:
    """Run the benchmark and print a markdown table; JSON in bench/results/rl.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, help="task JSONL (default: a fresh 400-task corpus)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="bench-rl-") as scratch:
        tasks = args.tasks
        if tasks is None:
            tasks = Path(scratch) / "tasks.jsonl"
            subprocess.run(
                [str(GENSERVICE), "corpus", "build", "--n", "400", "--seed", "0", "-o", str(tasks)],
                check=True, capture_output=True, cwd=REPO,
            )  # fmt: skip
        for repeat in range(args.repeats):
            for mode, overlap in MODES.items():
                started = time.monotonic()
                root = Path(scratch) / f"{mode}-{repeat}"
                records = _run(_config(tasks.resolve(), root, overlap, args.steps))
                results[mode] += records
                took = time.monotonic() - started
                print(f"{mode} run {repeat + 1}: {took:.0f} s", file=sys.stderr)
    table = {mode: _summary(records) for mode, records in results.items()}
    ratio = table["overlapped"]["rollout_wall_s"] / table["sequential"]["rollout_wall_s"]
    out = REPO / "bench/results/rl.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"modes": table, "rollout_ratio": ratio, "args": vars(args)},
                              indent=2, default=str))  # fmt: skip
    print("| mode | step s | generate s | reward busy s | reward wait s | update s | "
          "rollout wall s | sum of parts s | overlap | samples/s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode, row in table.items():
        print(
            f"| {mode} | {row['step_s']:.1f} | {row['generate_s']:.1f} | "
            f"{row['reward_busy_s']:.1f} | {row['reward_wait_s']:.1f} | {row['update_s']:.1f} | "
            f"{row['rollout_wall_s']:.1f} | {row['sum_of_parts_s']:.1f} | "
            f"{100 * row['overlap']:.0f} % | {row['samples_per_s']:.2f} |"
        )
    print(f"\nrollout wall time, overlapped / sequential: {ratio:.2f}x ({out})")


if __name__ == "__main__":
    main()
