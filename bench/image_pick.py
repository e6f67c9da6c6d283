"""Benchmark: does `image_match` pick the closest part among look-alikes?

Serving answers a picture with the candidate `image_match` scores highest, and most candidates
are the gallery parts that look most like the picture: parts of the same kind at other sizes,
and parts of other kinds with a similar outline. This measures that choice on the hardest wrong
parts there are. For each picture of an image-task file (default the fit set's first 48), the
shipped gallery's K nearest parts (as serving retrieves them) and the task's own reference are
built in the sandbox; each gets its IoU to the reference (centred and scaled to unit size) and
its `image_match` score against the picture. Reported:

- the reference is the best match: how often the pictured part outscores all K look-alikes;
- the IoU of the look-alike the check picks, against the best IoU among them (the oracle) and
  against the gallery's own first (its order is the baseline the check must beat);
- how often the check's pick is the oracle's, and the rank correlation of score and IoU.

Usage: .venv/bin/python -m bench.image_pick [--tasks FILE] [--limit 48] [--k 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tqdm import tqdm

RESULTS = Path(__file__).parent / "results" / "image_pick.json"


def build(program: str, domain: str, pool: Any) -> tuple[Any, Any] | None:
    """A program's parts (for drawing) and combined mesh (for IoU); None when it fails."""
    from exporters.parts import parts_from_payload
    from validators.cad.mesh import combine, decode_mesh
    from validators.cad.validate import run_cad

    run = run_cad(program, pool, domain=domain)
    if not run.payload or not run.report.valid:
        return None
    mesh = combine([decode_mesh(p.get("mesh")) for p in run.payload["parts"]])
    return (parts_from_payload(run.payload), mesh) if mesh is not None else None


def iou_to(mesh: Any, reference: Any, task: dict[str, Any]) -> float:
    """A mesh's IoU to the task's reference, centred and scaled to unit size (any orientation
    where the task's spec allows it; 0 when they cannot be compared)."""
    from validators.cad import similarity

    any_way = bool((task.get("spec") or {}).get("any_orientation"))
    try:
        return float(similarity.compare(mesh, reference, any_way)[0])
    except ValueError:
        return 0.0


