"""Benchmark: the cost of each check, drop test vs analytic stability, HumanEval throughput.

1. Cost of each check on a fixed set: CadQuery parts from bench/cad_corpus.py are built once in
   the sandbox; then every host-side check is timed on the same meshes (mean ms per part).
2. Stability: the MuJoCo drop test against the analytic centre-of-mass check on the same parts
   (agreement and time ratio).
3. HumanEval canonical solutions per second: the warm pool against one fresh sandboxed
   interpreter per task, side by side in this process.

Usage: .venv/bin/python -m bench.validators [--parts 30] [--humaneval 164] [--one-shot 12]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trimesh
from rich.progress import track

from bench.cad_corpus import corpus
from validators import physics
from validators.cad import similarity
from validators.cad.mesh import combine, decode_mesh, watertight_facts
from validators.code.humaneval import canonical_program, judge_options, load_tasks
from validators.code.validate import validate_code
from validators.sandbox import Limits, OneShot, SandboxPool


def build_parts(count: int) -> list[list[tuple[str, trimesh.Trimesh]]]:
    """Meshes of `count` corpus scripts, built once in the sandbox."""
    shapes: list[list[tuple[str, trimesh.Trimesh]]] = []
    with SandboxPool(size=2) as pool:
        for _name, source in corpus(count):
            result = pool.run("cad", source, {"check_self_intersection": False}, Limits(wall_s=30))
            if result.ok and result.payload and "parts" in result.payload:
                parts = [(p["name"], decode_mesh(p["mesh"])) for p in result.payload["parts"]]
                shapes.append([(n, m) for n, m in parts if m is not None])
    return shapes


def time_checks(shapes: list[list[tuple[str, trimesh.Trimesh]]]) -> dict[str, float]:
    """Mean milliseconds per shape of every host-side check."""
    checks: dict[str, Callable[[list[tuple[str, trimesh.Trimesh]], trimesh.Trimesh], Any]] = {
        "watertight": lambda parts, whole: watertight_facts(whole),
        "similarity (IoU + Chamfer)": lambda parts, whole: (
            similarity.iou(whole, whole),
            similarity.chamfer(whole, whole),
        ),
        "overhang": lambda parts, whole: physics.overhang(whole),
        "wall_thickness": lambda parts, whole: physics.wall_thickness(whole),
        "build_volume": lambda parts, whole: physics.build_volume(whole),
        "stability (drop test)": lambda parts, whole: physics.stability(parts),
        "stability_analytic": lambda parts, whole: physics.stability_analytic(parts),
        "interference": lambda parts, whole: physics.interference(parts),
        "floating_parts": lambda parts, whole: physics.floating_parts(parts),
        "support": lambda parts, whole: physics.support(parts),
    }
    seconds = dict.fromkeys(checks, 0.0)
    for parts in track(shapes, description="timing checks"):
        whole = combine([m for _, m in parts])
        assert whole is not None
        for name, run in checks.items():
            started = time.perf_counter()
            run(parts, whole)
            seconds[name] += time.perf_counter() - started
    return {name: 1000 * s / len(shapes) for name, s in seconds.items()}


def _collector(store: list[Any]) -> Callable[..., None]:
    def show_object(obj: Any, name: str | None = None, options: Any = None) -> None:
        store.append(obj)

    return show_object


def time_guest_checks(count: int) -> dict[str, float]:
    """Mean milliseconds per script of the checks computed inside the sandbox (run in-process)."""
    import cadquery as cq

    from validators.cad import guest, measurer

    seconds = {
        "execute script": 0.0,
        "hand-over (write + read the B-rep)": 0.0,
        "brep_valid (BRepAlgoAPI_Check)": 0.0,
        "tessellation (for watertight)": 0.0,
        "bbox + holes (for spec)": 0.0,
    }
    scripts = corpus(count)
    for _name, source in track(scripts, description="timing sandbox-side checks"):
        shown: list[Any] = []
        namespace = {"show_object": _collector(shown)}
        started = time.perf_counter()
        exec(compile(source, "<program>", "exec"), namespace)
        seconds["execute script"] += time.perf_counter() - started
        started = time.perf_counter()
        handover = guest.hand_over([(shown[0] if shown else namespace["result"], None)])
        _kind, parts, _data = measurer.read_handover(handover, 64 << 20)
        seconds["hand-over (write + read the B-rep)"] += time.perf_counter() - started
        for part in parts:
            solids = [solid for shape in part["shapes"] for solid in shape.Solids()]
            compound = cq.Compound.makeCompound(solids)
            started = time.perf_counter()
            measurer.invalid_reason(solids, compound, self_check=True)
            seconds["brep_valid (BRepAlgoAPI_Check)"] += time.perf_counter() - started
            started = time.perf_counter()
            box = compound.BoundingBox()
            len(measurer._hole_axes(compound))
            seconds["bbox + holes (for spec)"] += time.perf_counter() - started
            started = time.perf_counter()
            measurer._mesh(compound, box, {})
            seconds["tessellation (for watertight)"] += time.perf_counter() - started
    return {name: 1000 * s / len(scripts) for name, s in seconds.items()}


def compare_stability(shapes: list[list[tuple[str, trimesh.Trimesh]]]) -> dict[str, float]:
    """Agreement of the drop test and the analytic check, and their time ratio."""
    agree, drop_s, analytic_s = 0, 0.0, 0.0
    for parts in track(shapes, description="drop test vs analytic"):
        started = time.perf_counter()
        dropped = physics.stability(parts).passed
        drop_s += time.perf_counter() - started
        started = time.perf_counter()
        analytic = physics.stability_analytic(parts).passed
        analytic_s += time.perf_counter() - started
        agree += dropped == analytic
    return {"agreement": agree / len(shapes), "drop_over_analytic_time": drop_s / analytic_s}


def humaneval_throughput(count: int, one_shot_count: int) -> dict[str, float]:
    """Canonical HumanEval solutions per second: warm pool against one-shot interpreters."""
    tasks = load_tasks()[:count]
    limits = Limits(wall_s=20)

    def run_all(executor: Any, subset: list[dict[str, Any]]) -> tuple[float, int]:
        started = time.perf_counter()
        passed = 0
        for task in track(subset, description=f"HumanEval via {type(executor).__name__}"):
            report = validate_code(
                canonical_program(task), executor, limits=limits, **judge_options(task)
            )
            passed += report.valid
        return time.perf_counter() - started, passed

    with SandboxPool(size=1, preload=("validators.code.guest",)) as pool:
        run_all(pool, tasks[:2])  # warm-up
        pool_s, pool_passed = run_all(pool, tasks)
        pool_subset_s, _ = run_all(pool, tasks[:one_shot_count])
    one_shot = OneShot(preload=("validators.code.guest",))
    one_shot_s, one_passed = run_all(one_shot, tasks[:one_shot_count])
    return {
        "tasks": len(tasks),
        "passed": pool_passed,
        "pool_tasks_per_s": len(tasks) / pool_s,
        "one_shot_tasks_per_s": one_shot_count / one_shot_s,
        "pool_speedup_on_subset": one_shot_s / pool_subset_s,
        "one_shot_passed": one_passed,
    }


def main() -> None:
    """Run all three parts and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=30)
    parser.add_argument("--humaneval", type=int, default=164)
    parser.add_argument("--one-shot", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("bench/results/validators.json"))
    args = parser.parse_args()
    shapes = build_parts(args.parts)
    costs = time_guest_checks(args.parts) | time_checks(shapes)
    stability = compare_stability(shapes)
    humaneval = humaneval_throughput(args.humaneval, args.one_shot)
    print(f"cost per shape over {len(shapes)} corpus shapes (ms):")
    for name, ms in sorted(costs.items(), key=lambda item: -item[1]):
        print(f"  {name:28s} {ms:9.1f}")
    print(
        f"drop test vs analytic: agreement {stability['agreement']:.0%}, "
        f"drop test takes {stability['drop_over_analytic_time']:.0f}x the analytic time"
    )
    print(
        f"HumanEval: {humaneval['passed']}/{humaneval['tasks']} canonical solutions pass; "
        f"warm pool {humaneval['pool_tasks_per_s']:.1f} tasks/s, one-shot "
        f"{humaneval['one_shot_tasks_per_s']:.2f} tasks/s "
        f"(pool {humaneval['pool_speedup_on_subset']:.1f}x faster on the same tasks)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"check_ms": costs, "stability": stability, "humaneval": humaneval}, indent=2)
    )


if __name__ == "__main__":
    main()
