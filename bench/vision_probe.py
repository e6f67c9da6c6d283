"""Benchmark: what does a vision-language model's encoder know about the part in a picture?

Each model's encoder is frozen; linear heads are trained on its pooled patch features of the
train-split pictures of one image-task file, to say the part's kind (its family, or a
compositional part's grammar tokens) and its proportions (training/vision_pretrain.py), and
are scored on that file's val-split pictures. The models are measured one after the other on
the same pictures with the same heads' seed, so the figures compare encoders, not data.

Usage: .venv/bin/python -m bench.vision_probe --tasks data/corpus/vpre/images.jsonl \
           --model genservice/models/tiny --model var/models/tiny-vision [--max-train N] \
           [--gallery genservice/models/tiny]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import asdict
from pathlib import Path

from training.vision_pretrain import linear_probe, read_rows

RESULTS = Path(__file__).parent / "results" / "vision_probe.json"


def gallery_family_hits(model: str, tasks: Path, max_val: int) -> tuple[int, int]:
    """(hits, pictures): the held-out family pictures whose nearest gallery part (told the
    domain, as serving tells it) is of the pictured family; the probe's val pictures."""
    from PIL import Image

    from genservice.generation.gallery import Gallery
    from genservice.generation.image_match import Target

    gallery = Gallery.load(model)
    if gallery is None:
        raise SystemExit(f"{model} has no gallery")
    rows = read_rows(tasks, ["val"])
    random.Random(0).shuffle(rows)  # the probe's order and cut (linear_probe, seed 0)
    family_rows = [row for row in rows[:max_val] if row.get("family") != "compositional"]
    hits = 0
    for row in family_rows:
        with Image.open(tasks.parent / row["images"][0]) as picture:
            nearest = gallery.nearest(Target(picture.convert("RGB")), row["domain"], 1)
        hits += bool(nearest) and nearest[0].entry.family == row["family"]
    return hits, len(family_rows)


def main() -> None:
    """Probe each model's encoder on the same pictures; print a table and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, type=Path, help="an image-task JSONL")
    parser.add_argument("--model", action="append", required=True, help="a model directory")
    parser.add_argument("--max-train", type=int, default=8000, help="train pictures probed")
    parser.add_argument("--max-val", type=int, default=1024, help="held-out pictures scored")
    parser.add_argument("--epochs", type=int, default=30, help="passes of the linear heads")
    parser.add_argument(
        "--gallery",
        metavar="MODEL",
        help="also: how often this model's gallery's nearest part "
        "is of the pictured family, on the same held-out family pictures",
    )
    args = parser.parse_args()
    results: list[dict] = []
    for model in args.model:
        started = time.monotonic()
        scores = linear_probe(
            model,
            args.tasks,
            ["train"],
            ["val"],
            epochs=args.epochs,
            max_val=args.max_val,
            max_train=args.max_train,
        )
        results.append({"model": model, **asdict(scores), "seconds": time.monotonic() - started})
        print(f"{model}: {scores.line()} ({scores.pictures} pictures)")
    if args.gallery:
        started = time.monotonic()
        hits, pictures = gallery_family_hits(args.gallery, args.tasks, args.max_val)
        results.append(
            {
                "gallery": args.gallery,
                "family_pictures": pictures,
                "family_top1": hits / max(1, pictures),
                "seconds": time.monotonic() - started,
            }
        )
        print(f"{args.gallery} gallery's nearest part: family top-1 {hits / max(1, pictures):.1%}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"tasks": str(args.tasks), "results": results}, indent=1))


if __name__ == "__main__":
    main()
