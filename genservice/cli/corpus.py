"""`genservice corpus build` (a procedural task set as JSONL) and `genservice corpus families`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from genservice.cli.common import UsageError

SPLIT_CHOICES = ("train", "val", "test", "ood")


def add_corpus_commands(sub: Any) -> None:
    """Register `corpus` (build, images, gallery, families) on the CLI's subparsers."""
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
    build.add_argument(
        "--novel-names",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="call the thing in this share of grammar-drawn requests (compositional, furniture) "
        "by a made-up word or a plain noun, so that it is read by its parts (0-1; default 0)",
    )
    build.add_argument(
        "--more-words",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="let this share of grammar-drawn requests use a wider vocabulary of phrasings "
        "(shorthand, other words for the same sizes; 0-1; default 0)",
    )
    build.add_argument(
        "--unsaid-defaults",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="in this share of grammar-drawn requests, parts with a conventional default take "
        "it and leave it unsaid: a bend said by its radius alone turns a right angle, a "
        "backrest of unsaid thickness is as thick as the legs (0-1; default 0)",
    )
    build.add_argument(
        "--compositional",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="draw this share of the N tasks from the compositional grammar (sketches, solids "
        "and features composed; its own ood split), spread through the corpus (0-1; default 0: "
        "the corpus is what it was without it)",
    )
    build.add_argument(
        "--repair",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="follow this share of cad/scene tasks with a repair task: the program broken as "
        "models break it, run in the sandbox for its real error, the working program as the "
        "target (0-1)",
    )
    build.add_argument(
        "--verify",
        action="store_true",
        help="run every compositional and furniture task's reference in the sandbox and drop "
        "those that fail (the summary says how many)",
    )
    _sandbox_options(build, "sandbox workers for --repair and --verify")
    images = actions.add_parser(
        "images",
        help="add image tasks: references drawn as a person would photograph or screenshot them",
        description="Read a task JSONL and write it again with image tasks after the CAD and "
        "scene rows they were drawn from: each reference runs in the sandbox once and is drawn "
        "(one random view, sometimes the four-view rig; shaded, sketch, silhouette, normals or "
        "depth; varied colours, light and size) into IMAGES/ beside the output, paired with a "
        "short request with or without sizes. Pictures are cached by content; the same seed "
        "gives the same rows and bytes.",
    )
    _source_and_output(images)
    images.add_argument(
        "--share", type=float, default=0.5, help="share of CAD/scene rows drawn (default 0.5)"
    )
    images.add_argument("--per-task", type=int, default=1, help="pictures per drawn row")
    images.add_argument(
        "--views",
        type=int,
        default=1,
        help="pictures of the part in each task, from different sides (1-4, default 1)",
    )
    images.add_argument(
        "--rig",
        type=float,
        default=None,
        help="share of pictures that are the four-view rig (default: the training mix; "
        "1: every picture, as multi-view research evaluations read parts)",
    )
    images.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    images.add_argument("--split", action="append", choices=SPLIT_CHOICES, help="keep only these")
    images.add_argument(
        "--images-only", action="store_true", help="write only the image tasks (eval sets)"
    )
    _sandbox_options(images, "sandbox workers")
    gallery = actions.add_parser(
        "gallery",
        help="draw train-split programs into a model's picture gallery",
        description="Run the corpus's train-split CAD and scene programs in the sandbox (one "
        "per distinct program; never test-split or held-out ones) and draw each from the "
        "gallery's viewpoints as coarse silhouettes into DIR (a model's `gallery/` folder). "
        "A picture request to that model gets the entries that look most like its picture as "
        "candidates beside the model's samples (`--retrieve`). Same corpus, limit and seed: "
        "the same gallery.",
    )
    _source_and_output(gallery, "DIR")
    gallery.add_argument(
        "--limit", type=int, default=0, help="at most this many programs (default 0: all)"
    )
    gallery.add_argument("--seed", type=int, default=0, help="which programs --limit keeps")
    _sandbox_options(gallery, "sandbox workers")
    look_alikes = actions.add_parser(
        "look-alikes",
        help="give picture rows the look-alike a model reading them is shown",
        description="Read a task JSONL with picture rows (`corpus images`) and write it again "
        "with each new CAD and scene picture row given `look_alike`: the program of the part "
        "in the model's gallery that looks most like its picture (never the row's own "
        "reference), scaled to the size its words state, found as serving finds it. SFT on "
        "these rows teaches a model to adapt that part; the trained model is then shown the "
        "look-alike with every picture request.",
    )
    _source_and_output(look_alikes)
    look_alikes.add_argument(
        "--model", type=Path, default=None, help="the model whose gallery/ to use (default: "
        "the shipped model)",
    )  # fmt: skip
    look_alikes.add_argument("--workers", type=int, default=2, help="threads (default 2)")
    _quiet_and_json(look_alikes)
    families = actions.add_parser("families", help="list the task families")
    families.add_argument("--domains", help="comma-separated: cad,scene,code (default: all)")
    families.add_argument("--json", action="store_true")


