"""Benchmark: validate a fixed batch of CadQuery scripts three ways, side by side, in one process.

- pool:     the warm sandbox pool (one worker; cadquery already imported, a fork per script)
- one-shot: one freshly started sandboxed interpreter per script (the slow reference)
- floor:    in-process exec with no isolation at all (what the pool cannot beat): the same
            build, hand-over and measurement, called directly in this process

The pool and the one-shot path build in one process and measure in another that never ran the
script (validators/cad/measurer.py); the hand-over between them is reported per script: its
bytes, the builder's time to write it (timed here, in the floor) and the measurer's time to
read it (median and p95).

Each script is validated by the three ways in turn, so that machine noise hits all of them alike.
The checks are the geometry checks (executes … bbox): printability and physics run on the host
after the sandbox, identically for all three ways, and are timed by bench/validators.py.
Usage: .venv/bin/python -m bench.sandbox [--n 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import track

from bench.cad_corpus import corpus
from validators.cad.validate import CadOptions, validate_cad
from validators.sandbox import Limits, OneShot, SandboxPool, SandboxResult, Status

GEOMETRY = CadOptions(printability=False, physics=False)


class InProcess:
    """No isolation, no process: build, hand over and measure called directly (the floor)."""

    def __init__(self) -> None:
        from validators.cad import guest, measurer

        self.guest, self.measurer = guest, measurer
        self.write_ms: list[float] = []

    def run(
        self,
        runner: str,
        program: str,
        options: dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> SandboxResult:
        started = time.monotonic()
        try:
            shown = self.guest.execute_script(program, options or {})
            written = time.perf_counter()
            handover = self.guest.hand_over(shown)
            self.write_ms.append((time.perf_counter() - written) * 1000)
            payload = self.measurer.measure_cad(handover, options or {})
        except Exception as exc:
            return SandboxResult(
                Status.ERROR,
                time.monotonic() - started,
                error={"kind": "exception", "message": str(exc), "line": None},
            )
        return SandboxResult(Status.OK, time.monotonic() - started, payload=payload)


def _spread(values: list[float]) -> dict[str, float]:
    """Median and 95th percentile of per-script figures."""
    if not values:
        return {"median": float("nan"), "p95": float("nan")}
    return {"median": float(np.median(values)), "p95": float(np.percentile(values, 95))}


def main() -> None:
    """Run the benchmark and print scripts/s and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=120, help="number of scripts (>= 100 for README)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("bench/results/sandbox.json"))
    args = parser.parse_args()
    scripts = corpus(args.n, args.seed)
    limits = Limits(wall_s=30.0)
    ways: dict[str, Any] = {"floor": InProcess(), "one-shot": OneShot()}
    seconds = {"pool": 0.0, "one-shot": 0.0, "floor": 0.0}
    verdicts: dict[str, list[bool]] = {name: [] for name in seconds}
    handover_bytes: list[float] = []
    read_ms: list[float] = []
    volumes: dict[str, list[float]] = {name: [] for name in seconds}
    with SandboxPool(size=1, limits=limits) as pool:
        ways["pool"] = pool
        for way in ways.values():  # warm-up: first-call costs are not what we measure
            validate_cad(scripts[0][1], way, limits=limits, options=GEOMETRY)
        for _name, source in track(scripts, description="validating 3 ways"):
            for way_name in ("pool", "floor", "one-shot"):
                started = time.perf_counter()
                report = validate_cad(source, ways[way_name], limits=limits, options=GEOMETRY)
                seconds[way_name] += time.perf_counter() - started
                verdicts[way_name].append(report.valid)
                if way_name == "pool" and "handover" in report.metrics:
                    handover_bytes.append(report.metrics["handover"]["bytes"])
                    read_ms.append(report.metrics["handover"]["read_ms"])
                volumes[way_name].append(float(report.metrics.get("volume_mm3", 0.0)))
    rate = {name: len(scripts) / s for name, s in seconds.items()}
    disagreements = sum(
        1
        for i in range(len(scripts))
        if len({verdicts[w][i] for w in seconds}) > 1
        or max(abs(volumes[w][i] - volumes["floor"][i]) for w in seconds)
        > 1e-6 * max(1.0, volumes["floor"][i])
    )
    result = {
        "scripts": len(scripts),
        "valid": {w: sum(v) for w, v in verdicts.items()},
        "scripts_per_s": rate,
        "pool_speedup_vs_one_shot": seconds["one-shot"] / seconds["pool"],
        "pool_slowdown_vs_floor": seconds["pool"] / seconds["floor"],
        "disagreements": disagreements,
        "handover": {
            "bytes": _spread(handover_bytes),
            "write_ms": _spread(ways["floor"].write_ms[1:]),  # the first was the warm-up
            "read_ms": _spread(read_ms),
        },
    }
    print(f"{len(scripts)} scripts, valid: {result['valid']}, disagreements: {disagreements}")
    for name in ("floor", "pool", "one-shot"):
        print(f"  {name:9s} {rate[name]:8.2f} scripts/s   ({seconds[name]:.1f} s)")
    print(f"  pool is {result['pool_speedup_vs_one_shot']:.1f}x faster than one-shot (goal >= 15x)")
    print(
        f"  pool is {result['pool_slowdown_vs_floor']:.2f}x the unsafe floor's time (goal <= 1.5x)"
    )
    for name, spread in result["handover"].items():
        print(f"  hand-over {name}: median {spread['median']:.3g}, p95 {spread['p95']:.3g}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