def _rank_correlation(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rho (ties share a mean rank); None when either side is constant."""
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None

    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    return statistics.correlation(rx, ry)


def pick(task: dict[str, Any], found: list[dict[str, Any]]) -> dict[str, Any]:
    """One picture's outcome: the check's pick among the look-alikes, the oracle, the first."""
    alike = [f for f in found if not f["reference"]]
    reference = next((f for f in found if f["reference"]), None)
    chosen = max(alike, key=lambda f: f["score"])
    return {
        "id": task["id"],
        "look": (task.get("look") or {}).get("style"),
        "reference_score": reference["score"] if reference else None,
        "reference_is_best": bool(reference and reference["score"] > chosen["score"]),
        "picked_iou": chosen["iou"],
        "oracle_iou": max(f["iou"] for f in alike),
        "first_iou": alike[0]["iou"],
        "picked_is_oracle": chosen["iou"] >= max(f["iou"] for f in alike) - 1e-9,
        "rho": _rank_correlation([f["score"] for f in alike], [f["iou"] for f in alike]),
        "alike": [{k: f[k] for k in ("design", "iou", "score")} for f in alike],
    }


def read_picture(task: dict[str, Any]) -> Any:
    """The image_match target of a task's pictures (one, or several of one part), as serving
    reads a request's."""
    from training.evaluate import picture_target

    return picture_target(task)


def collect(tasks: list[dict[str, Any]], gallery: Any, k: int, workers: int) -> list[Any]:
    """Per picture: the task and its candidates (the reference first, then the gallery's k
    nearest) as dicts of design, IoU to the reference and parts."""
    from validators.sandbox import Limits, SandboxPool

    collected = []
    with (
        SandboxPool(size=workers, limits=Limits(wall_s=60, memory_mb=2048)) as pool,
        ThreadPoolExecutor(workers) as threads,
    ):
        for task in tqdm(tasks, desc="pictures"):
            near = gallery.nearest(read_picture(task), task["domain"], k)
            programs = [task["reference"]] + [r.entry.program for r in near]
            designs = [task.get("family")] + [r.entry.design for r in near]
            domains = [task["domain"]] * len(programs)
            built = list(threads.map(build, programs, domains, [pool] * len(programs)))
            if built[0] is None or not any(built[1:]):
                continue
            candidates = []
            for index, made in enumerate(built):
                if made is None:
                    continue
                iou = iou_to(made[1], built[0][1], task)
                candidates.append({"reference": index == 0, "design": designs[index],
                                   "iou": round(iou, 4), "parts": made[0]})  # fmt: skip
            collected.append((task, candidates))
    return collected


def judge_all(collected: list[Any], workers: int) -> list[dict[str, Any]]:
    """Each picture's candidates scored by image_match, and the outcome (pick())."""
    from genservice.generation.image_match import image_match

    def judge(item: Any) -> dict[str, Any]:
        task, candidates = item
        target = read_picture(task)
        found = [{**c, "score": image_match(target, c["parts"])[0]} for c in candidates]
        return pick(task, found)

    with ThreadPoolExecutor(workers) as threads:
        return list(tqdm(threads.map(judge, collected), total=len(collected), desc="scores"))


def summarise(picks: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and shares over the pictures."""

    def median(key: str) -> float:
        return round(statistics.median(p[key] for p in picks), 4)

    def share(key: str) -> float:
        return round(sum(bool(p[key]) for p in picks) / len(picks), 4)

    rhos = [p["rho"] for p in picks if p["rho"] is not None]
    return {
        "pictures": len(picks),
        "reference_is_best": share("reference_is_best"),
        "picked_iou_median": median("picked_iou"),
        "picked_iou_mean": round(statistics.fmean(p["picked_iou"] for p in picks), 4),
        "oracle_iou_median": median("oracle_iou"),
        "first_iou_median": median("first_iou"),
        "picked_is_oracle": share("picked_is_oracle"),
        "rank_correlation_median": round(statistics.median(rhos), 4) if rhos else None,
    }


def main() -> None:
    """Run the benchmark, print the summary and write bench/results/image_pick.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=Path("data/corpus/fit/images.jsonl"))
    parser.add_argument("--limit", type=int, default=48, help="the first N pictures (48)")
    parser.add_argument("--k", type=int, default=8, help="gallery parts per picture (8)")
    parser.add_argument("--model", type=Path, help="model directory (default: the shipped one)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    from bench.image_match import load_tasks
    from genservice.generation.gallery import Gallery
    from genservice.generation.loader import default_model_dir

    gallery = Gallery.load(args.model or default_model_dir())
    if gallery is None:
        raise SystemExit("the model has no gallery: build one with `genservice train gallery`")
    tasks = load_tasks(args.tasks, args.limit)
    started = time.perf_counter()
    built = collect(tasks, gallery, args.k, args.workers)
    picks = judge_all(built, args.workers)
    summary = summarise(picks)
    summary.update(
        tasks=str(args.tasks),
        k=args.k,
        seconds=round(time.perf_counter() - started, 1),
        per_picture=picks,
    )
    print(f"{summary['pictures']} pictures, {args.k} gallery look-alikes each")
    print(f"  pictured part outscores every look-alike  {summary['reference_is_best']:.1%}")
    print(f"  IoU of the check's pick (median / mean)   {summary['picked_iou_median']:.3f} / "
          f"{summary['picked_iou_mean']:.3f}")  # fmt: skip
    print(f"  IoU of the best look-alike (oracle)       {summary['oracle_iou_median']:.3f}")
    print(f"  IoU of the gallery's first                {summary['first_iou_median']:.3f}")
    print(f"  the check picks the oracle's part         {summary['picked_is_oracle']:.1%}")
    print(f"  rank correlation of score and IoU         {summary['rank_correlation_median']}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
