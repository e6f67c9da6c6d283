"""Fitting a part to its request: the sizes its words state, then its picture.

**Sizes.** A small model often writes the right kind of part at the wrong size: 9 for "90 mm
tall", the knob's usual 40 for "25 wide". The `request` check measures what is off ("height 9
mm, asked 90 mm"), and the program is parametric, so a person would set the parameter that
makes that extent. `fit_to_sizes` does it, on a sound candidate that misses nothing but sizes
its words state (`validators.cad.request.sizes_off`): each round tries, for each factor that
would bring an off size to what was asked, every fittable measure scaled by it alone, and all
of them at once (a part read from a picture keeps its proportions: the words give its scale).
Those single-measure trials also show how far each measure moves each extent, so the round
then solves for all measures together (`solved_changes`: least squares in log scale, the
proportions kept where the sizes leave them free) and tries that too: a height that is the
sum of three steps, or a width that two radii make, is met in one move. The trial that meets
more of the request, stays sound and (with a picture) still looks like it, or meets every
stated size, wins, and the next round starts from it. Counts and shapes are never fitted.

**The picture.**

A small model reading a picture usually gets the kind of part right (a flange comes back as a
flange) and its proportions only roughly: the bore too small, the plate too thick. The program
is parametric, so the fix is the one a person makes in the editor while looking at the photo:
change a parameter, look again. Fitting does that on the sandbox pool (analysis by synthesis):

- each round tries every fittable parameter one at a time, scaled up and down by that round's
  steps (floats) or one more and one fewer (counts), from the best program so far;
- every trial runs in the sandbox and gets the same checks as any candidate, plus
  `image_match` against the request's picture (image_match.py: silhouettes and outlines, so
  the size in millimetres and the camera's distance do not matter, only the shape), seen from
  near the camera the best part so far was seen from (HOLD_CAMERA): one photograph is taken
  from one place, and a part one step from the best is seen from about the same place, so a
  short search there replaces a search from anywhere (a fit takes under half the time, and
  ends as close to the pictured part: docs/pictures.md, "A camera held by the fit"). The
  fitted part is then judged as any candidate is, from wherever it looks most like the picture;
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from genservice.generation.binding import kept_where_stated
from genservice.generation.image_match import PASS as PICTURE_PASS
from genservice.generation.rerank import match_pose, match_score, rerank, valid_but_the_picture
from validators.cad.program import ProgramError, apply_parameters, find_parameters, parse
from validators.cad.request import missed_only_the_request, size_targets, sizes_off

DEFAULT_FIT = 3  # rounds served by default for a request with a picture
MAX_FIT = 6  # rounds a request may ask for
ROUND_STEPS = ((0.5, 0.7, 1.4, 2.0), (0.8, 0.9, 1.12, 1.25), (0.93, 0.97, 1.03, 1.07))
MAX_PARAMETERS = 10  # parameters tried per round (the first ones in the program)
GAIN = 0.005  # the least rise in image_match score that counts as better
# The rise in image_match a change must buy per unit of |log| of how far it moves a parameter
# (×1.4: 0.34), beyond GAIN: one picture leaves depth free, so a fit that climbs its own score
# drifts from the start's shape on gains within the check's noise. Off: at 0.029 it stopped as
# many right small steps as drifts (docs/pictures.md, "Which fit is served").
MOVE_COST = 0.0
HOLD_CAMERA = True  # trials are seen from near the best part's camera (image_match.seen_from)
DEADLINE_S = 60.0  # the whole fit stops starting rounds after this long
# A picture request fits this many of its best candidates of different designs, not the best
# alone: before the fit a look-alike of the wrong proportions often outscores the right kind of
# part, and only after fitting do their scores say which is which; two gallery parts of one
# design differ only in numbers the fit moves anyway (docs/pictures.md, "Kinds of part and
# several fits").
FIT_STARTS = 3
MAX_FIT_STARTS = 16  # the most an evaluation may ask for


PICTURE_SLACK = 0.02  # how much image_match a size fit may give up (a scaled part's outline)
KEEP_SHAPE = 1e-3  # a solved size fit keeps the proportions (the picture) that the sizes leave free
DAMPING = 1e-9  # only keeps the solve well posed (the proportions decide what sizes do not)
MAX_SOLVED_STEP = math.log(3.0)  # the most a solved size fit scales one parameter by in a round


@dataclass(frozen=True)
class Trial:
    """A program as the fit sees it: whether every check passes (what the fit improves
    excepted: the picture, or the stated sizes), how well it matches the picture (or its
    words: the `request` check's score), and the caller's own record of its validation (a
    Scored, a CandidateScore); for a size fit also the factors that would bring each off size
    to what was asked, and its image_match score (None without a picture)."""

    program: str
    valid: bool
    match: float
    record: Any = None
    sizes: tuple[float, ...] = ()
    picture: float | None = None
    extents: tuple[float, ...] = ()  # the part's x, y, z extents in mm (a size fit's trials)
    targets: Mapping[int, float] = field(default_factory=dict)  # axis: the size asked along it
    pose: Any = None  # the camera(s) it matched the picture(s) from (rerank.match_pose)


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
    sizes: dict[str, Any] | None = None  # what fitting the stated sizes did (its to_dict)
    picture: bool = True  # whether it was fitted to a picture too (the scores are image_match)
    starts: int = 1  # candidates fitted (the picture: up to FIT_STARTS); this one won

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
            **({"sizes": self.sizes} if self.sizes is not None else {}),
            "picture": self.picture,
            "starts": self.starts,
        }


def default_fit(pictured: bool) -> int:
    """The rounds of fitting a request gets when it does not say: DEFAULT_FIT with a picture
    (its shape is the picture's, its scale the words'), none without (a text request's sizes
    are the model's to get right, and the verdict says when it does not)."""
    return DEFAULT_FIT if pictured else 0


def fit_starts(
    ranked: list[tuple[str, bool]],
    pictured: bool,
    k: int = FIT_STARTS,
    designs: Sequence[str | None] | None = None,
) -> list[int]:
    """The candidates a request fits, as indices into `ranked` ((program, valid but perhaps
    for the picture), best first): the best, and with a picture the next programs that are
    valid but perhaps for the picture and of a design not yet chosen (`designs`, parallel to
    `ranked`: a gallery part's GalleryEntry.design, None where unknown, as for a sample), up
    to k in all."""
    if not ranked or not pictured:
        return [0] if ranked else []
    design = list(designs) if designs is not None else [None] * len(ranked)
    chosen, seen = [0], {ranked[0][0]}
    seen_designs = {design[0]} - {None}
    for index, (program, fittable_) in enumerate(ranked[1:], start=1):
        if len(chosen) >= k:
            break
        if fittable_ and program not in seen and design[index] not in seen_designs:
            chosen.append(index)
            seen.add(program)
            if design[index] is not None:
                seen_designs.add(design[index])
    return chosen


def fit_to_sizes(
    start: Trial,
    request_text: str,
    validate: Callable[[list[str]], list[Trial]],
    rounds: int = DEFAULT_FIT,
    deadline_s: float = DEADLINE_S,
    progress: Callable[[int, int], None] | None = None,
    keep: set[str] | frozenset[str] = frozenset(),
) -> Fit:
    """Fit a sound candidate that misses only sizes its words state (see the module
    docstring); `validate` returns size-fit Trials (`match` the request check's score)."""
    began = time.perf_counter()
    fit = Fit(start.program, None, start.match, start.match)
    if not start.valid or not start.sizes:
        return fit
    initial = fittable(start.program, request_text, keep)
    values = {n: v for n, v in initial.items() if isinstance(v, float) and not is_angle(n)}
    # The words give the size, the picture the shape: a trial may look a little less like the
    # picture, or any amount less so long as it still passes image_match; one that meets every
    # size the words state may give up more (they are what the user said exactly; the fit to
    # the picture then wins back what it can without breaking them).
    floor = None if start.picture is None else min(start.picture - PICTURE_SLACK, PICTURE_PASS)
    targets = start.targets

    def looks_alike(trial: Trial) -> bool:
        return floor is None or (trial.picture or 0.0) >= floor

    current = start
    for round_ in range(rounds):
        if not current.sizes or not values or time.perf_counter() - began > deadline_s:
            break
        trials: dict[str, dict[str, int | float]] = {}
        for factor in current.sizes:
            scaled = {n: float(f"{v * factor:.4g}") for n, v in values.items()}
            for changes in ({n: scaled[n]} for n in scaled):
                _add_trial(trials, current.program, changes)
            _add_trial(trials, current.program, scaled)
        scored = validate(list(trials))
        solved = solved_changes(current, [(trials[t.program], t) for t in scored], values, targets)
        if solved:
            before = len(trials)
            _add_trial(trials, current.program, solved)
            if len(trials) > before:
                scored += validate(list(trials)[before:])
        fit.trials += len(scored)
        fit.rounds = round_ + 1
        if progress is not None:
            progress(round_ + 1, rounds)
        better = [
            s
            for s in scored
            if s.valid and s.match > current.match + GAIN and (looks_alike(s) or s.match >= 1.0)
        ]
        if not better:
            break
        # The trial that meets the most, still like the picture where one is, by the least
        # change (a factor that puts a size on another axis also "meets" a free size: "80 mm
        # long" as an 80 mm thickness, which no longer looks like the picture).
        current = max(
            better, key=lambda s: (s.match, looks_alike(s), -_change(trials[s.program], values))
        )
        values.update(trials[current.program])
    return _ended(fit, start, current, initial, values, began)


def solved_changes(
    current: Trial,
    probes: list[tuple[dict[str, int | float], Trial]],
    values: dict[str, float],
    targets: Mapping[int, float],
) -> dict[str, int | float] | None:
    """The parameter values that bring the part's extents to the sizes asked along each axis
    together, solved from this round's probes (each a single parameter scaled alone: how far
    it moved each extent is one column of the sizes' sensitivity), in log scale: the least
    squares change that meets the sizes, keeping the part's proportions where the sizes do not
    decide them (so the part still looks like its picture). A size that is the sum of several
    parameters (a flange's height: base, body and tip) is met by moving them together, which
    no single-parameter trial does. None when nothing can be solved."""
    import numpy as np

    axes = sorted(axis for axis in targets if 0 <= axis < len(current.extents))
    if not axes or any(current.extents[a] <= 0 for a in axes):
        return None
    start = np.log([current.extents[a] for a in axes])
    columns: list[Any] = []
    names: list[str] = []
    for changes, trial in probes:
        if len(changes) != 1 or not trial.valid or len(trial.extents) != len(current.extents):
            continue
        ((name, new),) = changes.items()
        if name in names or name not in values or not values[name] or not new:
            continue
        step = math.log(float(new) / float(values[name]))
        if abs(step) < 1e-6 or any(trial.extents[a] <= 0 for a in axes):
            continue
        columns.append((np.log([trial.extents[a] for a in axes]) - start) / step)
        names.append(name)
    if not names:
        return None
    n = len(names)
    sensitivity = np.stack(columns, axis=1)
    keep_shape = math.sqrt(KEEP_SHAPE) * (np.eye(n) - np.full((n, n), 1.0 / n))
    system = np.vstack([sensitivity, keep_shape, math.sqrt(DAMPING) * np.eye(n)])
    wanted = np.log([targets[a] for a in axes]) - start
    goal = np.concatenate([wanted, np.zeros(2 * n)])
    solution = np.clip(np.linalg.lstsq(system, goal, rcond=None)[0], -MAX_SOLVED_STEP,
                       MAX_SOLVED_STEP)  # fmt: skip
    solved: dict[str, int | float] = {
        name: float(f"{values[name] * math.exp(float(x)):.4g}")
        for name, x in zip(names, solution, strict=True)
        if abs(float(x)) > 1e-4
    }
    return solved or None


def _ended(
    fit: Fit, start: Trial, current: Trial, initial: dict, values: dict, began: float
) -> Fit:
    """The fit with where it ended: the program it came to (when not the start), what changed
    from `initial` to `values`, and how long it took."""
    if current is not start:
        fit.program, fit.scored, fit.score_after = current.program, current, current.match
        fit.changed = {
            name: [initial[name], value] for name, value in values.items() if value != initial[name]
        }
    fit.seconds = time.perf_counter() - began
    return fit


def _change(changes: dict[str, int | float], values: dict[str, int | float]) -> float:
    """How far a trial moves its parameters: the sum of their log scale factors."""
    return sum(abs(math.log(float(new) / float(values[n]))) for n, new in changes.items())


def _add_trial(trials: dict[str, dict[str, int | float]], program: str, changes: dict) -> None:
    try:
        trials.setdefault(apply_parameters(program, changes), changes)
    except ProgramError:
        pass


def is_angle(name: str) -> bool:
    """Whether a parameter is named for an angle (never a size to scale)."""
    return any(part in ("angle", "deg", "degrees", "tilt", "twist") for part in name.split("_"))


def fittable(
    program: str, request_text: str, keep: set[str] | frozenset[str] = frozenset()
) -> dict[str, int | float]:
    """The numeric parameters a fit may change: not those holding a number the words state
    where the words put it (binding.kept_where_stated: "6 bore" keeps `bore_d = 6`, not a
    `thickness = 6` beside it), not those in `keep` (set by the user), not zero (a zero is a
    switch, not a size), not booleans; the first MAX_PARAMETERS."""
    try:
        parameters = find_parameters(parse(program))
    except ProgramError:
        return {}
    stated = kept_where_stated(program, request_text)
    found: dict[str, int | float] = {}
    for name, parameter in parameters.items():
        value = parameter.value
        if parameter.type not in ("int", "float") or isinstance(value, bool) or name in keep:
            continue
        assert isinstance(value, (int, float))
        if value == 0 or not math.isfinite(value) or name in stated:
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


def move_cost(values: Mapping[str, int | float], name: str, tried: int | float) -> float:
    """The rise in image_match, beyond GAIN, that moving `name` from its value to `tried` must
    buy (MOVE_COST per unit of |log| of the ratio)."""
    value = values[name]
    if MOVE_COST <= 0 or value == 0 or tried == 0 or (value < 0) != (tried < 0):
        return 0.0
    return MOVE_COST * abs(math.log(tried / value))


def fit_to_picture(
    start: Trial,
    request_text: str,
    validate: Callable[..., list[Trial]],
    rounds: int = DEFAULT_FIT,
    deadline_s: float = DEADLINE_S,
    progress: Callable[[int, int], None] | None = None,
    keep: set[str] | frozenset[str] = frozenset(),
) -> Fit:
    """Fit a valid candidate's parameters to the picture (see the module docstring).

    `validate(programs, near)` runs programs with every check and `image_match` against the
    request's picture, seen from near the camera `near` (a Trial's pose; None: from anywhere),
    and returns their Trials in any order. Scores seen from a held camera are the fit's own:
    the caller scores the fitted part as any candidate is.
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
        # From the camera the best part so far was seen from, which its score already is.
        near = current.pose if HOLD_CAMERA else None
        scored = validate(list(trials), near)
        fit.trials += len(scored)
        fit.rounds = round_ + 1
        if progress is not None:
            progress(round_ + 1, rounds)
        better = {
            s.program: s
            for s in scored
            if s.valid and s.match > current_score + GAIN + move_cost(values, *trials[s.program])
        }
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
                combined = validate([apply_parameters(current.program, together)], near)
            except ProgramError:
                combined = []
            fit.trials += len(combined)
            for s in combined:
                if s.valid and s.match > winner.match:
                    winner, changes = s, together
        current, current_score = winner, winner.match
        values.update(changes)
    return _ended(fit, start, current, initial, values, began)


def picture_validator(
    domain: str, pool: Any, picture: Any, **checks: Any
) -> Callable[..., list[Trial]]:
    """A `validate` for fit_to_picture: `rerank` on the pool with the request's picture (seen
    from near the camera it is given) and the request's checks (spec, asked, request items,
    limits, parameters); each Trial's record is its Scored."""
    from genservice.generation.image_match import as_target

    target = as_target(picture)  # read once for the whole fit

    def validate(programs: list[str], near: Any = None) -> list[Trial]:
        if not programs:
            return []
        seen = target.seen_from(near)
        return [_picture_trial(s) for s in rerank(programs, domain, pool, picture=seen, **checks)]

    return validate


