"""Benchmark: the renderer against trimesh's ray caster, and what a preview adds to an export.

1. Views per second: the same meshes (CadQuery parts from bench/cad_corpus.py, built once in the
   sandbox) and the same orthographic views, cast by exporters/render.py (open3d's Embree
   `RaycastingScene`) and by trimesh's ray caster (`ray.intersects_first`, its default engine
   here), side by side in this process; the two agree on which pixels hit the part (reported).
2. The cost a preview adds: exporting each part as GLB + STEP + STL with and without `png`
   (run, check, write), interleaved, median seconds and the ratio.

Usage: .venv/bin/python -m bench.render [--parts 12] [--size 128] [--repeats 3]
Writes bench/results/render.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import track

from bench.cad_corpus import corpus
from exporters.parts import PartMesh, parts_from_payload
from exporters.render import RIG, Scene, View
from validators.sandbox import Limits, SandboxPool

RESULTS = Path(__file__).resolve().parent / "results"


def trimesh_hits(parts: list[PartMesh], view: View, size: int) -> np.ndarray:
    """The hit mask of one orthographic view by trimesh's ray caster (same rays as Scene)."""
    import trimesh

    mesh: Any = trimesh.util.concatenate([p.trimesh() for p in parts])
    points = np.concatenate([np.asarray(p.vertices, dtype=np.float64) for p in parts])
    centre = (points.min(axis=0) + points.max(axis=0)) / 2
    radius = float(np.linalg.norm(points - centre, axis=1).max())
    right, up, back = view.basis()
    centres = (np.arange(size) + 0.5) / size * 2 - 1
    xs, ys = np.meshgrid(centres, -centres)
    reach = radius * 1.06
    origins = (
        centre + back * (2 * radius + 1) + reach * (xs[..., None] * right + ys[..., None] * up)
    )
    directions = np.broadcast_to(-back, origins.shape)
    hit = mesh.ray.intersects_first(origins.reshape(-1, 3), directions.reshape(-1, 3)) >= 0
    return hit.reshape(size, size)


def views_per_second(shapes: list[list[PartMesh]], size: int, repeats: int) -> dict[str, Any]:
    """Both casters on the rig's orthographic views of every shape, interleaved."""
    views = [View.named(name) for name in RIG[:3]]  # the orthographic ones
    open3d_s: list[float] = []
    trimesh_s: list[float] = []
    agree: list[float] = []
    Scene(shapes[0]).cast(views[0], 16)  # load open3d and Embree once, outside the timing
    trimesh_hits(shapes[0], views[0], 16)
    for _ in range(repeats):
        for parts in track(shapes, description="casting", transient=True):
            started = time.perf_counter()
            scene = Scene(parts)
            ours = [scene.cast(view, size).hit for view in views]
            open3d_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            theirs = [trimesh_hits(parts, view, size) for view in views]
            trimesh_s.append(time.perf_counter() - started)
            agree.extend(float((a == b).mean()) for a, b in zip(ours, theirs, strict=True))
    views_done = len(views) * len(shapes) * repeats
    ours_rate, theirs_rate = views_done / sum(open3d_s), views_done / sum(trimesh_s)
    return {
        "views": views_done,
        "size": size,
        "open3d_views_per_s": round(ours_rate, 1),
        "trimesh_views_per_s": round(theirs_rate, 1),
        "speedup": round(ours_rate / theirs_rate, 2),
        "pixel_agreement_min": round(min(agree), 4),
    }


def preview_cost(sources: list[str], repeats: int) -> dict[str, Any]:
    """Median export seconds per part without and with the PNG preview, interleaved."""
    from exporters.export import ExportOptions, export_script

    plain, with_png = (
        ExportOptions(("glb", "step", "stl")),
        ExportOptions(("glb", "step", "stl", "png")),
    )
    times: dict[str, list[float]] = {"without": [], "with": []}
    with SandboxPool(size=1) as pool, tempfile.TemporaryDirectory() as scratch:
        export_script(sources[0], Path(scratch), pool, options=with_png)  # warm both paths
        for _ in range(repeats):
            for source in track(sources, description="exporting", transient=True):
                for label, options in (("without", plain), ("with", with_png)):
                    started = time.perf_counter()
                    export_script(source, Path(scratch), pool, options=options)
                    times[label].append(time.perf_counter() - started)
    without, with_ = statistics.median(times["without"]), statistics.median(times["with"])
    return {
        "exports": len(times["with"]),
        "median_s_without_png": round(without, 4),
        "median_s_with_png": round(with_, 4),
        "ratio": round(with_ / without, 3),
    }


def main() -> None:
    """Run both measurements and write bench/results/render.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=12)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sources = [source for _, source in corpus(args.parts)]
    shapes = []
    with SandboxPool(size=2) as pool:
        for source in sources:
            result = pool.run("cad_export", source, {"step": None}, Limits(wall_s=30))
            if result.ok and result.payload and "parts" in result.payload:
                shapes.append(parts_from_payload(result.payload))
    found = {
        "casting": views_per_second(shapes, args.size, args.repeats),
        "preview": preview_cost(sources, max(1, args.repeats - 1)),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "render.json").write_text(json.dumps(found, indent=2) + "\n")
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
