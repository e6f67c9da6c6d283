"""Benchmark: time and file size per export format, against the stock cadquery/trimesh exporters.

On the fixed sample set (exporters/samples: revolves, lofts, sweeps, shells, fillets, holes and a
coloured assembly), side by side in this process tree:
- ours: the script runs once in the warm sandbox (measure, tessellate with normals; STEP written
  and read back there), then each file is written on the host from that run;
- stock cadquery: a child Python process runs the same scripts and calls cadquery's own
  exporters (Assembly.save for STEP and GLB, cq.exporters.export for STL and 3MF), each of which
  tessellates for itself;
- stock trimesh: trimesh's GLB and STL writers on our mesh (writer against writer).
Also GLB size against geometric error for the compression options (none, quantize, draco).

Usage: .venv/bin/python -m bench.export [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import DracoPy
import numpy as np
import trimesh
from rich.progress import track
from scipy.spatial import cKDTree

from exporters.glb import accessor_array, read_glb, to_gltf_axes
from exporters.gltf import glb_bytes
from exporters.parts import PartMesh, parts_from_payload
from exporters.samples import sample_names, sample_source
from exporters.splat import gaussians_from_parts, read_splat_glb, write_splats
from exporters.splat_render import silhouette_iou
from exporters.stl import stl_bytes
from exporters.threemf import threemf_bytes
from validators.sandbox import Limits, SandboxPool

HEADER = {"name": "bench", "timestamp": "2026-01-01T00:00:00Z", "schema": "AP242"}
LIMITS = Limits(wall_s=60, memory_mb=2048)

# Runs in a plain child interpreter (trusted sample scripts): cadquery's own exporters.
STOCK = r"""
import json, os, sys, tempfile, time
import cadquery as cq

jobs = json.load(sys.stdin)
folder = tempfile.mkdtemp()
results = []
for name, source, repeats in jobs:
    for _ in range(repeats):
        shown = []
        show = lambda o, name=None, **k: shown.append((o, name))
        namespace = {"__name__": "__main__", "show_object": show}
        start = time.perf_counter()
        exec(compile(source, name, "exec"), namespace)
        if not shown:
            shown = [(namespace["result"], None)]
        if len(shown) == 1 and isinstance(shown[0][0], cq.Assembly):
            assembly = shown[0][0]
        else:
            assembly = cq.Assembly(name=name)
            for i, (obj, label) in enumerate(shown):
                assembly.add(obj, name=label or f"part_{i}")
        script_s = time.perf_counter() - start
        compound = assembly.toCompound()
        row = {"name": name, "script_s": script_s, "seconds": {}, "bytes": {}}
        for fmt, write in (
            ("step", lambda p: assembly.save(p, "STEP")),
            ("glb", lambda p: assembly.save(p, "GLTF")),
            ("stl", lambda p: cq.exporters.export(compound, p, "STL")),
            ("3mf", lambda p: cq.exporters.export(compound, p, "3MF")),
        ):
            path = os.path.join(folder, f"{name}.{fmt}")
            start = time.perf_counter()
            write(path)
            row["seconds"][fmt] = time.perf_counter() - start
            row["bytes"][fmt] = os.path.getsize(path)
        results.append(row)
