"""The `genservice` command line: one module per command group.

This package is the top of the layering. It is the one place allowed to import upward, from
`genservice` into `training` (corpus, train and eval commands), because the command line is what
ties validators, exporters, the service and training together; nothing else imports it
(tests/test_architecture.py checks both). Heavy imports stay inside the commands, so that
`genservice --help` starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from genservice.cli.common import UsageError
from genservice.cli.corpus import add_corpus_commands, corpus_command
from genservice.cli.docs import add_docs_command, docs_command
from genservice.cli.eval import add_eval_command, eval_command
from genservice.cli.export import add_export_commands, export_command, provenance_command
from genservice.cli.generate import add_generate_command, generate_command
from genservice.cli.render import add_render_command, render_command
from genservice.cli.run import run_command
from genservice.cli.service import add_service_commands, api_command, keys_command, worker_command
from genservice.cli.train import add_train_commands, train_command
from genservice.cli.validate import add_validate_commands, validate_command, validate_tasks_command

__all__ = ["build_parser", "main"]

EXIT_VALID, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": validate_command,
    "validate-tasks": validate_tasks_command,
    "export": export_command,
    "render": render_command,
    "provenance": provenance_command,
    "corpus": corpus_command,
    "generate": generate_command,
    "eval": eval_command,
    "train": train_command,
    "run": run_command,
    "worker": worker_command,
    "api": api_command,
    "keys": keys_command,
    "docs": docs_command,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="genservice",
        description="Generate, validate and export CadQuery parts and Python code.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_validate_commands(sub)
    add_export_commands(sub)
    add_render_command(sub)
    add_corpus_commands(sub)
    add_generate_command(sub)
    add_eval_command(sub)
    add_train_commands(sub)
    add_service_commands(sub)
    add_docs_command(sub)
    return parser


def _launcher_arguments(argv: list[str]) -> list[str]:
    """Drop the `--local_rank=N` the deepspeed launcher puts first (LOCAL_RANK carries it)."""
    kept = []
    for arg in argv:
        if arg.startswith("--local_rank="):
            os.environ.setdefault("LOCAL_RANK", arg.split("=", 1)[1])
            continue
        kept.append(arg)
    return kept


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(_launcher_arguments(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help()
        return EXIT_VALID
    command = COMMANDS.get(args.command)
    if command is None:
        parser.error(f"unknown command {args.command}")
    try:
        return command(args)
    except UsageError as exc:
        print(f"genservice {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return EXIT_INVALID
