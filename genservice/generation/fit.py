"""Fitting a part to its picture: draw it, compare it, adjust its parameters, keep what helps.

A small model reading a picture usually gets the kind of part right (a flange comes back as a
flange) and its proportions only roughly: the bore too small, the plate too thick. The program
is parametric, so the fix is the one a person makes in the editor while looking at the photo:
change a parameter, look again. Fitting does that on the sandbox pool (analysis by synthesis):

- each round tries every fittable parameter one at a time, scaled up and down by that round's
  steps (floats) or one more and one fewer (counts), from the best program so far;
- every trial runs in the sandbox and gets the same checks as any candidate, plus
  `image_match` against the request's picture (image_match.py: silhouettes and outlines, so
  the size in millimetres and the camera's distance do not matter, only the shape);
- the best trial that stays valid (but perhaps for the picture) and matches the picture better
  is kept; so is every improving change at once, when together they do better still; the steps
  narrow round by round. A part that ends up matching well enough passes `image_match` and is
  VALID; one that does not stays NOT AS ASKED, with its closest shape.

Numbers the request's words state are never changed ("make this, 80 mm across" keeps its 80),
and a trial that breaks the `request` check or any other is never kept, so a fitted part is
valid whenever the one it started from was. Only the picture ever guides the fit: no reference
shape exists at serving time. A deadline bounds the whole fit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from genservice.generation.rerank import match_score, rerank, valid_but_the_picture
from genservice.generation.stated import asked_numbers
from validators.cad.program import ProgramError, apply_parameters, find_parameters, parse

DEFAULT_FIT = 3  # rounds served by default for a request with a picture
MAX_FIT = 6  # rounds a request may ask for
ROUND_STEPS = ((0.5, 0.7, 1.4, 2.0), (0.8, 0.9, 1.12, 1.25), (0.93, 0.97, 1.03, 1.07))
MAX_PARAMETERS = 10  # parameters tried per round (the first ones in the program)
GAIN = 0.005  # the least rise in image_match score that counts as better
DEADLINE_S = 60.0  # the whole fit stops starting rounds after this long


@dataclass(frozen=True)
class Trial:
    """A program as the fit sees it: whether every check passes (the picture's excepted: that
    is what the fit improves), how well it matches the picture, and the caller's own record of
    its validation (a Scored, a CandidateScore)."""

    program: str
    valid: bool
    match: float
    record: Any = None


@dataclass
class Fit:
    """What fitting did: the program it ended with, the scores before and after, what changed."""

    program: str
    scored: Trial | None  # the fitted program's validation (None when nothing improved)
    score_before: float
    score_after: float
    changed: dict[str, list[Any]] = field(default_factory=dict)  # name: [before, after]
    rounds: int = 0
    trials: int = 0
    seconds: float = 0.0

    @property
    def improved(self) -> bool:
        """Whether the fit found a program that matches the picture better."""
        return self.scored is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (without the program and Report, which the fitted candidate carries)."""
        return {
            "improved": self.improved,
            "score_before": round(self.score_before, 4),
            "score_after": round(self.score_after, 4),
            "changed": self.changed,
            "rounds": self.rounds,
            "trials": self.trials,
            "seconds": round(self.seconds, 3),
        }


def fittable(
    program: str, request_text: str, keep: set[str] | frozenset[str] = frozenset()
) -> dict[str, int | float]:
    """The numeric parameters a fit may change: not those holding a number the words state,
    not those in `keep` (set by the user), not zero (a zero is a switch, not a size), not
    booleans; the first MAX_PARAMETERS."""
    try:
        parameters = find_parameters(parse(program))
    except ProgramError:
        return {}
    stated = asked_numbers(request_text)
    found: dict[str, int | float] = {}
    for name, parameter in parameters.items():
        value = parameter.value
        if parameter.type not in ("int", "float") or isinstance(value, bool) or name in keep:
            continue
        assert isinstance(value, (int, float))
        if value == 0 or not math.isfinite(value) or float(value) in stated:
            continue
        found[name] = value
        if len(found) == MAX_PARAMETERS:
            break
    return found


