"""`genservice corpus build` (a procedural task set as JSONL) and `genservice corpus families`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from genservice.cli_common import UsageError

SPLIT_CHOICES = ("train", "val", "test", "ood")


def add_corpus_commands(sub: Any) -> None:
    """Register `corpus` (actions `build` and `families`) on the CLI's subparsers."""
    corpus = sub.add_parser(
        "corpus",
        help="build a procedural task set (CAD parts, scenes, code) as JSONL",
        description="Procedural task corpora. `build` draws tasks from the families, "
        "deterministic by seed; `families` lists them. Exit 2 on a usage error.",
    )
    actions = corpus.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="write N tasks to a JSONL file",
        description="Draw N tasks (an equal share per family, no duplicates) and write them as "
        "JSONL, one task per line; print tasks per family and split.",
    )
    build.add_argument("--n", type=int, required=True, metavar="N", help="number of tasks")
    build.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    build.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    build.add_argument("--domains", help="comma-separated: cad,scene,code (default: all)")
    build.add_argument("--families", help="comma-separated family names (default: all)")
    build.add_argument("--split", choices=SPLIT_CHOICES, help="keep only tasks of this split")
    build.add_argument(
        "--edits",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="follow this share of cad/scene tasks with an edit task made from it (0-1)",
    )
    build.add_argument(
        "--unstated",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="draw this share of the tasks of families that can (the flange) as requests that "
        "leave some dimensions unstated, the reference deriving them (0-1)",
    )
    build.add_argument(
        "--phrasings",
        type=int,
        default=1,
        metavar="K",
        help="let a train-split parameter set come back worded anew, up to K rows each, so that "
        "families with few parameter sets (code) fill their share (default 1: once each)",
    )
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.add_argument("--json", action="store_true", help="print the summary as JSON")
    families = actions.add_parser("families", help="list the task families")
    families.add_argument("--domains", help="comma-separated: cad,scene,code (default: all)")
    families.add_argument("--json", action="store_true")


def corpus_command(args: argparse.Namespace) -> int:
    """Run `genservice corpus ACTION`."""
    if args.action == "families":
        return _families(args)
    return _build(args)


def _split_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise UsageError("expected a comma-separated list, got an empty one")
    return items


def _families(args: argparse.Namespace) -> int:
    from training.corpus.families import FamilyError, all_families

    try:
        families = all_families(_split_list(args.domains))
    except FamilyError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        rows = [{"name": f.name, "domain": f.domain, "held_out": f.held_out} for f in families]
        print(json.dumps(rows, indent=2))
        return 0
    for family in families:
        print(f"{family.domain:>5}  {family.name}{'  (held out: ood)' if family.held_out else ''}")
    return 0


def _check_output(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"{path} is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write {path}: permission denied")


def _build(args: argparse.Namespace) -> int:
    from training.corpus.build import write_corpus

    if args.n < 1:
        raise UsageError(f"--n must be at least 1, got {args.n}")
    _check_output(args.output)
    try:
        summary = write_corpus(
            args.output,
            args.n,
            args.seed,
            families=_split_list(args.families),
            domains=_split_list(args.domains),
            split=args.split,
            progress=not args.quiet and not args.json,
            edits=args.edits,
            unstated=args.unstated,
            phrasings=args.phrasings,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc}") from exc
    if args.json:
        print(json.dumps(_summary_json(summary), indent=2))
    else:
        _print_summary(summary)
    if summary.short:
        print(
            f"genservice corpus: the families ran out of new tasks: wrote {summary.rows} of "
            f"{summary.requested}",
            file=sys.stderr,
        )
    return 0


def _summary_json(summary: Any) -> dict[str, Any]:
    return {
        "path": str(summary.path),
        "rows": summary.rows,
        "requested": summary.requested,
        "families": {
            name: {"domain": summary.domains[name], **dict(counts)}
            for name, counts in summary.counts.items()
        },
    }


def _print_summary(summary: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("family", "domain", *SPLIT_CHOICES, "total", title="tasks per family and split")
    totals = dict.fromkeys(SPLIT_CHOICES, 0)
    for name, counts in summary.counts.items():
        for split in SPLIT_CHOICES:
            totals[split] += counts[split]
        cells = [str(counts[split]) if counts[split] else "" for split in SPLIT_CHOICES]
        table.add_row(name, summary.domains[name], *cells, str(sum(counts.values())))
    table.add_section()
    table.add_row("all", "", *(str(totals[s]) for s in SPLIT_CHOICES), str(summary.rows))
    console = Console()
    console.print(table)
    console.print(f"wrote {summary.rows} tasks to {summary.path}")