print(json.dumps(results))
"""


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = work()
    return time.perf_counter() - start, value


def run_stock(repeats: int) -> list[dict[str, Any]]:
    """Stock cadquery exporters in a child interpreter."""
    jobs = [[name, sample_source(name), repeats] for name in sample_names()]
    done = subprocess.run(
        [sys.executable, "-c", STOCK],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def _trimesh_scene(parts: list[PartMesh]) -> trimesh.Scene:
    scene = trimesh.Scene()
    for part in parts:
        scene.add_geometry(part.trimesh(), node_name=part.name, geom_name=part.name)
    return scene


def run_ours(pool: SandboxPool, name: str, splat_iou: bool = False) -> dict[str, Any]:
    """Our pipeline on one sample: sandbox run (with and without STEP), then each writer."""
    source = sample_source(name)
    mesh_s, plain = _timed(lambda: pool.run("cad_export", source, {"step": None}, LIMITS))
    with_step_s, full = _timed(lambda: pool.run("cad_export", source, {"step": HEADER}, LIMITS))
    if not (plain.ok and full.ok and "step" in (full.payload or {})):
        raise RuntimeError(f"{name} did not export: {full.error or full.payload}")
    parts = parts_from_payload(full.payload)
    row: dict[str, Any] = {
        "name": name,
        "sandbox_s": mesh_s,
        "seconds": {"step": max(0.0, with_step_s - mesh_s)},
        "bytes": {"step": len(full.payload["step"]) * 3 // 4},  # base64 in the payload
        "trimesh_seconds": {},
        "trimesh_bytes": {},
    }
    writers: dict[str, Callable[[], bytes]] = {
        "glb": lambda: glb_bytes(parts, name),
        "glb-quantize": lambda: glb_bytes(parts, name, compression="quantize"),
        "glb-draco": lambda: glb_bytes(parts, name, compression="draco"),
        "stl": lambda: stl_bytes(parts),
        "3mf": lambda: threemf_bytes(parts, name),
        "ply": lambda: write_splats(parts, "ply"),
        "spz": lambda: write_splats(parts, "spz"),
        "splat-glb": lambda: write_splats(parts, "splat-glb"),
    }
    blobs = {}
    for fmt, write in writers.items():
        row["seconds"][fmt], blobs[fmt] = _timed(write)
        row["bytes"][fmt] = len(blobs[fmt])
    row["seconds"]["gaussians"], _ = _timed(lambda: gaussians_from_parts(parts))
    scene = _trimesh_scene(parts)
    for fmt in ("glb", "stl"):
        seconds, data = _timed(lambda fmt=fmt: scene.export(file_type=fmt))  # type: ignore[misc]
        row["trimesh_seconds"][fmt], row["trimesh_bytes"][fmt] = seconds, len(data)
    row["glb_error_mm"] = compression_errors(parts, blobs)
    if splat_iou:  # the splats against the mesh, 6 views at 256 px (read back from the GLB)
        row["splat_iou"] = silhouette_iou(read_splat_glb(blobs["splat-glb"]), parts, views=6)
    return row


def compression_errors(parts: list[PartMesh], blobs: dict[str, bytes]) -> dict[str, float]:
    """Largest distance (mm) from a decoded vertex to the nearest original vertex, per option."""
    original = np.concatenate([to_gltf_axes(p.vertices) for p in parts]).astype(np.float64)
    tree = cKDTree(original)
    errors = {}
    for fmt in ("glb", "glb-quantize", "glb-draco"):
        doc, binary = read_glb(blobs[fmt])
        decoded = []
        for node in doc["nodes"][1:]:
            primitive = doc["meshes"][node["mesh"]]["primitives"][0]
            draco = primitive.get("extensions", {}).get("KHR_draco_mesh_compression")
            if draco:
                view = doc["bufferViews"][draco["bufferView"]]
                start = view["byteOffset"]
                chunk = binary[start : start + view["byteLength"]]
                points = np.asarray(DracoPy.decode(chunk).points, dtype=np.float64)
            else:
                raw = accessor_array(doc, binary, primitive["attributes"]["POSITION"])
                points = raw.astype(np.float64) * node.get("scale", [1.0])[0]
                points += np.array(node.get("translation", [0.0, 0.0, 0.0]))
            decoded.append(points)
        distance, _ = tree.query(np.concatenate(decoded))
        errors[fmt] = float(distance.max() * 1000)  # metres -> mm
    return errors


def summarise(ours: list[dict[str, Any]], stock: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per format of our time and size against the stock exporters'."""

    def median(rows: list[dict[str, Any]], key: str, fmt: str) -> float:
        return statistics.median(r[key][fmt] for r in rows if fmt in r.get(key, {}))

    table: dict[str, Any] = {}
    for fmt in ("step", "glb", "stl", "3mf"):
        table[fmt] = {
            "ours_ms": median(ours, "seconds", fmt) * 1000,
            "stock_cadquery_ms": median(stock, "seconds", fmt) * 1000,
            "ours_bytes": median(ours, "bytes", fmt),
            "stock_cadquery_bytes": median(stock, "bytes", fmt),
        }
        table[fmt]["time_ratio"] = table[fmt]["ours_ms"] / table[fmt]["stock_cadquery_ms"]
        table[fmt]["size_ratio"] = table[fmt]["ours_bytes"] / table[fmt]["stock_cadquery_bytes"]
        if fmt in ("glb", "stl"):
            table[fmt]["trimesh_ms"] = median(ours, "trimesh_seconds", fmt) * 1000
            table[fmt]["trimesh_bytes"] = median(ours, "trimesh_bytes", fmt)
    for fmt in ("glb-quantize", "glb-draco", "ply", "spz", "splat-glb"):
        table[fmt] = {"ours_ms": median(ours, "seconds", fmt) * 1000}
        table[fmt]["ours_bytes"] = median(ours, "bytes", fmt)
    for fmt in ("glb", "glb-quantize", "glb-draco"):
        table[fmt]["size_vs_plain_glb"] = statistics.median(
            r["bytes"][fmt] / r["bytes"]["glb"] for r in ours
        )
        table[fmt]["max_error_mm"] = max(r["glb_error_mm"][fmt] for r in ours)
    sandbox_ms = statistics.median(r["sandbox_s"] for r in ours) * 1000
    splat_iou = {
        r["name"]: {"min": min(r["splat_iou"]), "mean": statistics.mean(r["splat_iou"])}
        for r in ours
        if "splat_iou" in r
    }
    all_ours = statistics.median(
        r["sandbox_s"] + sum(r["seconds"][f] for f in ("step", "glb", "stl", "3mf")) for r in ours
    )
    all_stock = statistics.median(
        r["script_s"] + sum(r["seconds"][f] for f in ("step", "glb", "stl", "3mf")) for r in stock
    )
    return {
        "formats": table,
        "sandbox_run_ms": sandbox_ms,
        "all_four_formats_ms": {"ours": all_ours * 1000, "stock_cadquery": all_stock * 1000},
        "all_four_formats_time_ratio": all_ours / all_stock,
        "splat_silhouette_iou": splat_iou,
    }


