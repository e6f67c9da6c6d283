"""Benchmark: what gallery parts cost a picture request, side by side with the samples alone.

For each picture of an image-task file (default the fit set's first 8), the same whole request
(`engine.generate`: sample N, validate, rank; no fit, no repair, so only retrieval differs) runs
twice, interleaved: with `retrieve` 0 (the model's samples alone, the baseline) and with K
gallery parts (default 4). Reported: the median whole-request latency of each and their ratio,
candidates judged per second, how often a gallery part was the answer, and the lookup alone
(`Gallery.nearest`: the picture read and every entry's silhouettes compared) and the gallery's
load time.

Usage: .venv/bin/python -m bench.gallery [--model DIR] [--tasks FILE] [--limit 8] [--k 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    """Run the benchmark and write bench/results/gallery.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="model directory (default: the shipped one)")
    parser.add_argument("--tasks", type=Path, default=Path("data/corpus/fit/images.jsonl"))
    parser.add_argument("--limit", type=int, default=8, help="pictures (default 8)")
    parser.add_argument("--k", type=int, default=4, help="gallery parts per request (default 4)")
    parser.add_argument("--n", type=int, default=8, help="samples per request (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=600)
    parser.add_argument("--out", type=Path, default=Path("bench/results/gallery.json"))
    args = parser.parse_args()

    from PIL import Image
    from rich.console import Console

    from genservice.cli.common import sandbox_limits
    from genservice.generation.engine import GenerationRequest, generate
    from genservice.generation.gallery import Gallery
    from genservice.generation.image_match import Target
    from genservice.generation.loader import default_model_dir, load_model
    from validators.sandbox import SandboxPool

    console = Console(stderr=True)
    folder = args.model or default_model_dir()
    began = time.perf_counter()
    gallery = Gallery.load(folder)
    load_s = time.perf_counter() - began
    if gallery is None:
        raise SystemExit(f"{folder} has no gallery/: build one with `genservice corpus gallery`")
    loaded = load_model(folder)
    rows = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("images")][: args.limit]
    if not rows:
        raise SystemExit(f"{args.tasks} has no image tasks")
    limits, workers, isolation = sandbox_limits(None, None)
    runs: list[dict[str, Any]] = []
    lookups: list[float] = []
    with SandboxPool(size=workers, limits=limits, isolation=isolation) as pool:
        for number, row in enumerate(rows):
            with Image.open(args.tasks.parent / row["images"][0]) as image:
                picture = image.convert("RGB")
            began = time.perf_counter()
            gallery.nearest(Target(picture), row["domain"], args.k)
            lookups.append(time.perf_counter() - began)
            for k in (0, args.k) if number % 2 == 0 else (args.k, 0):  # interleaved
                request = GenerationRequest(
                    row["prompt"], domain=row["domain"], n=args.n, seed=number,
                    max_new_tokens=args.max_new_tokens, images=(picture,), retrieve=k,
                )  # fmt: skip
                began = time.perf_counter()
                result = generate(request, loaded, pool)
                runs.append({
                    "task": row["id"], "retrieve": k, "wall_s": time.perf_counter() - began,
                    "candidates": len(result.candidates),
                    "answered_from_gallery": result.candidates[0].retrieved_from is not None,
                    "valid": result.valid,
                })  # fmt: skip
            console.print(f"{number + 1}/{len(rows)} {row['id']}")

    def median(k: int, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["retrieve"] == k)

    alone, with_gallery = median(0, "wall_s"), median(args.k, "wall_s")
    summary = {
        "model": str(folder),
        "gallery_entries": len(gallery),
        "gallery_load_s": load_s,
        "lookup_median_s": statistics.median(lookups),
        "requests": len(rows),
        "n": args.n,
        "k": args.k,
        "samples_alone_median_s": alone,
        "with_gallery_median_s": with_gallery,
        "with_over_alone": with_gallery / alone,
        "candidates_per_s_alone": args.n / alone,
        "candidates_per_s_with_gallery": (args.n + args.k) / with_gallery,
        "answered_from_gallery": statistics.fmean(
            r["answered_from_gallery"] for r in runs if r["retrieve"] == args.k
        ),
        "valid_alone": statistics.fmean(r["valid"] for r in runs if r["retrieve"] == 0),
        "valid_with_gallery": statistics.fmean(r["valid"] for r in runs if r["retrieve"] == args.k),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=2) + "\n")
    print(
        f"{len(rows)} picture requests, best of {args.n}: {alone:.2f} s alone vs "
        f"{with_gallery:.2f} s with {args.k} gallery parts ({summary['with_over_alone']:.2f}x); "
        f"lookup {1000 * summary['lookup_median_s']:.1f} ms over {len(gallery)} entries "
        f"(load {load_s:.2f} s); answered from the gallery "
        f"{100 * summary['answered_from_gallery']:.0f} %; VALID "
        f"{100 * summary['valid_alone']:.0f} % alone, "
        f"{100 * summary['valid_with_gallery']:.0f} % with it"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