def _source_and_output(parser: Any, output: str = "FILE") -> None:
    """The task file an action reads and the file (or folder) it writes."""
    parser.add_argument("source", type=Path, metavar="TASKS.jsonl")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar=output)


def _sandbox_options(parser: Any, workers_help: str) -> None:
    """The options every sandbox-running action shares: workers, timeout, quiet, json."""
    parser.add_argument("--workers", type=int, help=workers_help)
    parser.add_argument("--timeout", type=float, help="sandbox seconds per program")
    _quiet_and_json(parser)


def _quiet_and_json(parser: Any) -> None:
    """No progress bar; the summary as JSON."""
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def corpus_command(args: argparse.Namespace) -> int:
    """Run `genservice corpus ACTION`."""
    if args.action == "families":
        return _families(args)
    if args.action == "images":
        return _images(args)
    if args.action == "gallery":
        return _gallery(args)
    if args.action == "look-alikes":
        return _look_alikes(args)
    return _build(args)


@contextmanager
def _long_step(args: argparse.Namespace, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback for a long corpus step (a bar on the terminal; none with --quiet or
    --json); its ValueError and OSError become usage errors naming the output."""
    from training.corpus.build import _progress as progress_bar

    bar = None if args.quiet or args.json else progress_bar()
    task = bar.add_task(label, total=None) if bar is not None else None
    if bar is not None:
        bar.start()
    try:
        yield (lambda done, total: bar.update(task, completed=done, total=total)) if bar else None
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc}") from exc
    finally:
        if bar is not None:
            bar.stop()


def _look_alikes(args: argparse.Namespace) -> int:
    """`genservice corpus look-alikes`: picture rows given the look-alike serving would show."""
    from genservice.generation.loader import default_model_dir
    from training.corpus.look_alikes import attach_look_alikes

    if not args.source.is_file():
        raise UsageError(f"{args.source} is not a file")
    _check_output(args.output)
    if args.output.resolve() == args.source.resolve():
        raise UsageError("write the rows with look-alikes to a new file, not over their source")
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    model_dir = args.model or default_model_dir()
    with _long_step(args, "finding look-alikes") as progress:
        stats = attach_look_alikes(args.source, args.output, model_dir, args.workers, progress)
    found = {
        "path": str(args.output),
        "rows": stats.rows,
        "pictures": stats.pictures,
        "with_look_alike": stats.shown,
        "of_the_same_kind": stats.same_kind,
        "skipped": dict(stats.skipped),
    }
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(
        f"wrote {stats.rows} rows to {args.output}: {stats.shown} of {stats.pictures} picture "
        f"rows show a look-alike ({stats.same_kind} of the row's own kind)"
    )
    for reason, count in sorted(stats.skipped.items()):
        if count and reason != "no picture, an edit or code":
            print(f"  without one: {reason}: {count}")
    return 0


def _gallery(args: argparse.Namespace) -> int:
    """`genservice corpus gallery`: a model's picture gallery from a corpus's train split."""
    from genservice.cli.common import open_pool, sandbox_limits
    from training.gallery import build_gallery

    if not args.source.is_file():
        raise UsageError(f"{args.source} is not a file")
    if args.limit < 0:
        raise UsageError(f"--limit must be 0 (all) or more, got {args.limit}")
    if args.output.exists() and not args.output.is_dir():
        raise UsageError(f"{args.output} is a file: the gallery is a folder")
    limits, workers, isolation = sandbox_limits(args.timeout, args.workers)
    with (
        _long_step(args, "drawing the gallery") as progress,
        open_pool(workers, limits, isolation, "cad") as pool,
    ):
        gallery, stats = build_gallery(
            args.source, args.output, pool, workers, limits, args.limit, args.seed, progress
        )
    found = {
        "path": str(args.output),
        "entries": len(gallery),
        "families": len(stats.families),
        "failed": stats.failed,
        "failures": stats.failures[:20],
    }
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(
        f"wrote {len(gallery)} entries of {len(stats.families)} families to {args.output}"
        f" ({stats.failed} programs built nothing to draw)"
    )
    for failure in stats.failures[:5]:
        print(f"  {failure}")
    return 0


def _images(args: argparse.Namespace) -> int:
    """`genservice corpus images`: the source rows again, with image tasks after them."""
    from genservice.cli.common import open_pool, sandbox_limits
    from training.corpus.images import RIG_SHARE, write_image_corpus

    if not args.source.is_file():
        raise UsageError(f"{args.source} is not a file")
    if not 0.0 <= args.share <= 1.0:
        raise UsageError(f"--share is a share between 0 and 1, got {args.share}")
    if args.per_task < 1:
        raise UsageError(f"--per-task must be at least 1, got {args.per_task}")
    _check_output(args.output)
    if args.output.resolve() == args.source.resolve():
        raise UsageError("write the image corpus to a new file, not over its source")
    limits, workers, isolation = sandbox_limits(args.timeout, args.workers)
    try:
        with open_pool(workers, limits, isolation, "cad") as pool:
            summary = write_image_corpus(
                args.source,
                args.output,
                args.seed,
                args.per_task,
                args.share,
                pool,
                workers,
                limits,
                splits=args.split,
                images_only=args.images_only,
                progress=not args.quiet and not args.json,
                views=args.views,
                rig_share=RIG_SHARE if args.rig is None else args.rig,
            )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc}") from exc
    stats = summary.stats
    found = {
        "path": str(summary.path),
        "rows": summary.rows,
        "image_rows": summary.image_rows,
        "styles": dict(stats.written),
        "words": dict(stats.words),
        "cached": stats.cached,
        "failed": stats.failed,
        "failures": stats.failures[:20],
    }
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    styles = ", ".join(f"{k} {v}" for k, v in sorted(stats.written.items())) or "none"
    words = ", ".join(f"{k} {v}" for k, v in sorted(stats.words.items())) or "none"
    print(f"wrote {summary.rows} rows to {summary.path}: {summary.image_rows} image tasks")
    print(f"styles: {styles}; sizes in the words: {words}; pictures cached: {stats.cached}")
    if stats.failed:
        print(f"references that built no geometry (no picture): {stats.failed}")
        for failure in stats.failures[:5]:
            print(f"  {failure}")
    return 0


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
        families = all_families(_split_list(args.domains), opt_in=True)
    except FamilyError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        rows = [
            {"name": f.name, "domain": f.domain, "held_out": f.held_out}
            | ({"opt_in": True} if getattr(f, "opt_in", False) else {})
            for f in families
        ]
        print(json.dumps(rows, indent=2))
        return 0
    for family in families:
        note = "  (held out: ood)" if family.held_out else ""
        if getattr(family, "opt_in", False):
            note = f"  (opt-in: --compositional SHARE or --families {family.name}; own ood split)"
        print(f"{family.domain:>5}  {family.name}{note}")
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
    if args.n < 1:
        raise UsageError(f"--n must be at least 1, got {args.n}")
    _check_output(args.output)
    for name in ("compositional", "repair"):
        share = getattr(args, name)
        if not 0.0 <= share <= 1.0:
            raise UsageError(f"--{name} is a share between 0 and 1, got {share}")
    sandbox: dict[str, Any] = {}
    if args.repair or args.verify:
        from genservice.cli.common import open_pool, sandbox_limits

        limits, workers, isolation = sandbox_limits(args.timeout, args.workers)
        sandbox = {"limits": limits, "workers": workers, "isolation": isolation}
    try:
        if sandbox:
            with open_pool(
                sandbox["workers"], sandbox["limits"], sandbox["isolation"], "cad"
            ) as pool:
                summary = _write(args, pool, sandbox["workers"], sandbox["limits"])
        else:
            summary = _write(args, None, 1, None)
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


def _write(args: argparse.Namespace, pool: Any, workers: int, limits: Any) -> Any:
    from training.corpus.build import Wording, write_corpus

    return write_corpus(
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
        compositional=args.compositional,
        repair=args.repair,
        verify=args.verify,
        pool=pool,
        workers=workers,
        limits=limits,
        wording=Wording(args.novel_names, args.more_words, args.unsaid_defaults),
    )


def _summary_json(summary: Any) -> dict[str, Any]:
    found = {
        "path": str(summary.path),
        "rows": summary.rows,
        "requested": summary.requested,
        "families": {
            name: {"domain": summary.domains[name], **dict(counts)}
            for name, counts in summary.counts.items()
        },
    }
    if summary.repairs or summary.repairs_discarded or summary.invalid_sources:
        found["repairs"] = dict(summary.repairs)
        found["repairs_discarded"] = dict(summary.repairs_discarded)
        found["repair_sources_invalid"] = summary.invalid_sources
    if summary.dropped:
        found["dropped"] = dict(summary.dropped)
    return found


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
    if summary.repairs or summary.repairs_discarded:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(summary.repairs.items())) or "none"
        console.print(f"repair tasks: {sum(summary.repairs.values())} ({kinds})")
        if summary.repairs_discarded:
            gone = ", ".join(f"{k} {v}" for k, v in sorted(summary.repairs_discarded.items()))
            console.print(f"breakages that did not fail (discarded): {gone}")
        if summary.invalid_sources:
            console.print(
                f"tasks whose own reference failed (no repair): {summary.invalid_sources}"
            )
    if summary.dropped:
        gone = ", ".join(f"{k} {v}" for k, v in sorted(summary.dropped.items()))
        console.print(f"dropped by --verify (reference failed in the sandbox): {gone}")
    console.print(f"wrote {summary.rows} tasks to {summary.path}")