def main() -> None:
    """Run both pipelines and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/export.json"))
    args = parser.parse_args()
    names = sample_names()
    with SandboxPool(size=1, limits=LIMITS) as pool:
        work = [n for n in names for _ in range(args.repeats)]
        ours = [
            run_ours(pool, name, splat_iou=index % args.repeats == 0)
            for index, name in enumerate(track(work, description="ours"))
        ]
    stock = run_stock(args.repeats)
    summary = summarise(ours, stock)
    print(f"median over {len(names)} samples x {args.repeats} runs")
    print(
        f"{'format':13s} {'ours ms':>9s} {'stock ms':>9s} {'ratio':>6s} "
        f"{'ours KB':>9s} {'stock KB':>9s} {'ratio':>6s}"
    )
    for fmt, row in summary["formats"].items():
        stock_ms = row.get("stock_cadquery_ms")
        line = f"{fmt:13s} {row['ours_ms']:9.1f} "
        if stock_ms is not None:
            line += f"{stock_ms:9.1f} {row['time_ratio']:6.2f} {row['ours_bytes'] / 1024:9.1f} "
            line += f"{row['stock_cadquery_bytes'] / 1024:9.1f} {row['size_ratio']:6.2f}"
        else:
            line += f"{'-':>9s} {'-':>6s} {row['ours_bytes'] / 1024:9.1f}"
        if "max_error_mm" in row:
            line += (
                f"   size x{row['size_vs_plain_glb']:.2f}, max error {row['max_error_mm']:.4f} mm"
            )
        print(line)
    for fmt in ("glb", "stl"):
        row = summary["formats"][fmt]
        print(
            f"trimesh {fmt} writer on our mesh: {row['trimesh_ms']:.1f} ms, "
            f"{row['trimesh_bytes'] / 1024:.1f} KB (ours {row['ours_ms']:.1f} ms)"
        )
    for name, iou in summary["splat_silhouette_iou"].items():
        print(f"splat silhouette IoU {name:12s} min {iou['min']:.3f} mean {iou['mean']:.3f}")
    both = summary["all_four_formats_ms"]
    print(
        f"script + all four (STEP, GLB, STL, 3MF): ours {both['ours']:.0f}"
        f" ms vs stock {both['stock_cadquery']:.0f} ms "
        f"(ratio {summary['all_four_formats_time_ratio']:.2f})"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "ours": ours, "stock": stock}, indent=2))


if __name__ == "__main__":
    main()
