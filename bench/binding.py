"""Benchmark: how often binding (genservice/generation/binding.py) is right, on corpus references.

A reference program is exactly what its request asks, so binding it to its request must change
nothing. Spoiling one numeric parameter of it (a count + 1, a measure × 1.3 + 1) makes a program
with one wrong number: binding either restores the reference (the request states that number
and names the parameter), leaves the spoilt program alone (it does not, or not with certainty),
or writes something else — a wrong binding. Per family and overall, over a seeded draw of
CAD and scene tasks (val split by default, so no training task), with the time binding takes
per program against the time parsing the program alone takes (binding parses it once too).

Usage: .venv/bin/python -m bench.binding [--per-family 20] [--seed 7] [--split val]
       [--opt-in compositional,furniture]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from genservice.generation.binding import bind_stated_numbers
from training.corpus.build import build_corpus
from training.corpus.families import families_for
from validators.cad.program import apply_parameters, find_parameters, parse

RESULTS = Path(__file__).parent / "results" / "binding.json"


def spoil(value: int | float, kind: str) -> int | float:
    """A wrong value for a parameter: a count one more, a measure 30 % and 1 mm more."""
    return value + 1 if kind == "int" else round(float(value) * 1.3 + 1, 1)


def main() -> None:
    """Run the benchmark, print a table and write bench/results/binding.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--split", default="val", choices=["train", "val", "test"])
    parser.add_argument(
        "--opt-in",
        help="comma-separated opt-in families to draw as well (compositional, furniture)",
    )
    args = parser.parse_args()

    families = families_for(["cad", "scene"])
    if args.opt_in:
        families += families_for(names=args.opt_in.split(","))
    tasks = list(
        build_corpus(
            args.per_family * len(families), args.seed, families=families, split=args.split
        )
    )
    changed, spoilt, restored, wrong = Counter(), Counter(), Counter(), Counter()
    bind_s = parse_s = 0.0
    for task in tasks:
        family, reference, request = task["family"], task["reference"], task["prompt"]
        started = time.perf_counter()
        bound = bind_stated_numbers(reference, request)
        bound_at = time.perf_counter()
        parameters = find_parameters(parse(reference))
        bind_s += bound_at - started
        parse_s += time.perf_counter() - bound_at
        changed[family] += bound != reference
        for name, parameter in parameters.items():
            if parameter.type not in ("int", "float"):
                continue
            program = apply_parameters(reference, {name: spoil(parameter.value, parameter.type)})
            result = bind_stated_numbers(program, request)
            spoilt[family] += 1
            restored[family] += result == reference
            wrong[family] += result not in (reference, program)

    rows = [
        {
            "family": family,
            "references_changed": changed[family],
            "spoilt": spoilt[family],
            "restored": restored[family],
            "wrong": wrong[family],
        }
        for family in sorted(spoilt)
    ]
    overall = {
        "tasks": len(tasks),
        "references_changed": sum(changed.values()),
        "spoilt": sum(spoilt.values()),
        "restored": sum(restored.values()),
        "wrong": sum(wrong.values()),
        "bind_us_per_program": round(1e6 * bind_s / len(tasks), 1),
        "bind_vs_parse": round(bind_s / parse_s, 2),
    }
    print(f"{'family':<20} {'refs changed':>12} {'restored':>14} {'wrong':>6}")
    for row in rows:
        share = f"{row['restored']}/{row['spoilt']}"
        print(f"{row['family']:<20} {row['references_changed']:>12} {share:>14} {row['wrong']:>6}")
    print(
        f"overall: {overall['tasks']} tasks, {overall['references_changed']} references changed; "
        f"{overall['restored']}/{overall['spoilt']} spoilt parameters restored "
        f"({100 * overall['restored'] / overall['spoilt']:.1f} %), {overall['wrong']} wrong; "
        f"{overall['bind_us_per_program']} µs a program ({overall['bind_vs_parse']}× parsing it)"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {"per_family": args.per_family, "seed": args.seed, "split": args.split}
    RESULTS.write_text(json.dumps({"meta": meta, "overall": overall, "families": rows}, indent=1))


if __name__ == "__main__":
    main()
