"""Benchmark: the `request` check on corpus references — false alarms, coverage, true alarms.

A reference program is exactly what its request asks, so the request check must pass on every
reference whose geometry is sound: a failure is a false alarm (there must be none). Coverage is
how many requests ask anything at all (asking nothing is safe but useless), and how much. Then
the true-alarm side: one parameter of a covered reference that holds an asked number is spoilt
(a size × 0.1 and × 2.5, a count halved), and the spoilt program is validated against the same
request; a caught spoil fails the check. A spoil whose geometry is no longer sound (a bore wider
than its flange) says nothing and is left out. An `at_least` item cannot catch a grown size.
Last, the wrong thing: the request is answered by the reference of the next task of another
family in the draw ("a part 40 mm tall" answered by a ring), which the check should catch.

The draw is seeded over every CAD and scene family (the held-out ones too) and the compositional
programs (`--compositional`, their share of the draw), every split, with a
share of edit rows (judged on their instruction's absolute sizes only), of requests that leave
sizes unstated, and of train parameter sets worded twice. Every program is run and
measured by the real sandbox pool, with the geometry checks only (printability and physics do
not bear on the request).

Usage: .venv/bin/python -m bench.request [--n 2100 | --per-family 100] [--seed 11]
       [--edits 0.25] [--unstated 0.2] [--phrasings 2] [--compositional 0.3] [--workers 2]
       [--no-spoil]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from genservice.generation.asked import task_items
from training.corpus.build import build_corpus
from training.corpus.edits import with_edits
from training.corpus.families import families_for
from validators.cad.program import ProgramError, apply_parameters, find_parameters, parse
from validators.cad.request import missed_only_the_request
from validators.cad.validate import CadOptions, validate_cad
from validators.report import Report
from validators.sandbox import Limits, SandboxPool

RESULTS = Path(__file__).parent / "results" / "request.json"
GEOMETRY = CadOptions(printability=False, physics=False)
SPOILS = {"shrink": 0.1, "grow": 2.5}  # a size times this; a count is halved (shrink only)
ANSWERS = (*SPOILS, "other part")  # ... and another family's reference as the answer
# Parameter name stems that name what an item measures: the parameter to spoil for it.
NAMES = {
    "height": ("heig", "tall", "h"),
    "length": ("leng", "long", "l"),
    "width": ("widt", "wide", "w"),
    "depth": ("dept", "deep"),
    "thickness": ("thic", "thk", "t"),
    "diameter": ("oute", "od", "diam", "d", "size"),
    "across": ("acro", "af", "flat", "size"),
    "box": ("leng", "widt", "heig", "thic", "dept", "size"),
    "holes": ("coun", "hole", "bolt"),
    "objects": ("coun", "bloc", "leve", "laye", "item", "shel", "divi", "tier"),
    "through_holes": ("coun", "hole", "bolt"),
    "bored": ("bore", "inne", "id"),
}


@dataclass
class Tally:
    """What one family (or all) gave."""

    tasks: int = 0
    sound: int = 0  # references with sound geometry (the ones the check is measured on)
    asked: int = 0  # of those, requests that ask at least one item
    items: int = 0
    false_alarms: list[dict[str, Any]] = field(default_factory=list)
    spoilt: Counter[str] = field(default_factory=Counter)  # spoil -> sound spoilt programs
    caught: Counter[str] = field(default_factory=Counter)
    missed: list[dict[str, Any]] = field(default_factory=list)  # spoils the check let through


def spoil(reference: str, item: dict[str, Any], how: str) -> str | None:
    """The reference with the parameter that holds the item's asked number spoilt, or None."""
    try:
        parameters = find_parameters(parse(reference))
    except ProgramError:
        return None
    wanted = item.get("values_mm") or [item.get("value_mm", item.get("count"))]
    if any(w is None for w in wanted):
        return None  # a shape ("round", "hollow") holds no number to spoil
    kinds = ("int",) if item["what"] in ("holes", "objects", "through_holes") else ("int", "float")
    holders = [
        (name, p)
        for name, p in parameters.items()
        if p.type in kinds and any(float(p.value) == float(w) for w in wanted)
    ]
    if not holders:
        return None
    stems = NAMES[item["what"]]
    named = [h for h in holders if any(part[:4].startswith(stems) for part in h[0].split("_"))]
    name, parameter = (named or holders)[0]
    if parameter.type == "int":
        if how != "shrink" or int(parameter.value) < 2:
            return None
        value: int | float = int(parameter.value) // 2
    else:
        value = round(float(parameter.value) * SPOILS[how], 3)
    try:
        return apply_parameters(reference, {name: value})
    except ProgramError:
        return None


