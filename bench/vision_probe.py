"""Benchmark: what does a vision-language model's encoder know about the part in a picture?

Each model's encoder is frozen; linear heads are trained on its pooled patch features of the
train-split pictures of one image-task file, to say the part's kind (its family, or a
compositional part's grammar tokens) and its proportions (training/vision_pretrain.py), and
are scored on that file's val-split pictures. The models are measured one after the other on
the same pictures with the same heads' seed, so the figures compare encoders, not data.

Usage: .venv/bin/python -m bench.vision_probe --tasks data/corpus/vpre/images.jsonl \
           --model genservice/models/tiny --model var/models/tiny-vision [--max-val N]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

from training.vision_pretrain import linear_probe

RESULTS = Path(__file__).parent / "results" / "vision_probe.json"


def main() -> None:
    """Probe each model's encoder on the same pictures; print a table and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, type=Path, help="an image-task JSONL")
    parser.add_argument("--model", action="append", required=True, help="a model directory")
    parser.add_argument("--max-val", type=int, default=1024, help="held-out pictures scored")
    parser.add_argument("--epochs", type=int, default=30, help="passes of the linear heads")
    args = parser.parse_args()
    results = []
    for model in args.model:
        started = time.monotonic()
        scores = linear_probe(
            model, args.tasks, ["train"], ["val"], epochs=args.epochs, max_val=args.max_val
        )
        results.append({"model": model, **asdict(scores), "seconds": time.monotonic() - started})
        print(f"{model}: {scores.line()} ({scores.pictures} pictures)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"tasks": str(args.tasks), "results": results}, indent=1))


if __name__ == "__main__":
    main()
