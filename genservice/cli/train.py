"""`genservice train sft|vision|rl|dpo|report`: training runs from YAML configs, and run reports."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from genservice.cli.common import UsageError

EXIT_OK, EXIT_INTERRUPTED = 0, 130


def add_train_commands(sub: Any) -> None:
    """Register `train` (sft, rl, dpo trainers and report) on the CLI's subparsers."""
    train = sub.add_parser(
        "train",
        help="train a model (sft, rl on validator rewards, dpo) or report on an RL run",
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
    vision = trainers.add_parser(
        "vision",
        help="pretrain a vision-language model's encoder on what part a picture shows",
        description="Train the vision encoder of a vision-language model directory (model.from) "
        "to say which part an image task's picture shows and in what proportions, from the "
        "image rows of data.train; the projector and language model are saved untouched, for "
        "an SFT stage to align. Ctrl-C stops; the model is not written.",
    )
    _run_options(vision)
    rl = trainers.add_parser(
        "rl",
        help="online RL (GRPO/DAPO/Dr. GRPO) on validator rewards, on DeepSpeed",
        description="Sample groups of candidates per task, reward them with the tasks' own "
        "validators and update the policy. One process by default; several with "
        "`deepspeed --num_gpus N -m genservice train rl ...` or torchrun. Ctrl-C stops after "
        "the current step and saves a checkpoint.",
    )
    _run_options(rl)
    rl.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    rl.add_argument("--run-dir", metavar="DIR", help="logs and checkpoints (overrides run_dir)")
    rl.add_argument("--max-steps", type=int, metavar="N", help="overrides training.max_steps")
    rl.add_argument("--seed", type=int, metavar="S", help="overrides training.seed")
    dpo = trainers.add_parser(
        "dpo",
        help="offline preference optimisation (DPO) on validator-ranked pairs, on DeepSpeed",
        description="Sample candidates per task from the start model, pair the best and the "
        "worst by the tasks' own validators (RUN_DIR/pairs.jsonl), then train on the pairs "
        "with the DPO loss. One process. Ctrl-C stops after the current task or step; "
        "--resume continues the sampling or the training.",
    )
    _run_options(dpo)
    dpo.add_argument("--resume", action="store_true", help="continue the sampling or training")
    dpo.add_argument("--run-dir", metavar="DIR", help="pairs and logs (overrides run_dir)")
    report = trainers.add_parser(
        "report",
        help="markdown report with plots of an RL run",
        description="Read RUN_DIR/metrics.jsonl and write RUN_DIR/report.md with plots.",
    )
    report.add_argument("run_dir", metavar="RUN_DIR", help="the run_dir of `genservice train rl`")
    report.add_argument(
        "-o", "--output", metavar="FILE", help="markdown file (default RUN_DIR/report.md)"
    )


def _run_options(parser: Any) -> None:
    """The options every config-driven trainer but sft shares: config, output, budget, bar."""
    parser.add_argument("--config", required=True, metavar="FILE", help="YAML run config")
    parser.add_argument("--output", metavar="DIR", help="model directory (overrides output_dir)")
    parser.add_argument(
        "--max-minutes", type=float, metavar="M", help="overrides training.max_minutes"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def train_command(args: argparse.Namespace) -> int:
    """Run `genservice train TRAINER`; stdout carries only the result (the model's path)."""
    import contextlib

    result = sys.stdout
    # DeepSpeed's logger (imported by transformers too) writes to stdout: send it to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        code, output = _train(args)
    if output is not None:
        print(output, file=result)
    return code


def _train(args: argparse.Namespace) -> tuple[int, Any]:
    from pathlib import Path

    if args.trainer == "rl":
        return _rl_command(args)
    if args.trainer == "dpo":
        return _dpo_command(args)
    if args.trainer == "report":
        return _report_command(args)
    if args.trainer == "vision":
        return _vision_command(args)
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

    return _guarded(
        "sft",
        lambda: train_sft(config, resume=args.resume, show_progress=not args.no_progress),
        SetupError,
        "continue with --resume",
    )


def _guarded(
    name: str, run: Any, usage_errors: type[Exception], after_interrupt: str
) -> tuple[int, Any]:
    """Run a trainer: its setup errors are usage errors (exit 2), Ctrl-C exits 130."""
    try:
        return EXIT_OK, run()
    except usage_errors as exc:
        raise UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        print(f"genservice train {name}: interrupted; {after_interrupt}", file=sys.stderr)
        return EXIT_INTERRUPTED, None


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


def _rl_command(args: argparse.Namespace) -> tuple[int, Any]:
    overrides = {"max_minutes": args.max_minutes, "max_steps": args.max_steps, "seed": args.seed}
    return _run_trainer(
        args, "rl", "training.rl_config:RLConfig", "training.rl:train_rl", overrides
    )


def _dpo_command(args: argparse.Namespace) -> tuple[int, Any]:
    overrides = {"max_minutes": args.max_minutes}
    config, train = "training.dpo_config:DPOConfig", "training.dpo:train_dpo"
    return _run_trainer(args, "dpo", config, train, overrides)


def _run_trainer(
    args: argparse.Namespace, name: str, config_at: str, train_at: str, overrides: dict
) -> tuple[int, Any]:
    """Load a run config with the command line's overrides, then train (rl and dpo alike)."""
    import dataclasses
    import importlib
    from pathlib import Path

    def find(at: str) -> Any:
        module, attribute = at.split(":")
        return getattr(importlib.import_module(module), attribute)

    path = Path(args.config)
    if not path.is_file():
        raise UsageError(f"no such config file: {path}")
    try:
        config = find(config_at).from_yaml(path)
        training = {k: v for k, v in overrides.items() if v is not None}
        if training:
            config.training = dataclasses.replace(config.training, **training)
        if args.output:
            config.output_dir = args.output
        if args.run_dir:
            config.run_dir = args.run_dir
        config.check_files()
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path}: {exc}") from exc
    train = find(train_at)
    return _guarded(
        name,
        lambda: train(config, resume=args.resume, show_progress=not args.no_progress),
        ValueError,
        "continue with --resume",
    )


def _vision_command(args: argparse.Namespace) -> tuple[int, Any]:
    import dataclasses

    from training.vision_pretrain import VisionPretrainConfig, pretrain_vision

    if args.max_minutes is not None and not (
        math.isfinite(args.max_minutes) and args.max_minutes > 0
    ):
        raise UsageError("--max-minutes must be a positive number of minutes")
    try:
        config = VisionPretrainConfig.from_yaml(args.config)
        if args.output:
            config = dataclasses.replace(config, output_dir=args.output)
        if args.max_minutes is not None:
            config = dataclasses.replace(config, max_minutes=args.max_minutes)
        config.check_files()
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"{args.config}: {exc}") from exc
    return _guarded(
        "vision",
        lambda: pretrain_vision(config, show_progress=not args.no_progress),
        ValueError,
        "the model was not written",
    )


def _report_command(args: argparse.Namespace) -> tuple[int, Any]:
    from pathlib import Path

    from training.rl_report import write_report

    try:
        path = write_report(Path(args.run_dir), Path(args.output) if args.output else None)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return EXIT_OK, path