def sound(report: Report) -> bool:
    """Whether a Report's geometry is sound (valid, or invalid only for the request)."""
    return report.valid or missed_only_the_request(report)


def main() -> None:
    """Run the benchmark, print its tables and write bench/results/request.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2100, help="tasks drawn (before edit rows)")
    parser.add_argument("--per-family", type=int, help="tasks per family (instead of --n)")
    parser.add_argument("--seed", default="11")
    parser.add_argument("--edits", type=float, default=0.25, help="share of edit rows added")
    parser.add_argument(
        "--unstated", type=float, default=0.2, help="share of draws leaving sizes out"
    )
    parser.add_argument(
        "--phrasings", type=int, default=2, help="wordings of a train parameter set"
    )
    parser.add_argument(
        "--compositional", type=float, default=0.3, help="share drawn from compositional programs"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-spoil", action="store_true", help="false alarms and coverage only")
    args = parser.parse_args()

    families = families_for(["cad", "scene"])
    n = args.per_family * len(families) if args.per_family else args.n
    drawn = build_corpus(
        n,
        args.seed,
        families=families,
        unstated=args.unstated,
        phrasings=args.phrasings,
        compositional=args.compositional,
    )
    tasks = list(with_edits(drawn, args.seed, args.edits))
    console = Console(width=max(110, Console().width))
    tallies: dict[str, Tally] = {}
    derive_s: list[float] = []
    validate_s: list[float] = []
    started = time.perf_counter()

    def other(index: int) -> dict[str, Any]:
        """The next task of another family: its reference is a wrong answer to this request."""
        for step in range(1, len(tasks)):
            found = tasks[(index + step) % len(tasks)]
            if found["family"] != tasks[index]["family"]:
                return found
        return tasks[index]

    def judge(index: int) -> tuple[dict[str, Any], list | None, Report, list]:
        task = tasks[index]
        began = time.perf_counter()
        items = task_items(task)
        derive_s.append(time.perf_counter() - began)
        began = time.perf_counter()
        report = validate_cad(
            task["reference"], pool, request=items, options=GEOMETRY, domain=task["domain"]
        )
        validate_s.append(time.perf_counter() - began)
        spoilt = []
        if items and sound(report) and not args.no_spoil:
            for how in SPOILS:
                for item in items:
                    program = spoil(task["reference"], item, how)
                    if program is not None:
                        spoilt.append((how, validate_cad(
                            program, pool, request=items, options=GEOMETRY, domain=task["domain"]
                        )))  # fmt: skip
                        break  # one spoil of each kind per task
            wrong = other(index)
            if wrong["domain"] == task["domain"]:
                spoilt.append(("other part", validate_cad(
                    wrong["reference"], pool, request=items, options=GEOMETRY, domain=task["domain"]
                )))  # fmt: skip
        return task, items, report, spoilt

    limits = Limits(wall_s=20.0, memory_mb=1024)
    progress = Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console,
    )  # fmt: skip
    with SandboxPool(size=args.workers, limits=limits) as pool, progress:
        bar = progress.add_task("references (and spoils)", total=len(tasks))
        with ThreadPoolExecutor(max_workers=args.workers) as threads:
            for task, items, report, spoilt in threads.map(judge, range(len(tasks))):
                progress.advance(bar)
                family = task["family"] + (" (edit)" if task.get("edit") else "")
                tally = tallies.setdefault(family, Tally())
                tally.tasks += 1
                if not sound(report):
                    continue
                tally.sound += 1
                tally.asked += bool(items)
                tally.items += len(items or [])
                check = report.checks.get("request")
                if check is not None and not check.passed:
                    tally.false_alarms.append(
                        {"id": task["id"], "request": task.get("instruction") or task["prompt"],
                         "missed": check.detail["summary"]}
                    )  # fmt: skip
                for how, spoilt_report in spoilt:
                    if sound(spoilt_report):
                        tally.spoilt[how] += 1
                        caught = not spoilt_report.checks["request"].passed
                        tally.caught[how] += caught
                        if not caught:
                            extents = spoilt_report.metrics.get("bbox_mm")
                            tally.missed.append({"id": task["id"], "spoil": how, "items": items,
                                                 "extents_mm": extents})  # fmt: skip
    elapsed = time.perf_counter() - started

    overall = Tally()
    for tally in tallies.values():
        overall.tasks += tally.tasks
        overall.sound += tally.sound
        overall.asked += tally.asked
        overall.items += tally.items
        overall.false_alarms += tally.false_alarms
        overall.spoilt.update(tally.spoilt)
        overall.caught.update(tally.caught)
        overall.missed += tally.missed
    table = Table(title=f"request check on {len(tasks)} corpus references (seed {args.seed})")
    for column in ("family", "refs", "asking", "items", "false alarms", *ANSWERS):
        table.add_column(column, justify="left" if column == "family" else "right")
    rows = {**dict(sorted(tallies.items())), "overall": overall}
    for name, tally in rows.items():
        table.add_row(
            name, str(tally.sound), _share(tally.asked, tally.sound),
            f"{tally.items / tally.asked:.2f}" if tally.asked else "–",
            str(len(tally.false_alarms)),
            *(_share(tally.caught[how], tally.spoilt[how]) for how in ANSWERS),
        )  # fmt: skip
    console.print(table)
    for alarm in overall.false_alarms:
        request, missed = alarm["request"], alarm["missed"]
        console.print(f"[red]false alarm[/red] {alarm['id']}: {request!r}: {missed}")
    new = [t for name, t in tallies.items() if not name.endswith("(edit)")]
    asked_new = sum(t.asked for t in new) / max(1, sum(t.sound for t in new))
    summary: dict[str, Any] = {
        "tasks": len(tasks),
        "sound_references": overall.sound,
        "false_alarms": len(overall.false_alarms),
        "asked": overall.asked,
        "asked_share": overall.asked / overall.sound if overall.sound else None,
        "asked_share_new_requests": asked_new,
        "items": overall.items,
        "items_per_asked_task": overall.items / overall.asked if overall.asked else None,
        "spoilt": dict(overall.spoilt),
        "caught": dict(overall.caught),
        "derive_us_per_request": round(1e6 * statistics.fmean(derive_s), 1),
        "validate_ms_per_reference": round(1e3 * statistics.fmean(validate_s), 1),
        "wall_s": round(elapsed, 1),
    }
    console.print(
        f"{summary['false_alarms']} false alarms on {overall.sound} sound references; "
        f"{overall.asked} ask something ({100 * (summary['asked_share'] or 0):.1f} %; new "
        f"requests {100 * asked_new:.1f} %), "
        f"{summary['items_per_asked_task'] or 0:.2f} items each; caught: "
        + ", ".join(f"{how} {_share(overall.caught[how], overall.spoilt[how])}" for how in ANSWERS)
        + f"; deriving {summary['derive_us_per_request']} µs a request, validating "
        f"{summary['validate_ms_per_reference']} ms a reference; {summary['wall_s']} s in all"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {"n": n, "seed": args.seed, "edits": args.edits, "unstated": args.unstated,
            "phrasings": args.phrasings, "workers": args.workers}  # fmt: skip
    families_out = {
        name: {"sound": t.sound, "asked": t.asked, "items": t.items,
               "false_alarms": t.false_alarms, "spoilt": dict(t.spoilt), "caught": dict(t.caught),
               "missed": t.missed}
        for name, t in sorted(tallies.items())
    }  # fmt: skip
    RESULTS.write_text(
        json.dumps({"meta": meta, "overall": summary, "families": families_out}, indent=1)
    )


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "–"


if __name__ == "__main__":
    main()
