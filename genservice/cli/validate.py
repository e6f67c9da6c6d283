"""`genservice validate` (scripts in the sandbox, one Report each) and `validate-tasks`
(a task set's references pass their own checks and trivial programs fail them)."""

from __future__ import annotations

import argparse
import functools
import io
import json
from pathlib import Path
from typing import Any

from genservice.cli.common import (
    UsageError,
    open_pool,
    parse_params,
    run_parallel,
    sandbox_limits,
)
from validators.code.validate import check_time

EXIT_VALID, EXIT_INVALID = 0, 1


def add_validate_commands(sub: Any) -> None:
    """Register validate and validate-tasks."""
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
    validate.add_argument(
        "--tests",
        type=Path,
        help="code: file with check(candidate), test_* functions or top-level assert lines",
    )
    validate.add_argument("--entry-point", help="code: the function under test")
    validate.add_argument(
        "--time-budget",
        type=float,
        metavar="S",
        help="code: seconds for all the tests together (default 10), shared fairly among them",
    )
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


def validate_command(args: argparse.Namespace) -> int:
    """Run `genservice validate`: Reports for scripts; exit 0 if all are valid, 1 if not."""
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
        try:
            check_time(args.time_budget)
        except ValueError as exc:
            raise UsageError(f"--time-budget: {exc}") from exc
    elif args.tests or args.entry_point or args.time_budget is not None:
        raise UsageError("--tests, --entry-point and --time-budget apply to --domain code")
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
                    source,
                    pool,
                    tests=tests,
                    entry_point=args.entry_point,
                    limits=limits,
                    time_budget_s=args.time_budget,
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


def validate_tasks_command(args: argparse.Namespace) -> int:
    """Run `genservice validate-tasks`: exit 0 when no task is broken, 1 otherwise."""
    from genservice.task_audit import read_tasks

    path: Path = args.tasks_file
    try:
        tasks, broken = read_tasks(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    limits, workers, isolation = sandbox_limits(args.timeout, args.workers)
    verdicts = list(broken)
    for domain_group in (("cad", "scene"), ("code",)):
        group = [(n, t) for n, t in tasks if t["domain"] in domain_group]
        if not group:
            continue
        size = min(workers, len(group))
        with open_pool(size, limits, isolation, domain_group[0]) as pool:
            work = functools.partial(_audit_item, base=path.parent, pool=pool, limits=limits)
            verdicts += run_parallel(group, work, size, f"auditing {'/'.join(domain_group)} tasks")
    verdicts.sort(key=lambda v: v.line)
    _report_tasks(verdicts, args.json)
    return EXIT_VALID if all(v.ok for v in verdicts) else EXIT_INVALID


def _report_tasks(verdicts: list[Any], as_json: bool) -> None:
    if as_json:
        for verdict in verdicts:
            print(json.dumps(verdict.to_dict()))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    bad = [v for v in verdicts if not v.ok]
    if bad:
        table = Table("task", "line", "why it is broken")
        for verdict in bad:
            table.add_row(verdict.task_id, str(verdict.line), "\n".join(verdict.reasons))
        console.print(table)
    console.print(f"{len(verdicts) - len(bad)} sound, {len(bad)} broken, {len(verdicts)} tasks")


def _audit_item(item: tuple[int, dict[str, Any]], base: Path, pool: Any, limits: Any) -> Any:
    from genservice.task_audit import audit_task

    line, task = item
    return audit_task(task, line, base, pool, limits)
