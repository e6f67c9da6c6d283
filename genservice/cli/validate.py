"""The `genservice` command line."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from genservice.cli_common import (
    UsageError,
    open_pool,
    parse_params,
    run_parallel,
    sandbox_limits,
)
from genservice.cli_corpus import add_corpus_commands, corpus_command
from genservice.cli_eval import add_eval_command, eval_command
from genservice.cli_export import add_export_commands, export_command, provenance_command
from genservice.cli_generate import add_generate_command, generate_command
from genservice.cli_render import add_render_command, render_command
from genservice.cli_service import (
    add_service_commands,
    api_command,
    keys_command,
    run_command,
    worker_command,
)
from genservice.cli_train import add_train_commands, train_command

EXIT_VALID, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="genservice",
        description="Generate, validate and export CadQuery parts and Python code.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    validate = sub.add_parser(
        "validate",
        help="run CadQuery scripts in the sandbox and check their geometry",
        description="Validate CadQuery scripts. Exit 0 if all are valid, 1 if any is invalid, "
        "2 on a usage error.",
    )
    validate.add_argument("paths", nargs="+", metavar="FILE", help="scripts or directories")
    validate.add_argument(
        "--spec", type=Path, help="JSON file: bbox_mm, volume_mm3, solids, holes…"
    )
    validate.add_argument("--reference", type=Path, help="reference shape (.py, .step or .stl)")
    validate.add_argument(
        "--request",
        metavar="TEXT",
        help="the request's words: also check the part against the sizes and counts they ask",
    )
    validate.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a top-level parameter (repeatable)",
    )
    validate.add_argument("--timeout", type=float, help="seconds per script (default 10)")
    validate.add_argument("--workers", type=int, help="parallel sandbox workers")
    validate.add_argument(
        "--domain",
        choices=("cad", "scene", "code"),
        default="cad",
        help="cad: a part; scene: an assembly that must stand (physics gates); code: a function",
    )
    validate.add_argument("--tests", type=Path, help="code: file with check(candidate) or test_*")
    validate.add_argument("--entry-point", help="code: the function under test")
    validate.add_argument("--json", action="store_true", help="print the Report as JSON")
    tasks = sub.add_parser(
        "validate-tasks",
        help="check a task set before spending compute on it",
        description="Verify every task of a JSONL task set: its reference passes its own checks "
        "and trivial programs (empty, pass, constant, echo of the input) fail. Exit 0 when no "
        "task is broken, 1 otherwise, 2 on a usage error.",
    )
    tasks.add_argument("tasks_file", type=Path, metavar="TASKS.jsonl")
    tasks.add_argument("--timeout", type=float, help="seconds per program (default 10)")
    tasks.add_argument("--workers", type=int, help="parallel sandbox workers")
    tasks.add_argument("--json", action="store_true", help="one JSON line per task")
    add_export_commands(sub)
    add_render_command(sub)
    add_corpus_commands(sub)
    add_generate_command(sub)
    add_eval_command(sub)
    add_train_commands(sub)
    add_service_commands(sub)
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
    try:
        if args.command == "validate":
            return _validate(args)
        if args.command == "validate-tasks":
            from genservice.task_audit import audit_command

            return audit_command(args)
        if args.command == "export":
            return export_command(args)
        if args.command == "render":
            return render_command(args)
        if args.command == "provenance":
            return provenance_command(args)
        if args.command == "corpus":
            return corpus_command(args)
        if args.command == "generate":
            return generate_command(args)
        if args.command == "eval":
            return eval_command(args)
        if args.command == "train":
            return train_command(args)
        if args.command == "run":
            return run_command(args)
        if args.command == "worker":
            return worker_command(args)
        if args.command == "api":
            return api_command(args)
        if args.command == "keys":
            return keys_command(args)
    except UsageError as exc:
        print(f"genservice {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return EXIT_INVALID
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


def _collect(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.py") if p.is_file())
            if not found:
                raise UsageError(f"no .py files in directory {path}")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file: {path}")
    return files


def _load_spec(path: Path | None) -> dict[str, Any] | None:
    from validators.cad.validate import check_spec

    if path is None:
        return None
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read spec {path}: {exc}") from exc
    if not isinstance(spec, dict):
        raise UsageError("the spec must be a JSON object")
    try:
        return check_spec(spec)
    except ValueError as exc:
        raise UsageError(f"spec {path}: {exc}") from exc


def _validate(args: argparse.Namespace) -> int:
    from validators.cad.validate import ReferenceLoadError, load_reference, validate_cad
    from validators.report import Check, ErrorInfo, Report

    files = _collect(args.paths)
    if args.domain == "code":
        if args.tests is None or not args.entry_point:
            raise UsageError("--domain code needs --tests FILE and --entry-point NAME")
        if args.spec or args.reference or args.param or args.request:
            raise UsageError(
                "--spec, --reference, --param and --request apply to cad and scene, not code"
            )
        try:
            tests = args.tests.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read tests {args.tests}: {exc}") from exc
    elif args.tests or args.entry_point:
        raise UsageError("--tests and --entry-point apply to --domain code")
    params = parse_params(args.param)
    spec = _load_spec(args.spec)
    request = None
    if args.request and args.domain != "code":
        from genservice.generation.asked import asked_items

        request = asked_items(args.request, args.domain) or None
    limits, workers, isolation = sandbox_limits(args.timeout, args.workers)
    workers = min(workers, len(files) + (args.reference is not None))
    with open_pool(workers, limits, isolation, args.domain) as pool:
        reference = None
        if args.reference is not None:
            try:
                reference = load_reference(args.reference, pool, limits)
            except ReferenceLoadError as exc:
                raise UsageError(str(exc)) from exc

        def one(path: Path) -> Report:
            try:
                source = path.read_text()
            except (OSError, UnicodeDecodeError) as exc:
                return Report.build(
                    False,
                    0.0,
                    {"executes": Check(0.0, False)},
                    ErrorInfo("read", f"cannot read {path}: {exc}"),
                )
            if args.domain == "code":
                from validators.code.validate import validate_code

                return validate_code(
                    source, pool, tests=tests, entry_point=args.entry_point, limits=limits
                )
            return validate_cad(
                source,
                pool,
                spec=spec,
                reference=reference,
                parameters=params,
                limits=limits,
                domain=args.domain,
                request=request,
            )

        if len(files) == 1:
            report = one(files[0])
            print(report.to_json(indent=2) if args.json else _render(files[0], report))
            return EXIT_VALID if report.valid else EXIT_INVALID
        on_result = _print_json_line if args.json else None
        results = run_parallel(files, one, workers, "validating", on_result)
        reports = list(zip(files, results, strict=True))
    if not args.json:
        _print_summary(reports)
    return EXIT_VALID if all(r.valid for _, r in reports) else EXIT_INVALID


def _print_json_line(path: Path, report: Any) -> None:
    print(json.dumps({"file": str(path), "report": report.to_dict()}), flush=True)


def _render(path: Path, report: Any) -> str:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=io.StringIO(), record=True, width=110)
    from validators.cad.request import missed_only_the_request

    verdict = "[bold green]VALID[/]" if report.valid else "[bold red]INVALID[/]"
    if missed_only_the_request(report):
        verdict = "[bold yellow]NOT AS ASKED[/] (sound geometry)"
    console.print(f"{path}: {verdict}  reward {report.reward:.3f}")
    if report.error:
        where = f" (line {report.error.line})" if report.error.line else ""
        console.print(f"  [red]{report.error.kind}{where}: {report.error.message}[/]")
    table = Table("check", "passed", "score", "detail")
    for name, check in report.checks.items():
        detail = json.dumps(check.detail, default=str)
        table.add_row(
            name,
            "✓" if check.passed else "✗",
            f"{check.score:.3f}",
            detail if len(detail) < 70 else detail[:67] + "...",
        )
    console.print(table)
    metrics = report.metrics
    if "volume_mm3" in metrics:
        box = " × ".join(f"{v:.2f}" for v in metrics["bbox_mm"])
        console.print(
            f"  volume {metrics['volume_mm3']:.2f} mm³   bbox {box} mm   "
            f"solids {metrics['solids']}   holes {metrics['holes']}"
        )
    if report.parameters:
        console.print(
            "  parameters: "
            + ", ".join(f"{k}={v['value']!r}" for k, v in report.parameters.items())
        )
    return console.export_text().rstrip()


def _print_summary(reports: list[tuple[Path, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("file", "valid", "volume mm³", "error")
    for path, report in reports:
        volume = report.metrics.get("volume_mm3")
        error = f"{report.error.kind}: {report.error.message}"[:60] if report.error else ""
        table.add_row(
            str(path),
            "✓" if report.valid else "✗",
            f"{volume:.2f}" if isinstance(volume, float) else "-",
            error,
        )
    console = Console()
    console.print(table)
    valid = sum(1 for _, r in reports if r.valid)
    console.print(f"{valid} valid, {len(reports) - valid} invalid, {len(reports)} in all")


if __name__ == "__main__":
    sys.exit(main())
