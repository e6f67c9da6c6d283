"""`genservice render`: a picture of a CadQuery script or a mesh file (exporters/render.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from genservice.cli.common import UsageError, open_pool, parse_params, sandbox_limits

EXIT_OK, EXIT_FAILED = 0, 1
MESH_SUFFIXES = (".stl", ".obj", ".ply", ".off", ".glb", ".gltf")


def add_render_command(sub: Any) -> None:
    """Register `render` on the CLI's subparsers."""
    from exporters.render import NAMED_VIEWS, RIG, STYLES

    render = sub.add_parser(
        "render",
        help="draw a CadQuery script or a mesh file as a PNG (front, top, right and iso views)",
        description="Render a CadQuery script (run in the sandbox) or a mesh file "
        f"({', '.join(MESH_SUFFIXES)}) headless on the CPU: each view is ray cast at the "
        "triangles and the views are composed into one PNG. Exit 1 when the script builds no "
        "geometry or the file holds none, 2 on a usage error.",
    )
    render.add_argument("source", type=Path, metavar="SCRIPT|MESH")
    render.add_argument("-o", "--output", type=Path, required=True, help="the PNG to write")
    render.add_argument(
        "--views",
        default="rig",
        help=f"comma-separated: {', '.join(NAMED_VIEWS)}, or rig ({', '.join(RIG)}; default)",
    )
    render.add_argument("--size", type=int, default=224, help="pixels per view (default 224)")
    render.add_argument("--style", choices=STYLES, default="shaded", help="default shaded")
    render.add_argument("--columns", type=int, default=2, help="views per row (default 2)")
    render.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a top-level parameter of a script (repeatable)",
    )
    render.add_argument("--domain", choices=("cad", "scene"), default="cad")
    render.add_argument("--timeout", type=float, help="seconds for the script (default 10)")
    render.add_argument("--json", action="store_true", help="print what was written as JSON")


def render_command(args: argparse.Namespace) -> int:
    """Write the picture; print where, its size and the script's verdict."""
    from exporters.export import ExportError, script_parts
    from exporters.render import (
        MAX_SIZE,
        MIN_SIZE,
        RenderError,
        png_bytes,
        render,
        views_from_names,
    )

    if not args.source.is_file():
        raise UsageError(f"{args.source} is not a file")
    if args.columns < 1:
        raise UsageError("--columns must be at least 1")
    if not MIN_SIZE <= args.size <= MAX_SIZE:
        raise UsageError(f"--size must be {MIN_SIZE}-{MAX_SIZE} pixels per view")
    try:
        views = views_from_names([v.strip() for v in args.views.split(",") if v.strip()])
    except RenderError as exc:
        raise UsageError(str(exc)) from exc
    verdict = None
    try:
        if args.source.suffix.lower() in MESH_SUFFIXES:
            from exporters.render import parts_from_mesh_file

            parts = parts_from_mesh_file(args.source)
        else:
            source = args.source.read_text(encoding="utf-8", errors="replace")
            limits, _, isolation = sandbox_limits(args.timeout, 1)
            with open_pool(1, limits, isolation, "cad") as pool:
                parts, report = script_parts(
                    source,
                    pool,
                    parameters=parse_params(args.param),
                    limits=limits,
                    domain=args.domain,
                )
            verdict = "valid" if report.valid else "invalid"
        picture = render(parts, views, args.size, args.style, args.columns)
    except (RenderError, ExportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    args.output.parent.mkdir(parents=True, exist_ok=True)
    data = png_bytes(picture)
    args.output.write_bytes(data)
    height, width, _ = picture.shape
    summary = {
        "path": str(args.output),
        "width": width,
        "height": height,
        "bytes": len(data),
        "views": [v.name for v in views],
        "style": args.style,
        "verdict": verdict,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        what = f" (the script is {verdict})" if verdict else ""
        print(f"wrote {args.output}  {width}x{height}, {len(data):,} bytes{what}")
    return EXIT_OK
