"""A fine-tuned model's weights moved part of the way back to its start model's (WiSE-FT).

A fine-tune that teaches a new skill (reading a look-alike beside a picture) moves every weight
of the shared language model, and text requests pay for it. Interpolating the weights,
start + share × (tuned − start), keeps much of the new skill and much of the old behaviour:
both models were trained from one another, so the straight line between them stays in a low
loss basin. The result is the tuned model's directory (tokenizer, gallery, look-alike mark)
with the interpolated weights, and its training summary says how it was made.

Usage: python -m training.soup TUNED_DIR START_DIR --share 0.5 -o OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

WEIGHTS, SUMMARY = "model.safetensors", "training_summary.json"


def interpolate(tuned: dict, start: dict, share: float) -> dict:
    """start + share × (tuned − start), tensor by tensor; both must hold the same tensors."""
    if set(tuned) != set(start):
        missing = sorted(set(tuned) ^ set(start))[:5]
        raise ValueError(f"the two models hold different tensors (e.g. {missing})")
    mixed = {}
    for name, value in tuned.items():
        if value.shape != start[name].shape:
            raise ValueError(f"{name}: shape {tuple(value.shape)} against {start[name].shape}")
        if value.is_floating_point():
            mixed[name] = (start[name] + share * (value - start[name])).to(value.dtype)
        else:  # integer buffers (position ids) are the same in both
            mixed[name] = value.clone()
    return mixed


def soup(tuned_dir: Path, start_dir: Path, share: float, output: Path) -> Path:
    """Write OUTPUT: TUNED_DIR's files with weights `share` of the way from START_DIR's."""
    from safetensors.torch import load_file, save_file

    if not 0.0 <= share <= 1.0:
        raise ValueError(f"--share must be between 0 and 1, not {share}")
    for folder in (tuned_dir, start_dir):
        if not (folder / WEIGHTS).is_file():
            raise ValueError(f"{folder} holds no {WEIGHTS}")
    if output.exists():  # never delete what a mistyped -o points at
        raise ValueError(f"{output} exists: the output must be a new directory")
    mixed = interpolate(load_file(tuned_dir / WEIGHTS), load_file(start_dir / WEIGHTS), share)
    shutil.copytree(tuned_dir, output, ignore=shutil.ignore_patterns(WEIGHTS))
    save_file(mixed, output / WEIGHTS, metadata={"format": "pt"})
    summary_path = output / SUMMARY
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text())
        summary["soup"] = {
            "share": share,
            "start": str(start_dir),
            "tuned": str(tuned_dir),
            "output": str(output),
        }
        summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    return output


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m training.soup TUNED START --share S -o OUT."""
    parser = argparse.ArgumentParser(prog="python -m training.soup", description=__doc__)
    parser.add_argument("tuned", type=Path, help="the fine-tuned model directory")
    parser.add_argument("start", type=Path, help="the model it was fine-tuned from")
    parser.add_argument(
        "--share", type=float, default=0.5, help="how far toward the tuned weights (0-1)"
    )
    parser.add_argument("-o", "--output", type=Path, required=True, help="new model directory")
    args = parser.parse_args(argv)
    try:
        print(soup(args.tuned, args.start, args.share, args.output))
    except ValueError as exc:
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
