"""Best-of-N: validate every candidate on the sandbox pool and rank them by the validators' reward.

Only the validators choose: no reference shape is ever given (that would be an oracle, not a
service). Candidates run in parallel, one thread per pool worker (the pool hands each run to a
free worker); identical candidates are validated once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from validators.cad.program import ProgramError, find_parameters, parse
from validators.report import Report

DOMAINS = ("cad", "scene", "code")


@dataclass(frozen=True)
class Scored:
    """A candidate program with its Report; `index` is its position among the candidates."""

    program: str
    report: Report
    reward: float
    index: int

    @property
    def valid(self) -> bool:
        """Whether the validators accepted the program."""
        return self.report.valid


def rerank(
    candidates: Sequence[str],
    domain: str,
    pool: Any,
    spec: dict[str, Any] | None = None,
    tests: str | None = None,
    entry_point: str | None = None,
    parameters: dict[str, Any] | None = None,
    limits: Any | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    edit: tuple[str, str] | None = None,
) -> list[Scored]:
    """Validate all candidates in parallel; best first: valid ones, then by reward, then order.

    Validity leads because a sound part that misses the spec is invalid yet keeps a geometric
    reward, which can exceed a valid candidate's; the best must be valid whenever one is.
    For an edit, `edit` = (previous program, instruction): among equally rewarded candidates,
    those that make the asked change come first (see `edit_adherence`).
    """
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, not {domain!r}")
    if domain == "code" and (tests is None or not entry_point):
        raise ValueError("code candidates need tests and an entry_point to be validated")
    if domain != "code" and (tests is not None or entry_point):
        raise ValueError("tests and entry_point apply to the code domain only")

    def validate(program: str) -> Report:
        if domain == "code":
            from validators.code.validate import validate_code

            return validate_code(
                program, pool, tests=str(tests), entry_point=str(entry_point), limits=limits
            )
        from validators.cad.validate import validate_cad

        return validate_cad(
            program, pool, spec=spec, parameters=parameters, limits=limits, domain=domain
        )

    unique = list(dict.fromkeys(candidates))
    reports: dict[str, Report] = {}
    if unique:
        threads = max(1, min(len(unique), workers or getattr(pool, "size", 1) or 1))
        with ThreadPoolExecutor(max_workers=threads) as executor:
            futures = {executor.submit(validate, program): program for program in unique}
            for done, future in enumerate(as_completed(futures), start=1):
                reports[futures[future]] = future.result()
                if progress is not None:
                    progress(done, len(unique))
    scored = [
        Scored(program, reports[program], reports[program].reward, index)
        for index, program in enumerate(candidates)
    ]
    adherence = {c: edit_adherence(c, *edit) for c in unique} if edit is not None else {}
    return sorted(
        scored, key=lambda s: (not s.valid, -s.reward, -adherence.get(s.program, 0), s.index)
    )


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


def edit_adherence(program: str, previous: str, instruction: str) -> int:
    """How well a candidate makes the asked change, judged from the texts alone.

    Each number in the instruction that the candidate's parameters take and the previous
    program's did not counts one; an unchanged program counts -1. A blind signal (no reference):
    "make it 12 mm thick" prefers the candidate with a parameter of 12.
    """
    if program.strip() == previous.strip():
        return -1
    try:
        new = _numbers(program)
        old = _numbers(previous)
    except ProgramError:
        return 0
    asked = {float(n) for n in _NUMBER.findall(instruction)}
    return sum(1 for number in asked if number in new and number not in old)


def _numbers(source: str) -> set[float]:
    """The numeric values of a program's top-level parameters."""
    return {
        float(p.value)
        for p in find_parameters(parse(source)).values()
        if isinstance(p.value, int | float) and not isinstance(p.value, bool)
    }
