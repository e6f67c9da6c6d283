"""`genservice train sft`: supervised fine-tuning from a YAML config."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from genservice.cli_common import UsageError

EXIT_OK, EXIT_INTERRUPTED = 0, 130


def add_train_commands(sub: Any) -> None:
    """Register `train` (with its `sft` trainer) on the CLI's subparsers."""
    train = sub.add_parser(
        "train",
        help="train a model (sft: supervised fine-tuning on a task set)",
        description="Train models from task JSONL files. Exit 0 when the model is saved, 2 on a "
        "usage error, 130 when interrupted (a checkpoint is saved; continue with --resume).",
    )
    trainers = train.add_subparsers(dest="trainer", metavar="TRAINER", required=True)
    sft = trainers.add_parser(
        "sft",
        help="supervised fine-tuning: prompts in, reference programs out",
        description="Train a tiny model from scratch (model.init) or fine-tune a local model "
        "directory (model.from) on the reference programs of a task set. Ctrl-C stops after "
        "the current step and saves a checkpoint.",
    )
    sft.add_argument("--config", required=True, metavar="FILE", help="YAML run config")
    sft.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="CHECKPOINT",
        help="continue from the latest checkpoint of the run (or from the given one)",
    )
    sft.add_argument("--output", metavar="DIR", help="model directory (overrides output_dir)")
    sft.add_argument(
        "--max-minutes",
        type=float,
        metavar="M",
        help="wall-clock budget in minutes (overrides training.max_minutes)",
    )
    sft.add_argument("--no-progress", action="store_true", help="no progress bar")


def train_command(args: argparse.Namespace) -> int:
    """Run `genservice train TRAINER`."""
    from pathlib import Path

    if args.trainer != "sft":
        raise UsageError(f"unknown trainer {args.trainer}")
    path = Path(args.config)
    if not path.is_file():
        raise UsageError(f"no such config file: {path}")
    if args.max_minutes is not None and not (
        math.isfinite(args.max_minutes) and args.max_minutes > 0
    ):
        raise UsageError("--max-minutes must be a positive number of minutes")
    if args.output is not None and not args.output.strip():
        raise UsageError("--output must be a directory path")
    config = _load_config(path, args)

    from training.sft import SetupError, train_sft

    try:
        output = train_sft(config, resume=args.resume, show_progress=not args.no_progress)
    except SetupError as exc:
        raise UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        print("genservice train sft: interrupted; continue with --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(output)
    return EXIT_OK


def _load_config(path: Any, args: argparse.Namespace) -> Any:
    import dataclasses

    from training.sft_config import SFTConfig

    try:
        config = SFTConfig.from_yaml(path)
        if args.output is not None:
            config = dataclasses.replace(config, output_dir=args.output)
        if args.max_minutes is not None:
            training = dataclasses.replace(config.training, max_minutes=args.max_minutes)
            config = dataclasses.replace(config, training=training)
        config.check_files()
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from exc
    return config
