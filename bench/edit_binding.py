"""Benchmark: how often binding an edit's instruction is right, on the corpus's edit tasks.

An edit task holds the program before the edit, the instruction ("make it 32 mm thick") and the
reference after it. Binding the instruction into the reference must change nothing. Binding it
into the program before the edit either does the edit exactly (gives the reference), leaves the
program alone (the instruction is relative, states several numbers, or binding is not certain),
or writes a wrong value: a parameter set to what neither program holds. Per family and
overall, with how many instructions set one value outright (binding.sets_one_value).

Usage: .venv/bin/python -m bench.edit_binding --tasks data/corpus/corpus_edits.jsonl [--split test]
       (the file: genservice corpus build --n 40000 --seed 0 --edits 0.5 -o ...)
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from genservice.generation.binding import bind_candidates, sets_one_value
from validators.cad.program import find_parameters, parse

RESULTS = Path(__file__).parent / "results" / "edit_binding.json"
KEYS = ("edits", "one_value", "references_changed", "done", "left", "wrong")


def values(program: str) -> dict[str, object]:
    """A program's top-level parameters and their values."""
    return {name: p.value for name, p in find_parameters(parse(program)).items()}


def main() -> None:
    """Run the benchmark, print a table and write bench/results/edit_binding.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="a corpus JSONL file with edit tasks")
    parser.add_argument("--split", default="test", choices=["train", "val", "test", "all"])
    args = parser.parse_args()

    counts: dict[str, Counter] = {}
    for line in Path(args.tasks).read_text().splitlines():
        task = json.loads(line)
        if not task.get("edit") or args.split not in ("all", task.get("split")):
            continue
        before, after = task["previous_program"], task["reference"]
        instruction = task["instruction"]
        count = counts.setdefault(task["family"], Counter())
        count["edits"] += 1
        count["one_value"] += sets_one_value(instruction)

        edit = (task["domain"], task["prompt"], before, None, instruction)
        count["references_changed"] += bind_candidates([after], *edit)[0] != after
        result = bind_candidates([before], *edit)[0]
        count["done"] += result == after
        count["left"] += result == before
        was, wanted, now = values(before), values(after), values(result)
        count["wrong"] += any(now[k] not in (was.get(k), wanted.get(k)) for k in now)

    overall: Counter = Counter()
    for count in counts.values():
        overall.update(count)
    widths = (6, 10, 13, 6, 6, 6)
    print(
        f"{'family':<20} " + " ".join(f"{k[:13]:>{w}}" for k, w in zip(KEYS, widths, strict=True))
    )
    for family in sorted(counts):
        c = counts[family]
        print(
            f"{family:<20} " + " ".join(f"{c[k]:>{w}}" for k, w in zip(KEYS, widths, strict=True))
        )
    print(
        f"overall: {overall['edits']} edits, {overall['one_value']} set one value outright; "
        f"{overall['references_changed']} references changed; binding alone does "
        f"{overall['done']} ({100 * overall['done'] / max(overall['edits'], 1):.1f} %), leaves "
        f"{overall['left']}, writes a wrong value in {overall['wrong']}"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "meta": {"tasks": args.tasks, "split": args.split},
        "overall": {k: overall[k] for k in KEYS},
        "families": [{"family": f, **{k: counts[f][k] for k in KEYS}} for f in sorted(counts)],
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
