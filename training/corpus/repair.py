"""Repair tasks: a broken program and the validator's real error in, the working program out.

A repair row is made from a CAD or scene task row: its program is broken in one of the ways
models fail (breakages.py), the broken program is run through the real validator (the sandbox
pool, validate_cad, checked against what the request's words ask, as serving checks a
candidate) and its Report's error becomes the row's `error` ({kind, message, line}). A breakage
that happens not to fail is discarded (and counted), and the next kind is tried, up to TRIES.
The original program is validated too (with its spec): a row whose own reference fails gives
no repair. The target (`reference`) is the original program.

Row: the source row's id + `-repair-<kind>`, domain, family, split (the source's: no leak
across splits), prompt, spec, `reference`, `failed_program`, `error`, `breakage` (the kind) and
`repair: true`; params gain `repair.kind`. SFT and serving show them with
genservice.generation.prompts.build_repair_messages.

Validation is deterministic (a timeout under load aside), so the same seed gives the same rows.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from training.corpus.breakages import candidates

TRIES = 3  # kinds of breakage tried per row before giving up on it
CHUNK = 32  # rows validated together


@dataclass
class RepairStats:
    """What the repair pass did: rows written per kind, breakages discarded, sources skipped."""

    written: Counter[str] = field(default_factory=Counter)
    discarded: Counter[str] = field(default_factory=Counter)  # the broken program did not fail
    invalid_sources: int = 0  # the source row's own reference failed


def _options() -> Any:
    from validators.cad.validate import CadOptions

    # As the task audit judges: no printability or physics (advisory for parts anyway).
    return CadOptions(printability=False, physics=False)


def judge_broken(row: dict[str, Any], program: str, pool: Any, limits: Any = None) -> Any:
    """The Report of a broken program, checked against what the row's request asks."""
    from genservice.generation.asked import task_items
    from validators.cad.validate import validate_cad

    return validate_cad(
        program,
        pool,
        limits=limits,
        options=_options(),
        domain=row["domain"],
        request=task_items(row),
    )


def judge_reference(row: dict[str, Any], pool: Any, limits: Any = None) -> Any:
    """The Report of a row's own reference, with its spec and its request's words."""
    from genservice.generation.asked import task_items
    from validators.cad.validate import validate_cad

    return validate_cad(
        row["reference"],
        pool,
        spec=row.get("spec"),
        limits=limits,
        options=_options(),
        domain=row["domain"],
        request=task_items(row),
    )


def repairable(row: dict[str, Any]) -> bool:
    """True for a CAD or scene task row with an inline program (not an edit or a repair)."""
    return (
        row.get("domain") in ("cad", "scene")
        and isinstance(row.get("reference"), str)
        and "\n" in row["reference"]
        and not row.get("edit")
        and not row.get("repair")
    )


def repair_row(row: dict[str, Any], kind: str, broken: str, error: Any) -> dict[str, Any]:
    """The repair task of a row, from a broken program and its Report's error."""
    task: dict[str, Any] = {
        "id": f"{row['id']}-repair-{kind}",
        "domain": row["domain"],
        "family": row["family"],
        "split": row["split"],
        "prompt": row["prompt"],
        "reference": row["reference"],
        "params": {**row.get("params", {}), "repair.kind": kind},
        "failed_program": broken,
        "error": {"kind": error.kind, "message": error.message, "line": error.line},
        "breakage": kind,
        "repair": True,
    }
    if "spec" in row:
        task["spec"] = row["spec"]
    return task


def with_repairs(
    rows: Iterable[dict[str, Any]],
    seed: int | str,
    share: float,
    pool: Any,
    stats: RepairStats | None = None,
    limits: Any = None,
    workers: int = 2,
) -> Iterator[dict[str, Any]]:
    """The rows, each CAD/scene row followed by a repair task of it with probability `share`
    (when one of TRIES breakages really fails); `stats` counts what was written and discarded."""
    if not 0 <= share <= 1:
        raise ValueError(f"the share of repair tasks must be in [0, 1], got {share}")
    stats = stats if stats is not None else RepairStats()
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK:
            yield from _repair_chunk(chunk, seed, share, pool, stats, limits, workers)
            chunk = []
    if chunk:
        yield from _repair_chunk(chunk, seed, share, pool, stats, limits, workers)


def _repair_chunk(
    chunk: list[dict[str, Any]],
    seed: int | str,
    share: float,
    pool: Any,
    stats: RepairStats,
    limits: Any,
    workers: int,
) -> Iterator[dict[str, Any]]:
    """The chunk's rows, each followed by its repair row when it gets one."""
    plans: dict[int, list[tuple[str, str]]] = {}
    for i, row in enumerate(chunk):
        rng = random.Random(f"{seed}:repair:{row['id']}")
        if share and repairable(row) and rng.random() < share:
            plans[i] = candidates(row, rng, TRIES)
    made: dict[int, dict[str, Any]] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        sound = dict(
            zip(
                plans,
                threads.map(lambda i: judge_reference(chunk[i], pool, limits).valid, plans),
                strict=True,
            )
        )
        stats.invalid_sources += sum(not ok for ok in sound.values())
        waiting = [i for i in plans if sound[i] and plans[i]]
        for attempt in range(TRIES):
            tried = [i for i in waiting if attempt < len(plans[i])]
            if not tried:
                break

            def judge(i: int, attempt: int = attempt) -> Any:
                return judge_broken(chunk[i], plans[i][attempt][1], pool, limits)

            for i, report in zip(tried, threads.map(judge, tried), strict=True):
                kind, broken = plans[i][attempt]
                if report.valid or report.error is None:
                    stats.discarded[kind] += 1
                    continue
                made[i] = repair_row(chunk[i], kind, broken, report.error)
                stats.written[kind] += 1
            waiting = [i for i in tried if i not in made]
    for i, row in enumerate(chunk):
        yield row
        if i in made:
            yield made[i]


def verified(
    rows: Iterable[dict[str, Any]],
    pool: Any,
    keep: Callable[[dict[str, Any]], bool],
    dropped: Counter[str],
    limits: Any = None,
    workers: int = 2,
) -> Iterator[dict[str, Any]]:
    """The rows, less those `keep` selects for checking whose reference fails its own spec and
    request in the sandbox (counted per family in `dropped`)."""
    chunk: list[dict[str, Any]] = []

    def flush() -> Iterator[dict[str, Any]]:
        checked = [i for i, row in enumerate(chunk) if keep(row)]
        with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
            reports = threads.map(lambda i: judge_reference(chunk[i], pool, limits), checked)
            failing = {i for i, report in zip(checked, reports, strict=True) if not report.valid}
        for i, row in enumerate(chunk):
            if i in failing:
                dropped[row["family"]] += 1
            else:
                yield row

    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK:
            yield from flush()
            chunk = []
    if chunk:
        yield from flush()
