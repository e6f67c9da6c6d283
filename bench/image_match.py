"""Benchmark: does `image_match` tell the part in a picture from other parts?

For a set of picture tasks (hand-drawn by default: eval/pictures_by_hand.jsonl), every task's
reference part is built in the sandbox and scored against every task's picture. The reference
against its own picture is the right shape; every other reference against it is a wrong one
(some wrong ones look alike: a washer and a napkin ring are both rings). Reported: how many
right shapes pass the check's threshold (`image_match.PASS`) and how many wrong ones do, the
same at other thresholds, how often the right shape scores above a wrong one for the same
picture (AUC), and how often it is the best match of all.

Usage: .venv/bin/python -m bench.image_match [--tasks eval/pictures_by_hand.jsonl] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image
from tqdm import tqdm

from exporters.parts import parts_from_payload
from genservice.generation.image_match import PASS, Target, image_match
from validators.cad.validate import run_cad
from validators.sandbox import Limits, SandboxPool

RESULTS = Path(__file__).parent / "results" / "image_match.json"
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)


def load_tasks(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """Picture tasks of a JSONL file, their picture paths made absolute."""
    tasks = []
    for line in path.read_text().splitlines():
        task = json.loads(line) if line.strip() else None
        if task and task.get("images") and task.get("reference"):
            task["images"] = [str(path.parent / p) for p in task["images"]]
            tasks.append(task)
    return tasks[:limit] if limit else tasks


def build_parts(tasks: list[dict[str, Any]], workers: int) -> list[Any]:
    """Each task's reference part, meshed by the sandbox's measurer (None when it fails)."""
    with SandboxPool(size=workers, limits=Limits(wall_s=60, memory_mb=2048)) as pool:

        def build(task: dict[str, Any]) -> Any:
            run = run_cad(task["reference"], pool, domain=task.get("domain", "cad"))
            return parts_from_payload(run.payload) if run.payload and run.report.valid else None

        with ThreadPoolExecutor(workers) as threads:
            return list(tqdm(threads.map(build, tasks), total=len(tasks), desc="references"))


def summarise(scores: list[list[float]]) -> dict[str, Any]:
    """Pass rates, AUC and top-1 of a score matrix (row: picture, column: part)."""
    n = len(scores)
    right = [scores[i][i] for i in range(n)]
    wrong = [scores[i][j] for i in range(n) for j in range(n) if i != j]
    pairs = [(scores[i][i], scores[i][j]) for i in range(n) for j in range(n) if i != j]
    auc = sum(1.0 if r > w else 0.5 if r == w else 0.0 for r, w in pairs) / max(1, len(pairs))
    top1 = sum(scores[i][i] >= max(scores[i]) for i in range(n)) / max(1, n)
    sweep = {
        f"{t:.2f}": {
            "right_pass": round(sum(r >= t for r in right) / max(1, len(right)), 4),
            "wrong_pass": round(sum(w >= t for w in wrong) / max(1, len(wrong)), 4),
        }
        for t in THRESHOLDS
    }
    return {
        "pictures": n,
        "threshold": PASS,
        "right_pass": sweep[f"{PASS:.2f}"]["right_pass"],
        "wrong_pass": sweep[f"{PASS:.2f}"]["wrong_pass"],
        "auc": round(auc, 4),
        "right_is_best": round(top1, 4),
        "median_right": round(sorted(right)[n // 2], 4) if n else None,
        "median_wrong": round(sorted(wrong)[len(wrong) // 2], 4) if wrong else None,
        "sweep": sweep,
    }


def closest(scores: list[list[float]], row: int, names: list[str]) -> dict[str, Any]:
    """A picture's score for its own part, and the wrong part that scores highest."""
    wrong = [col for col in range(len(names)) if col != row]
    nearest = max(wrong, key=lambda col: scores[row][col], default=row)
    return {
        "right": round(scores[row][row], 4),
        "best_wrong": round(scores[row][nearest], 4) if wrong else None,
        "best_wrong_part": names[nearest] if wrong else None,
    }


def main() -> None:
    """Run the benchmark, print a table and write bench/results/image_match.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=Path("eval/pictures_by_hand.jsonl"))
    parser.add_argument("--limit", type=int, help="the first N picture tasks only")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    tasks = load_tasks(args.tasks, args.limit)
    parts = build_parts(tasks, args.workers)
    kept = [i for i, p in enumerate(parts) if p is not None]
    targets = []
    for i in kept:
        with Image.open(tasks[i]["images"][0]) as picture:
            targets.append(Target(picture.convert("RGB")))
    cells = [(row, col) for row in range(len(kept)) for col in range(len(kept))]
    started = time.perf_counter()

    def score(cell: tuple[int, int]) -> float:
        return image_match(targets[cell[0]], parts[kept[cell[1]]])[0]

    with ThreadPoolExecutor(args.workers) as threads:
        flat = list(tqdm(threads.map(score, cells), total=len(cells), desc="picture × part"))
    scores = [flat[r * len(kept) : (r + 1) * len(kept)] for r in range(len(kept))]
    summary = summarise(scores)
    summary.update(
        tasks=str(args.tasks),
        references_failed=[tasks[i]["id"] for i, p in enumerate(parts) if p is None],
        seconds_per_score=round((time.perf_counter() - started) / max(1, len(cells)), 3),
        per_picture={tasks[i]["id"]: closest(scores, r, [tasks[k]["id"] for k in kept])
                     for r, i in enumerate(kept)},
    )  # fmt: skip
    print(f"{summary['pictures']} pictures; threshold {PASS}")
    print(f"  right shape passes   {summary['right_pass']:.1%}")
    print(f"  wrong shape passes   {summary['wrong_pass']:.1%}")
    print(f"  right above wrong    {summary['auc']:.1%} of pairs (AUC)")
    print(f"  right is best match  {summary['right_is_best']:.1%}")
    print("  threshold  right  wrong")
    for t, row in summary["sweep"].items():
        print(f"  {t:>9}  {row['right_pass']:5.1%}  {row['wrong_pass']:5.1%}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
