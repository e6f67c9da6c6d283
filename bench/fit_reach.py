"""Benchmark: how close does the fit bring a start to the pictured part, and which start?

Serving answers a picture with the best of several fitted starts (fit.py): gallery look-alikes
and the model's samples, each moved toward the picture by `image_match` alone. Two things
decide how close the answer comes: which start is fitted, and how far the fit moves it. This
measures both apart. For each picture of an image-task file (default the fit set's first 24),
the shipped gallery's K nearest parts (as serving retrieves them, scaled to the size the words
state) are built, and two of them are fitted as serving fits a start (the stated sizes, then
the picture):

- the closest to the pictured part (the oracle start, chosen with the reference, which serving
  never has): how far the fit itself can go;
- the one serving ranks first among them (`rerank` with the picture and the words): the start
  a blind choice gives.

Reported per start and number of rounds: the IoU to the pictured part before and after (centred
and scaled to unit size), how many fits came closer or went further, how many reach 0.85, and
the seconds a fit took. The reference only measures: the fit sees the picture and the words.

`--free-camera` scores every trial from wherever it looks most like the picture instead of
from near the best part's camera (fit.HOLD_CAMERA), the fit as it was before the camera was held.
`--move-cost C` sets fit.MOVE_COST: a change must raise the match by C per unit of |log| of how
far it moves its parameter (beyond fit.GAIN), so the fit does not drift on gains within noise.

Usage: .venv/bin/python -m bench.fit_reach [--tasks FILE] [--limit 24] [--k 8] [--rounds 3]
       [--free-camera] [--move-cost C]
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

from bench.image_pick import build, iou_to, read_picture

RESULTS = Path(__file__).parent / "results" / "fit_reach.json"
CLOSE = 0.85  # the median IoU@1 target: a fit "reaches" the part at this IoU
MOVED = 0.01  # an IoU change below this is no change
STARTS = ("oracle", "pick")


def reach(rows: list[dict[str, Any]], rounds: int, start: str = "oracle") -> dict[str, Any]:
    """Medians, means and counts over the pictures for fits of `rounds` rounds from `start`."""
    before = [r[start]["start_iou"] for r in rows]
    fits = [r[start]["fits"][str(rounds)] for r in rows]
    after = [f["iou"] for f in fits]
    return {
        "start": start,
        "rounds": rounds,
        "pictures": len(rows),
        "start_iou_median": round(statistics.median(before), 4),
        "start_iou_mean": round(statistics.fmean(before), 4),
        "fitted_iou_median": round(statistics.median(after), 4),
        "fitted_iou_mean": round(statistics.fmean(after), 4),
        "closer": sum(a > b + MOVED for a, b in zip(after, before, strict=True)),
        "further": sum(a < b - MOVED for a, b in zip(after, before, strict=True)),
        "reach_close": sum(a >= CLOSE for a in after),
        "seconds_mean": round(statistics.fmean(f["seconds"] for f in fits), 1),
    }


def starts(task: dict[str, Any], gallery: Any, k: int, pool: Any, threads: Any) -> Any:
    """The task's reference mesh, its picture and its two starts, each (Scored as `rerank`
    judged it with the picture and the words, IoU to the reference): the look-alike closest to
    the pictured part and the one serving ranks first; None when the reference or every
    look-alike fails to build."""
    from genservice.generation.rerank import rerank

    picture = read_picture(task)  # read once: every start is fitted to the same pictures
    near = gallery.nearest(picture, task["domain"], k)
    programs = [task["reference"]] + [r.entry.scaled_to(task["prompt"]) for r in near]
    built = list(threads.map(build, programs, [task["domain"]] * len(programs),
                             [pool] * len(programs)))  # fmt: skip
    if built[0] is None or not any(built[1:]):
        return None
    reference = built[0][1]
    ious = {program: iou_to(made[1], reference, task)
            for made, program in zip(built[1:], programs[1:], strict=True) if made}  # fmt: skip
    ranked = rerank(list(ious), task["domain"], pool, picture=picture,
                    asked=(task["prompt"], None))  # fmt: skip
    oracle = next(s for s in ranked if s.program == max(ious, key=lambda p: ious[p]))
    chosen = {"oracle": (oracle, ious[oracle.program]),
              "pick": (ranked[0], ious[ranked[0].program])}  # fmt: skip
    return reference, picture, chosen


def fit_from(
    task: dict[str, Any], start: Any, picture: Any, rounds: int, pool: Any
) -> dict[str, Any]:
    """Fit a start (its Scored) to the task's picture and words as serving does; what it became."""
    from genservice.generation.fit import fit_candidate

    began = time.perf_counter()
    fit = fit_candidate(task["domain"], pool, picture, start.program, start.report,
                        task["prompt"], rounds, asked=(task["prompt"], None))  # fmt: skip
    seconds = round(time.perf_counter() - began, 1)
    return {"program": fit.program, "match_before": fit.score_before,
            "match_after": fit.score_after, "seconds": seconds}  # fmt: skip


