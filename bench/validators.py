"""Benchmark: the cost of each check, drop test vs analytic stability, HumanEval throughput.

1. Cost of each check on a fixed set: CadQuery parts from bench/cad_corpus.py are built once in
   the sandbox; then every host-side check is timed on the same meshes (mean ms per part).
2. Stability: the MuJoCo drop test against the analytic centre-of-mass check on the same parts
   (agreement and time ratio).
3. HumanEval canonical solutions per second: the warm pool against one fresh sandboxed
   interpreter per task, side by side in this process.
4. The MBPP slice (tasks 601-974) the same way: canonical solutions accepted, stubs returning
   None rejected, tasks/s through the warm pool against one fresh interpreter per task.
5. The wire's cost for standard-library values: every expected value of the MBPP asserts sent
   from the candidate's side to the judge's (encode, JSON, parse, rebuild) as plain data, and
   the same data as standard-library values (dicts as OrderedDicts, lists as deques, tuples as
   named tuples, floats as Decimals), side by side.

Usage: .venv/bin/python -m bench.validators [--parts 30] [--humaneval 164] [--one-shot 12]
       [--sections checks,humaneval,mbpp,wire]
"""

from __future__ import annotations

import argparse
import ast
import collections
import decimal
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
from validators.code import mbpp, server, wire
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


def mbpp_throughput(one_shot_count: int) -> dict[str, Any]:
    """The MBPP slice: canonical solutions accepted, stubs rejected, pool against one-shot."""
    tasks = mbpp.load_tasks()

    def run_all(executor: Any, subset: list[dict[str, Any]], program: Any) -> tuple[float, int]:
        started = time.perf_counter()
        valid = 0
        for task in track(subset, description=f"MBPP via {type(executor).__name__}"):
            valid += validate_code(program(task), executor, **mbpp.judge_options(task)).valid
        return time.perf_counter() - started, valid

    with SandboxPool(size=1, preload=("validators.code.guest",)) as pool:
        run_all(pool, tasks[:2], mbpp.canonical_program)  # warm-up
        pool_s, accepted = run_all(pool, tasks, mbpp.canonical_program)
        _, stubs_passed = run_all(pool, tasks, mbpp.stub_program)
        pool_subset_s, _ = run_all(pool, tasks[:one_shot_count], mbpp.canonical_program)
    one_shot = OneShot(preload=("validators.code.guest",))
    one_shot_s, _ = run_all(one_shot, tasks[:one_shot_count], mbpp.canonical_program)
    return {
        "tasks": len(tasks),
        "canonical_accepted": accepted,
        "known_broken": len(mbpp.KNOWN_BROKEN),
        "stubs_rejected": len(tasks) - stubs_passed,
        "pool_tasks_per_s": len(tasks) / pool_s,
        "one_shot_tasks_per_s": one_shot_count / one_shot_s,
        "pool_speedup_on_subset": one_shot_s / pool_subset_s,
    }


def _expected_values() -> list[Any]:
    """The right-hand side of every `assert call == value` in the MBPP slice (plain literals)."""
    values = []
    for task in mbpp.load_tasks():
        for node in ast.parse(task["tests"]).body:
            test = node.test if isinstance(node, ast.Assert) else None
            if isinstance(test, ast.Compare) and len(test.comparators) == 1:
                try:
                    values.append(ast.literal_eval(test.comparators[0]))
                except ValueError:
                    continue
    return values


def _standard_twin(value: Any) -> Any:
    """The same data as standard-library values, all the way down."""
    if isinstance(value, dict):
        return collections.OrderedDict((k, _standard_twin(v)) for k, v in value.items())
    if isinstance(value, list):
        return collections.deque(_standard_twin(v) for v in value)
    if isinstance(value, tuple) and value:
        kind = collections.namedtuple("Row", [f"f{i}" for i in range(len(value))])  # type: ignore[misc]
        return kind(*(_standard_twin(v) for v in value))
    if isinstance(value, float):
        return decimal.Decimal(repr(value))
    return value


def wire_cost(repeats: int) -> dict[str, Any]:
    """Microseconds per value across the wire: plain data against standard-library values."""
    plain = _expected_values()
    rich = [_standard_twin(v) for v in plain]

    def seconds(values: list[Any]) -> float:
        started = time.perf_counter()
        for _ in range(repeats):
            for value in values:
                body = server.dumps({"value": server.encode(value)})[4:]
                wire.decode(json.loads(body)["value"])
        return time.perf_counter() - started

    seconds(plain[:50]), seconds(rich[:50])  # warm-up
    plain_s = rich_s = 0.0
    for _ in range(3):  # interleaved, so both see the same machine
        plain_s += seconds(plain)
        rich_s += seconds(rich)
    per = 1e6 / (3 * repeats * len(plain))
    return {
        "values": len(plain),
        "plain_us": plain_s * per,
        "standard_us": rich_s * per,
        "ratio": rich_s / plain_s,
    }


def main() -> None:
    """Run all three parts and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=30)
    parser.add_argument("--humaneval", type=int, default=164)
    parser.add_argument("--one-shot", type=int, default=12)
    parser.add_argument("--wire-repeats", type=int, default=20)
    parser.add_argument("--sections", default="checks,humaneval,mbpp,wire")
    parser.add_argument("--out", type=Path, default=Path("bench/results/validators.json"))
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    results: dict[str, Any] = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if "checks" in sections:
        shapes = build_parts(args.parts)
        costs = time_guest_checks(args.parts) | time_checks(shapes)
        stability = compare_stability(shapes)
        results.update(check_ms=costs, stability=stability)
        print(f"cost per shape over {len(shapes)} corpus shapes (ms):")
        for name, ms in sorted(costs.items(), key=lambda item: -item[1]):
            print(f"  {name:28s} {ms:9.1f}")
        print(
            f"drop test vs analytic: agreement {stability['agreement']:.0%}, "
            f"drop test takes {stability['drop_over_analytic_time']:.0f}x the analytic time"
        )
    if "humaneval" in sections:
        humaneval = results["humaneval"] = humaneval_throughput(args.humaneval, args.one_shot)
        print(
            f"HumanEval: {humaneval['passed']}/{humaneval['tasks']} canonical solutions pass; "
            f"warm pool {humaneval['pool_tasks_per_s']:.1f} tasks/s, one-shot "
            f"{humaneval['one_shot_tasks_per_s']:.2f} tasks/s "
            f"(pool {humaneval['pool_speedup_on_subset']:.1f}x faster on the same tasks)"
        )
    if "mbpp" in sections:
        found = results["mbpp"] = mbpp_throughput(args.one_shot)
        print(
            f"MBPP 601-974: {found['canonical_accepted']}/{found['tasks']} canonical solutions "
            f"accepted ({found['known_broken']} tasks known broken), "
            f"{found['stubs_rejected']}/{found['tasks']} stubs rejected; warm pool "
            f"{found['pool_tasks_per_s']:.1f} tasks/s, one-shot "
            f"{found['one_shot_tasks_per_s']:.2f} tasks/s "
            f"(pool {found['pool_speedup_on_subset']:.1f}x faster on the same tasks)"
        )
    if "wire" in sections:
        cost = results["wire"] = wire_cost(args.wire_repeats)
        print(
            f"wire, {cost['values']} MBPP expected values: plain data {cost['plain_us']:.1f} us, "
            f"as standard-library values {cost['standard_us']:.1f} us "
            f"({cost['ratio']:.2f}x) per value, encode to rebuild"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
