"""`genservice export` (files plus manifest from a script) and `genservice provenance verify`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from genservice.cli.common import (
    UsageError,
    cli_device,
    open_pool,
    parse_params,
    sandbox_limits,
)

EXIT_OK, EXIT_FAILED = 0, 1


def add_export_commands(sub: Any) -> None:
    """Register `export` and `provenance` on the CLI's subparsers."""
    from exporters.formats import FORMATS, GLB_COMPRESSIONS, STEP_SCHEMAS

    export = sub.add_parser(
        "export",
        help="run a CadQuery script and write GLB, STEP, STL, 3MF and splat files with a manifest",
        description="Validate a CadQuery script in the sandbox and export it. An invalid script "
        "exports nothing and says why (exit 1); a sound part that misses what --request asks is "
        "exported with the verdict 'not as asked' (exit 1); exit 2 on a usage error.",
    )
    export.add_argument("script", type=Path, metavar="SCRIPT")
    export.add_argument(
        "--format",
        default="glb,step,stl",
        help=f"comma-separated formats: {','.join(FORMATS)} (default glb,step,stl)",
    )
    export.add_argument("-o", "--output", type=Path, default=Path("."), help="output directory")
    export.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a top-level parameter (repeatable)",
    )
    export.add_argument("--name", help="file name stem (default: the script's name)")
    export.add_argument("--domain", choices=("cad", "scene"), default="cad")
    export.add_argument(
        "--request",
        metavar="TEXT",
        help="the request's words: the part is also checked against the sizes and counts they "
        "ask; a sound part that misses them is exported with the verdict 'not as asked'",
    )
    export.add_argument("--glb-compression", choices=GLB_COMPRESSIONS, default="none")
    export.add_argument("--step-schema", choices=STEP_SCHEMAS, default="AP242")
    export.add_argument("--splats", type=int, help="number of Gaussians (default: by area)")
    export.add_argument(
        "--splat-refine",
        type=int,
        default=0,
        metavar="N",
        help="optimise the splats for N steps against renders of the part (gsplat on a GPU; "
        "the CPU renderer takes about a second a step: default 0, off)",
    )
    export.add_argument(
        "--device", help="where splat refinement runs: auto, cpu, cuda, cuda:N (default: auto)"
    )
    export.add_argument("--timeout", type=float, help="seconds for the script (default 10)")
    export.add_argument("--json", action="store_true", help="print the result as JSON")
    provenance = sub.add_parser(
        "provenance",
        help="check an exported file against its manifest",
        description="Provenance tools. `verify FILE MANIFEST` exits 0 when the file is byte for "
        "byte one the manifest lists, 1 otherwise.",
    )
    actions = provenance.add_subparsers(dest="action", metavar="ACTION", required=True)
    verify = actions.add_parser("verify", help="check FILE against MANIFEST")
    verify.add_argument("file", type=Path, metavar="FILE")
    verify.add_argument("manifest", type=Path, metavar="MANIFEST")
    verify.add_argument("--json", action="store_true")


def export_command(args: argparse.Namespace) -> int:
    """Run `genservice export`."""
    from exporters.export import ExportError, ExportOptions, export_script
    from exporters.provenance import GenerationRecord

    if not args.script.is_file():
        raise UsageError(f"no such file: {args.script}")
    try:
        source = args.script.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {args.script}: {exc}") from exc
    formats = tuple(f.strip() for f in args.format.split(",") if f.strip())
    try:
        options = ExportOptions(
            formats=formats,
            glb_compression=args.glb_compression,
            step_schema=args.step_schema,
            splat_count=args.splats,
            splat_refine=args.splat_refine,
            device=cli_device(args.device) if args.splat_refine else "cpu",
        )
        record = GenerationRecord.for_script(args.script)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    parameters = parse_params(args.param)
    from genservice.generation.asked import asked_items

    request = asked_items(args.request, args.domain) or None if args.request else None
    if args.output.exists() and not args.output.is_dir():
        raise UsageError(f"{args.output} exists and is not a directory")
    limits, _, isolation = sandbox_limits(args.timeout, 1)
    with open_pool(1, limits, isolation, "cad") as pool:
        try:
            result = export_script(
                source,
                args.output,
                pool,
                stem=args.name or args.script.stem,
                parameters=parameters,
                record=record,
                options=options,
                limits=limits,
                domain=args.domain,
                request=request,
            )
        except ExportError as exc:
            _print_failure(exc, args.json)
            return EXIT_FAILED
    if args.json:
        print(json.dumps(_result_json(result), indent=2))
    else:
        for fmt, path in result.files.items():
            print(f"{fmt:>9}  {path}  ({path.stat().st_size:,} bytes)")
        print(f" manifest  {result.manifest}")
        print(f"provenance {result.provenance.id}")
        refined = result.checks.get("splat_refinement")
        if refined:
            before, after = refined["before"], refined["after"]
            print(
                f"  splats   refined {refined['steps']} steps on {refined['device']} "
                f"({refined['backend']}, {refined['seconds']:.1f} s): held-out PSNR "
                f"{before['psnr']:.1f} -> {after['psnr']:.1f} dB, SSIM {before['ssim']:.3f} -> "
                f"{after['ssim']:.3f}, silhouette IoU {before['silhouette_iou']:.3f} -> "
                f"{after['silhouette_iou']:.3f}"
            )
        if not result.report.valid:  # exported, yet not what the request asked
            summary = result.report.checks["request"].detail.get("summary", "")
            print(f"  verdict  not as asked: {summary}")
    return EXIT_OK if result.report.valid else EXIT_FAILED


def _result_json(result: Any) -> dict[str, Any]:
    from exporters.provenance import sha256_file

    return {
        "id": result.provenance.id,
        "files": [
            {"format": fmt, "path": str(path), "sha256": sha256_file(path)}
            for fmt, path in result.files.items()
        ],
        "manifest": str(result.manifest),
        "splat_refinement": result.checks.get("splat_refinement"),
        "verdict": "valid" if result.report.valid else "not as asked",
        "report": result.report.to_dict(),
    }


def _print_failure(exc: Any, as_json: bool) -> None:
    if as_json:
        report = exc.report.to_dict() if exc.report is not None else None
        print(json.dumps({"error": str(exc), "report": report}, indent=2))
        return
    print(f"genservice export: {exc}", file=sys.stderr)
    error = exc.report.error if exc.report is not None else None
    if error is not None and error.line:
        print(f"  at line {error.line} ({error.kind})", file=sys.stderr)


def provenance_command(args: argparse.Namespace) -> int:
    """Run `genservice provenance verify FILE MANIFEST`."""
    from exporters.provenance import verify

    outcome = verify(args.file, args.manifest)
    if args.json:
        print(json.dumps({"ok": outcome.ok, "problems": outcome.problems, "entry": outcome.entry}))
    elif outcome.ok:
        entry = outcome.entry or {}
        print(f"OK  {args.file} matches {args.manifest} (sha256 {entry.get('sha256')})")
    else:
        for problem in outcome.problems:
            print(f"FAILED  {problem}", file=sys.stderr)
    return EXIT_OK if outcome.ok else EXIT_FAILED