def sizes_validator(
    domain: str, pool: Any, picture: Any, **checks: Any
) -> Callable[[list[str]], list[Trial]]:
    """A `validate` for fit_to_sizes, as picture_validator (the picture may be None)."""
    return _validator(domain, pool, picture, lambda s: _sizes_trial(s.program, s.report, s), checks)


def _validator(
    domain: str, pool: Any, picture: Any, trial: Callable[[Any], Trial], checks: dict[str, Any]
) -> Callable[[list[str]], list[Trial]]:
    def validate(programs: list[str]) -> list[Trial]:
        if not programs:
            return []
        return [trial(s) for s in rerank(programs, domain, pool, picture=picture, **checks)]

    return validate


def _picture_trial(scored: Any) -> Trial:
    report = scored.report
    return Trial(scored.program, valid_but_the_picture(report), match_score(report), scored,
                 pose=match_pose(report))  # fmt: skip


def _sizes_trial(program: str, report: Any, record: Any = None) -> Trial:
    request = report.checks.get("request")
    picture = report.checks.get("image_match")
    return Trial(
        program,
        report.valid or missed_only_the_request(report),
        request.score if request is not None else 1.0,
        record,
        sizes=sizes_off(report),
        picture=picture.score if picture is not None else None,
        extents=tuple(float(e) for e in report.metrics.get("bbox_mm") or ()),
        targets=size_targets(report),
    )


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
    """Fit a validated candidate (its program and Report) to its request on the pool: first
    the sizes its words state when nothing else is off (fit_to_sizes), then, with a picture,
    to the picture (fit_to_picture); judged by `rerank` with the request's checks. The fitted
    Trial's record is its Scored; `sizes` says what the size fit did."""
    began = time.perf_counter()
    before = match_score(report)
    sized = fit_to_sizes(
        _sizes_trial(program, report),
        request_text,
        sizes_validator(domain, pool, picture, **checks),
        rounds=rounds,
        progress=progress,
        keep=keep,
    )
    if sized.scored is not None:
        program, report = sized.program, sized.scored.record.report
    if picture is None:
        return joined(sized, None)
    validate = picture_validator(domain, pool, picture, **checks)
    start = Trial(
        program, valid_but_the_picture(report), match_score(report), pose=match_pose(report)
    )
    fit = fit_to_picture(
        start,
        request_text,
        validate,
        rounds=rounds,
        progress=progress,
        keep=keep,
    )
    if HOLD_CAMERA and fit.scored is not None and fit.scored.pose is not None:
        # Its score was seen from near the fit's camera; as any candidate's, the fitted part's
        # verdict is its match from wherever it looks most like the picture: the search from
        # anywhere, or the fit's own camera where that search missed a closer view.
        anywhere = next(iter(validate([fit.program])), fit.scored)
        fit.scored = max(anywhere, fit.scored, key=lambda t: t.match)
        fit.score_after = fit.scored.match
    if fit.scored is None and sized.scored is not None:
        fit.program, fit.scored = sized.program, _picture_trial(sized.scored.record)
        fit.score_after = fit.scored.match
    fit.score_before = before
    fit.seconds = time.perf_counter() - began
    return joined(sized, fit)


def joined(sized: Fit, pictured: Fit | None) -> Fit:
    """The record of a size fit and the picture fit after it (None: the request had no
    picture): the picture fit's, with both fits' changes, rounds and tries, and `sizes`."""
    if pictured is None:
        sized.sizes, sized.picture = sized.to_dict(), False
        return sized
    first, then = sized.changed, pictured.changed
    pictured.changed = {  # each parameter [before the size fit, after the picture fit]
        name: [first.get(name, then.get(name, [None]))[0], values[1]]
        for name, values in {**first, **then}.items()
    }
    pictured.rounds += sized.rounds
    pictured.trials += sized.trials
    pictured.sizes = sized.to_dict()
    return pictured