def trial_values(value: int | float, steps: tuple[float, ...]) -> list[int | float]:
    """The values a round tries for one parameter: a count one up and one down (never below
    one), a measure scaled by each step (kept to four significant figures, as a person would
    type it)."""
    if isinstance(value, int):
        return [v for v in (value - 1, value + 1) if v >= 1 and v != value]
    tried = [float(f"{value * step:.4g}") for step in steps]
    return [v for v in dict.fromkeys(tried) if v != value]


def fit_to_picture(
    start: Trial,
    request_text: str,
    validate: Callable[[list[str]], list[Trial]],
    rounds: int = DEFAULT_FIT,
    deadline_s: float = DEADLINE_S,
    progress: Callable[[int, int], None] | None = None,
    keep: set[str] | frozenset[str] = frozenset(),
) -> Fit:
    """Fit a valid candidate's parameters to the picture (see the module docstring).

    `validate` runs programs with every check and `image_match` against the request's picture
    and returns their Trials in any order.
    """
    began = time.perf_counter()
    before = start.match
    fit = Fit(start.program, None, before, before)
    if not start.valid:
        return fit
    current, current_score = start, before
    initial = fittable(start.program, request_text, keep)
    values = dict(initial)
    for round_ in range(rounds):
        if not values or time.perf_counter() - began > deadline_s:
            break
        steps = ROUND_STEPS[min(round_, len(ROUND_STEPS) - 1)]
        trials: dict[str, tuple[str, int | float]] = {}
        for name, value in values.items():
            for tried in trial_values(value, steps):
                try:
                    program = apply_parameters(current.program, {name: tried})
                except ProgramError:
                    continue
                trials.setdefault(program, (name, tried))
        scored = validate(list(trials))
        fit.trials += len(scored)
        fit.rounds = round_ + 1
        if progress is not None:
            progress(round_ + 1, rounds)
        better = {s.program: s for s in scored if s.valid and s.match > current_score + GAIN}
        if not better:
            continue
        # The best change of each parameter, and all of them at once.
        best_per_name: dict[str, tuple[float, int | float]] = {}
        for program, s in better.items():
            name, tried = trials[program]
            if s.match > best_per_name.get(name, (-1.0, 0))[0]:
                best_per_name[name] = (s.match, tried)
        winner = max(better.values(), key=lambda s: s.match)
        changes = dict([trials[winner.program]])
        if len(best_per_name) > 1:
            together = {name: tried for name, (_, tried) in best_per_name.items()}
            try:
                combined = validate([apply_parameters(current.program, together)])
            except ProgramError:
                combined = []
            fit.trials += len(combined)
            for s in combined:
                if s.valid and s.match > winner.match:
                    winner, changes = s, together
        current, current_score = winner, winner.match
        values.update(changes)
    if current is not start:
        fit.program, fit.scored, fit.score_after = current.program, current, current_score
        fit.changed = {
            name: [initial[name], value] for name, value in values.items() if value != initial[name]
        }
    fit.seconds = time.perf_counter() - began
    return fit


def picture_validator(
    domain: str, pool: Any, picture: Any, **checks: Any
) -> Callable[[list[str]], list[Trial]]:
    """A `validate` for fit_to_picture: `rerank` on the pool with the request's picture and the
    request's checks (spec, asked, request items, limits, parameters); each Trial's record is
    its Scored."""

    def validate(programs: list[str]) -> list[Trial]:
        if not programs:
            return []
        ranked = rerank(programs, domain, pool, picture=picture, **checks)
        return [
            Trial(s.program, valid_but_the_picture(s.report), match_score(s.report), s)
            for s in ranked
        ]

    return validate


def fit_candidate(
    domain: str,
    pool: Any,
    picture: Any,
    program: str,
    report: Any,
    request_text: str,
    rounds: int,
    keep: set[str] | frozenset[str] = frozenset(),
    progress: Callable[[int, int], None] | None = None,
    **checks: Any,
) -> Fit:
    """Fit a validated candidate (its program and Report) to the request's picture on the pool,
    judged by `rerank` with the request's checks; the fitted Trial's record is its Scored."""
    return fit_to_picture(
        Trial(program, valid_but_the_picture(report), match_score(report)),
        request_text,
        picture_validator(domain, pool, picture, **checks),
        rounds=rounds,
        progress=progress,
        keep=keep,
    )