def main() -> None:
    """Run the benchmark, print the summary and write bench/results/fit_reach.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=Path("data/corpus/fit/images.jsonl"))
    parser.add_argument("--limit", type=int, default=24, help="the first N pictures (24)")
    parser.add_argument("--k", type=int, default=8, help="gallery parts per picture (8)")
    parser.add_argument("--rounds", default="3", help="fit rounds to compare, e.g. 3,6")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--free-camera",
        action="store_true",
        help="score each trial from anywhere, not near the best part's camera",
    )
    parser.add_argument(
        "--move-cost",
        type=float,
        default=None,
        help="fit.MOVE_COST: the match a change must buy per unit of |log| of its move",
    )
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    from bench.image_match import load_tasks
    from genservice.generation import fit
    from genservice.generation.gallery import Gallery
    from genservice.generation.loader import default_model_dir
    from validators.sandbox import Limits, SandboxPool

    gallery = Gallery.load(default_model_dir())
    if gallery is None:
        raise SystemExit("the shipped model has no gallery: build one with `corpus gallery`")
    counts = [int(r) for r in args.rounds.split(",")]
    fit.HOLD_CAMERA = not args.free_camera
    if args.move_cost is not None:
        fit.MOVE_COST = args.move_cost
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with (
        SandboxPool(size=args.workers, limits=Limits(wall_s=60, memory_mb=2048)) as pool,
        ThreadPoolExecutor(args.workers) as threads,
    ):
        for task in tqdm(load_tasks(args.tasks, args.limit), desc="pictures"):
            found = starts(task, gallery, args.k, pool, threads)
            if found is None:
                continue
            reference, picture, chosen = found
            row: dict[str, Any] = {"id": task["id"]}
            for name, (start, start_iou) in chosen.items():
                if name == "pick" and start is chosen["oracle"][0]:
                    row[name] = {**row["oracle"], "is_oracle": True}  # the same start, once
                    continue
                fits = {}
                for count in counts:
                    fitted = fit_from(task, start, picture, count, pool)
                    made = build(fitted.pop("program"), task["domain"], pool)
                    fitted["iou"] = round(iou_to(made[1], reference, task), 4) if made else 0.0
                    fits[str(count)] = fitted
                row[name] = {"start_iou": round(start_iou, 4), "fits": fits}
            rows.append(row)
    summary = {
        "tasks": str(args.tasks),
        "k": args.k,
        "camera": "free" if args.free_camera else "held",
        "move_cost": fit.MOVE_COST,
        "reach": [reach(rows, count, start) for start in STARTS for count in counts]
        if rows
        else [],
        "pick_is_oracle": sum(bool(r["pick"].get("is_oracle")) for r in rows),
        "seconds": round(time.perf_counter() - started, 1),
        "per_picture": rows,
    }
    whence = {"oracle": "the closest", "pick": "serving's first"}
    for line in summary["reach"]:
        print(f"{line['pictures']} pictures, fitted {line['rounds']} rounds from "
              f"{whence[line['start']]} of {args.k} look-alikes")  # fmt: skip
        print(f"  IoU before -> after (median)  {line['start_iou_median']:.3f} -> "
              f"{line['fitted_iou_median']:.3f}")  # fmt: skip
        print(f"  IoU before -> after (mean)    {line['start_iou_mean']:.3f} -> "
              f"{line['fitted_iou_mean']:.3f}")  # fmt: skip
        print(f"  closer / further / reach {CLOSE}  {line['closer']} / {line['further']} / "
              f"{line['reach_close']}")  # fmt: skip
        print(f"  seconds a fit                 {line['seconds_mean']}")
    print(f"serving's first is the closest on {summary['pick_is_oracle']} of {len(rows)} pictures")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
