"""How good a model is, measured the way the text/image-to-CAD literature measures it.

For every task the model writes N candidates (seeded). Each candidate is validated blind — with
the task's spec (CAD) and what its own words ask (the `request` check, as served), or without
any reference — and that blind reward alone picks the best of N: the reference shape never takes
part in the choice. A task asked with a picture is judged as serving judges it, by its words
and `image_match` against its picture: its spec (the reference's hole count, solids, volume)
scores the candidates afterwards and never chooses among them. The reference is used
afterwards, only to score: volumetric IoU and Chamfer distance (×10³) of every valid candidate.

Reported per family and overall:
- CAD/scene at pass@1 (over all N samples, i.e. the expected quality of one sample; where
  candidate 0 was decoded greedily, as a new part asked with a picture is, that candidate
  alone): invalidity ratio, spec adherence, request adherence (of tasks whose words ask
  something: the share of samples with sound geometry that matches it; invalid ones count as
  missing it), IoU over valid outputs and with invalid ones counted as 0 (median and mean),
  Chamfer ×10³ over valid outputs (median and mean);
- the same for the best of N selected by the validators;
- code: pass@1 (unbiased estimate from N samples) and pass@N.

With repair rounds (`repair > 0`, CAD and scenes), the same metrics again after repair, as
serving repairs: each sample that fails its checks is fed back with its error, one repaired
sample per round, up to `repair` rounds (after-repair @1: the better of the chain); and when
the best of N fails, N repairs of it per round (after-repair best of N). How often repair was
needed and how often it fixed the part are reported beside them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from genservice.generation.fit import FIT_STARTS, fit_starts
from genservice.generation.settle import served_fit

GenerateFn = Callable[[dict[str, Any], int, int], list[str]]
# (task, failed program, its error {kind, message, line}, n, seed) -> n repaired programs
RepairFn = Callable[[dict[str, Any], str, dict[str, Any], int, int], list[str]]
REPAIR_DOMAINS = ("cad", "scene")
ProgressFn = Callable[[int, int], None]
# an image task -> the gallery parts that look like its picture: (program, design) pairs, the
# design as GalleryEntry.design names it (None where unknown)
RetrieveFn = Callable[[dict[str, Any]], list[tuple[str, str | None]]]


@dataclass
class CandidateScore:
    """One candidate: its blind Report facts and, when valid, its similarity to the reference.

    `valid` is the literature's validity (it ran and built sound solid geometry: the base
    checks); `all_checks` is the Report's verdict, which also needs the spec (and for scenes,
    physics) to pass; an image task's verdict is the one served, without the spec (its
    reference's counts and volume, which neither its words nor serving know): `spec_passed`
    still says whether it meets it.
    """

    valid: bool
    reward: float
    spec_passed: bool | None
    all_checks: bool = False
    request_passed: bool | None = None  # None: the task's words ask nothing, or it did not run
    asked: bool = False  # whether the task's words ask something (request@1 counts those)
    iou: float | None = None
    chamfer_x1000: float | None = None
    error_kind: str | None = None
    error_message: str | None = None
    error_line: int | None = None
    image_match: float | None = None  # an image task: how much it looks like the picture
    request_score: float | None = None  # the `request` check's score (None: nothing asked)
    sizes_off: tuple[float, ...] = ()  # factors to the sizes its words state (request.sizes_off)
    extents_mm: list[float] = field(default_factory=list)  # its x, y, z extents
    size_targets: dict[int, float] = field(default_factory=dict)  # axis: size asked along it
    sound: bool = False  # sound geometry, whatever it was asked (metrics.geometry_sound)
    bbox_within_5: bool | None = None  # an image task whose words give the size: within 5 %
    pictured: bool = False  # asked with a picture
    match_pose: list[float] | None = None  # the camera it matched the picture from
    # a served picture answer: the candidates of other shapes that fit the picture as well
    # (generation/settle.py); any makes it NOT AS ASKED, as serving marks it
    rivals: list[dict[str, Any]] | None = None

    @property
    def rank(self) -> tuple[bool, float, float]:
        """How the validators order candidates, blind: passing every check, then (for a
        picture) how much it looks like it, then reward: as rerank orders them."""
        return (self.all_checks, self.image_match or 0.0, self.reward)

    def error(self) -> dict[str, Any]:
        """The error a repair round feeds back."""
        return {"kind": self.error_kind or "check_failed", "message": self.error_message or "",
                "line": self.error_line}  # fmt: skip


@dataclass
class TaskResult:
    """All candidates of one task and the one the validators chose."""

    task_id: str
    family: str
    domain: str
    candidates: list[CandidateScore]
    best: int
    programs: list[str] = field(default_factory=list)
    modality: str = "text"  # "image" when the task is asked with a picture
    # candidate 0 was decoded greedily (sampler.default_greedy_first): @1 is then that
    # candidate, not the mean over samples drawn alike
    greedy_first: bool = False
    # after repair (when asked): per sample, the best of its repair chain; the best of N after
    # its repair rounds; and the repair rounds each used (0: it passed without one)
    after_one: list[CandidateScore] | None = None
    after_best: CandidateScore | None = None
    rounds_one: list[int] = field(default_factory=list)
    rounds_best: int = 0
    best_program_after: str | None = None
    # after fitting to the request (its sizes, its picture; when asked): the result and the fit
    after_fit: CandidateScore | None = None
    fit: dict[str, Any] | None = None
    best_program_fit: str | None = None
    # with gallery parts beside the samples (an image task, when asked): their scores, and
    # what serving would answer (the blind best of samples and gallery parts together)
    retrieved: list[CandidateScore] | None = None
    retrieved_programs: list[str] = field(default_factory=list)
    retrieved_designs: list[str | None] = field(default_factory=list)
    served: CandidateScore | None = None
    served_program: str | None = None
    served_retrieved: bool = False  # whether the served answer is a gallery part


def _cad_scores(
    task: dict[str, Any],
    programs: list[str],
    pool: Any,
    limits: Any,
    reference: bool = True,
    near: Any = None,
) -> list:
    from genservice.generation.asked import task_items
    from validators.cad import similarity
    from validators.cad.mesh import combine, decode_mesh
    from validators.cad.request import size_targets, sizes_off
    from validators.cad.validate import BASE_CHECKS, CadOptions, run_cad, spec_check

    reference_mesh = None  # a request set (eval/requests_*.jsonl) has sizes, not a reference
    if task.get("reference") and reference:
        built = pool.run("cad", task["reference"], {"check_self_intersection": False}, limits)
        if not built.ok or not built.payload or "parts" not in built.payload:
            raise ValueError(f"task {task['id']}: its reference does not build a shape")
        reference_mesh = combine([decode_mesh(p.get("mesh")) for p in built.payload["parts"]])
    options = CadOptions(printability=False, physics=task["domain"] == "scene")
    request = task_items(task)
    target = picture_target(task)
    if target is not None and near is not None:  # a fit's trials: from near its camera
        target = target.seen_from(near)
    sized = task.get("sized") == "bbox" and bool((task.get("spec") or {}).get("bbox_mm"))
    any_way = bool((task.get("spec") or {}).get("any_orientation"))

    # An image task's spec holds what its reference measures (holes, solids, volume) and its
    # words do not say; serving judges a picture request by its words and picture alone. So
    # its candidates are checked as served, without the spec, and the spec only scores them.
    pictured = target is not None

    def score(program: str) -> CandidateScore:
        run = run_cad(
            program, pool, spec=None if pictured else task.get("spec"), limits=limits,
            options=options,
            domain=task["domain"], request=request,
        )  # fmt: skip
        report = run.report
        spec = report.checks.get("spec")
        if pictured and task.get("spec") and "brep_valid" in report.checks:  # built a solid
            spec = spec_check(task["spec"], report.metrics, options)
        asked = report.checks.get("request")
        base = [report.checks.get(name) for name in BASE_CHECKS]
        result = CandidateScore(
            valid=all(check is not None and check.passed for check in base),
            reward=report.reward,
            spec_passed=bool(spec.passed) if spec is not None else None,
            all_checks=report.valid,
            error_kind=report.error.kind if report.error else None,
            error_message=report.error.message if report.error else None,
            error_line=report.error.line if report.error else None,
            request_passed=bool(asked.passed) if asked is not None else None,
            asked=request is not None,
            request_score=asked.score if asked is not None else None,
            sizes_off=sizes_off(report),
            extents_mm=[float(e) for e in report.metrics.get("bbox_mm") or ()],
            size_targets=size_targets(report),
            sound=bool(report.metrics.get("geometry_sound")),
        )
        result.pictured = target is not None
        if target is not None and run.payload is not None:
            from genservice.generation.rerank import match_pose, match_score, with_image_match

            matched = with_image_match(report, target, run.payload)
            result.image_match = match_score(matched)
            pose = match_pose(matched)
            result.match_pose = list(pose) if pose is not None else None
        if sized:  # an invalid part is not the size asked either
            measured = report.metrics.get("bbox_mm")
            result.bbox_within_5 = result.valid and _within(measured, task["spec"]["bbox_mm"])
        if result.valid and run.payload is not None and reference_mesh is not None:
            mesh = combine([decode_mesh(p.get("mesh")) for p in run.payload["parts"]])
            if mesh is not None:
                try:
                    result.iou, cd = similarity.compare(mesh, reference_mesh, any_way)
                    result.chamfer_x1000 = cd * 1000
                except ValueError:
                    result.iou, result.chamfer_x1000 = 0.0, None
        return result

    with ThreadPoolExecutor(max_workers=max(1, getattr(pool, "size", 2))) as threads:
        return list(threads.map(score, programs))


def picture_target(task: dict[str, Any]) -> Any | None:
    """The image_match target of an image task's pictures (one, or several of one part);
    None for a text task."""
    if not task.get("images"):
        return None
    from genservice.generation.image_match import as_target

    return as_target(task_pictures(task))


def task_pictures(task: dict[str, Any]) -> list[Any]:
    """An image task's pictures, read as RGB images (none for a text task)."""
    from PIL import Image

    pictures = []
    for path in task.get("images") or []:
        with Image.open(path) as picture:
            pictures.append(picture.convert("RGB"))
    return pictures


def _within(measured: Any, wanted: list[float], tolerance: float = 0.05) -> bool:
    """Whether a measured bounding box is the wanted one within `tolerance` on every axis, in
    any orientation (a picture does not fix which way the part lies)."""
    if not measured:
        return False
    have, want = sorted(float(v) for v in measured), sorted(float(v) for v in wanted)
    return all(abs(h - w) <= tolerance * w for h, w in zip(have, want, strict=True))


def _code_scores(
    task: dict[str, Any], programs: list[str], pool: Any, limits: Any, reference: bool = True
) -> list:
    from validators.code.validate import validate_code

    def score(program: str) -> CandidateScore:
        report = validate_code(
            program,
            pool,
            tests=task["tests"],
            entry_point=task["entry_point"],
            limits=limits,
            time_budget_s=task.get("time_budget_s"),
        )
        return CandidateScore(
            valid=report.valid,
            reward=report.reward,
            spec_passed=None,
            all_checks=report.valid,
            error_kind=report.error.kind if report.error else None,
            error_message=report.error.message if report.error else None,
            error_line=report.error.line if report.error else None,
        )

    with ThreadPoolExecutor(max_workers=max(1, getattr(pool, "size", 2))) as threads:
        return list(threads.map(score, programs))


def score_programs(
    task: dict[str, Any],
    programs: list[str],
    pool: Any,
    limits: Any = None,
    reference: bool = True,
    near: Any = None,
) -> list[CandidateScore]:
    """Blind Reports (and, for valid parts, IoU and Chamfer to the reference unless `reference`
    is False) of programs; `near`: an image task's picture seen from near that camera (a fit's
    trials, image_match.Target.seen_from)."""
    if not programs:
        return []
    if task["domain"] == "code":
        return _code_scores(task, programs, pool, limits, reference)
    return _cad_scores(task, programs, pool, limits, reference, near)


def fit_task(
    task: dict[str, Any],
    result: TaskResult,
    rounds: int,
    pool: Any,
    limits: Any = None,
    starts: int = FIT_STARTS,
) -> None:
    """Fit the served best (after repair, when it ran) of a new CAD or scene task to its request
    as serving does (generation/fit.py): to the sizes its words state when only those are off,
    then, for an image task, to its picture, from the best and the next best candidates
    of other designs (up to `starts`, fit.fit_starts); the fitted part that ranks first is the
    answer. The trials are judged blind: the request's words and the geometry for sizes (not
    the task's spec, which is what right-sized is scored by), every check and image_match for
    the picture; only the results are scored against the spec and the reference."""
    ranked = _served_pool(result)
    chosen = fit_starts(
        [(p, s.all_checks) for p, s, _ in ranked], bool(task.get("images")), starts,
        designs=[design for _, _, design in ranked],
    )  # fmt: skip
    outcomes = [_fit_one(task, *ranked[i][:2], rounds, pool, limits) for i in chosen]
    # Blind, as serving chooses (settle.served_fit): passing every check, then the picture.
    served = served_fit([(not s.all_checks, s.image_match or 0.0) for _, s, _ in outcomes])
    program, score, fit = outcomes[served]
    fit.starts = len(chosen)
    fitted = fit.to_dict()
    if len(outcomes) > 1:  # every start's fitted part, so a run shows what the choice did
        fitted["by_start"] = [
            {"all_checks": s.all_checks, "image_match": s.image_match, "iou": s.iou}
            for _, s, _ in outcomes
        ]
        fitted["served_start"] = served
    if task.get("images"):  # a copy: an unfitted start's score is also the served one's
        candidates = [(p, s) for p, s, _ in outcomes] + [(p, s) for p, s, _ in ranked]
        score = replace(score, rivals=_rivals(candidates, pool, limits))
    result.after_fit, result.fit, result.best_program_fit = score, fitted, program


def _rivals(
    candidates: list[tuple[str, CandidateScore]], pool: Any, limits: Any = None
) -> list[dict[str, Any]]:
    """The rivals of the best of a picture task's candidates (fitted and not) as serving finds
    them (engine.settle_candidates, settle.rivals): others that pass every check and the
    picture within settle.MARGIN of it, of another shape."""
    from genservice.generation.image_match import PASS
    from genservice.generation.settle import built_shape, rivals

    passing: dict[str, float] = {}
    for program, score in candidates:  # a fitted part's own score first
        if score.all_checks and (score.image_match or 0.0) >= PASS:
            passing.setdefault(program, score.image_match or 0.0)
    return rivals(list(passing.items()), built_shape(pool, limits), getattr(pool, "size", 1))


def _served_pool(result: TaskResult) -> list[tuple[str, CandidateScore, str | None]]:
    """The candidates serving would rank, best first (blind), with a gallery part's design
    (None for a sample): the served answer, the gallery parts, then the other samples."""
    designs = dict(zip(result.retrieved_programs, result.retrieved_designs, strict=False))
    program, score = _answer(result)
    if result.served is not None and result.served_program is not None:
        program, score = result.served_program, result.served
    pool = [(program, score, designs.get(program))]
    pool += [(p, s, designs.get(p)) for p, s in
             zip(result.retrieved_programs, result.retrieved or [], strict=False)]  # fmt: skip
    pool += [(p, s, None) for p, s in zip(result.programs, result.candidates, strict=False)]
    return sorted(pool, key=lambda entry: entry[1].rank, reverse=True)


def _fit_one(
    task: dict[str, Any],
    program: str,
    score: CandidateScore,
    rounds: int,
    pool: Any,
    limits: Any = None,
) -> tuple[str, CandidateScore, Any]:
    """One candidate fitted to its task's sizes, then picture: the program, its score against
    the reference, and the Fit."""
    from genservice.generation.fit import HOLD_CAMERA, Trial, fit_to_picture, fit_to_sizes, joined

    prompt = task.get("prompt", "")

    def blind(programs: list[str], near: Any = None) -> list[CandidateScore]:
        return score_programs(task, programs, pool, limits, reference=False, near=near)

    def sized(p: str, s: CandidateScore) -> Trial:
        sound = s.sound and s.valid
        match = s.request_score if s.request_score is not None else 1.0
        return Trial(p, sound, match, s, sizes=s.sizes_off, picture=s.image_match,
                     extents=tuple(s.extents_mm), targets=s.size_targets)  # fmt: skip

    def validate_sizes(programs: list[str]) -> list[Trial]:
        return [sized(p, s) for p, s in zip(programs, blind(programs), strict=True)]

    def pictured(p: str, s: CandidateScore) -> Trial:
        pose = tuple(s.match_pose) if s.match_pose else None
        return Trial(p, s.all_checks, s.image_match or 0.0, pose=pose)

    def validate_picture(programs: list[str], near: Any = None) -> list[Trial]:
        return [pictured(p, s) for p, s in zip(programs, blind(programs, near), strict=True)]

    sizes = fit_to_sizes(sized(program, score), prompt, validate_sizes, rounds=rounds)
    if sizes.improved:
        program, score = sizes.program, sizes.scored.record if sizes.scored else score
    if task.get("images"):
        to_picture = fit_to_picture(pictured(program, score), prompt, validate_picture, rounds)
        held = to_picture.scored.pose if to_picture.scored is not None else None
        if to_picture.improved:
            program = to_picture.program
        fit = joined(sizes, to_picture)
    else:
        held, fit = None, joined(sizes, None)
    if sizes.improved or fit.improved:
        score = score_programs(task, [program], pool, limits)[0]
        if HOLD_CAMERA and held is not None:  # as serving judges a fitted part (fit_candidate)
            # Blind: the reference is built once, for the first scoring; the same part's
            # IoU and Chamfer carry over to whichever view of it wins.
            seen = score_programs(task, [program], pool, limits, reference=False, near=held)[0]
            if (seen.image_match or 0.0) > (score.image_match or 0.0):
                seen.iou, seen.chamfer_x1000 = score.iou, score.chamfer_x1000
                score = seen
    return program, score, fit


def repair_task(
    task: dict[str, Any],
    result: TaskResult,
    repair: RepairFn,
    rounds: int,
    seed: int,
    pool: Any,
    limits: Any = None,
) -> None:
    """Repair the task's failing samples and its failing best of N, as serving does (see the
    module docstring); fills the result's after-repair fields."""
    n = len(result.candidates)
    chains = list(zip(result.programs, result.candidates, strict=True))
    result.rounds_one = [0] * n
    for round_ in range(1, rounds + 1):
        failing = [i for i, (_, score) in enumerate(chains) if not score.all_checks]
        if not failing:
            break
        fixes = [
            repair(task, chains[i][0], chains[i][1].error(), 1, seed + 7919 * round_ + i)[0]
            for i in failing
        ]
        for i, program, score in zip(
            failing, fixes, score_programs(task, fixes, pool, limits), strict=True
        ):
            result.rounds_one[i] = round_
            if score.rank > chains[i][1].rank:
                chains[i] = (program, score)
    result.after_one = [score for _, score in chains]
    best_program, best = result.programs[result.best], result.candidates[result.best]
    for round_ in range(1, rounds + 1):
        if best.all_checks:
            break
        result.rounds_best = round_
        fixes = repair(task, best_program, best.error(), n, seed + 7919 * round_)
        for program, score in zip(fixes, score_programs(task, fixes, pool, limits), strict=True):
            if score.rank > best.rank:
                best_program, best = program, score
    result.after_best, result.best_program_after = best, best_program


def _answer(result: TaskResult) -> tuple[str, CandidateScore]:
    """The best of N and its score, after repair when it ran."""
    if result.after_best is not None and result.best_program_after is not None:
        return result.best_program_after, result.after_best
    return result.programs[result.best], result.candidates[result.best]


def retrieve_task(
    task: dict[str, Any], result: TaskResult, retrieve: RetrieveFn, pool: Any, limits: Any = None
) -> None:
    """Score an image task's gallery parts (gallery.py) and choose, blind, what serving would
    answer: the best of the samples (after repair, when it ran) and the gallery parts."""
    program, best = _answer(result)
    found = retrieve(task)
    extra = [part for part, _ in found]
    scores = score_programs(task, extra, pool, limits) if extra else []
    result.retrieved, result.retrieved_programs = scores, extra
    result.retrieved_designs = [design for _, design in found]
    result.served, result.served_program = best, program
    for other, score in zip(extra, scores, strict=True):
        if score.rank > result.served.rank:
            result.served, result.served_program, result.served_retrieved = score, other, True


def evaluate_task(
    task: dict[str, Any], programs: list[str], pool: Any, limits: Any = None
) -> TaskResult:
    """Score the candidates of one task; the best is chosen by blind reward (never by IoU)."""
    scores = score_programs(task, programs, pool, limits)
    # Blind choice: passing every check first, then reward; ties keep the sampling order.
    best = max(range(len(scores)), key=lambda i: (*scores[i].rank, -i))
    modality = "image" if task.get("images") else "text"
    return TaskResult(task["id"], task["family"], task["domain"], scores, best, programs, modality)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarise(results: list[TaskResult]) -> dict[str, Any]:
    """Metrics for a group of task results (one family, one domain or all)."""
    cad = [r for r in results if r.domain != "code"]
    code = [r for r in results if r.domain == "code"]
    out: dict[str, Any] = {"tasks": len(results)}
    if cad:
        samples = [c for r in cad for c in _at_one(r, r.candidates)]
        best = [r.candidates[r.best] for r in cad]
        out["pass@1"] = _cad_metrics(samples)
        out[f"best_of_{len(cad[0].candidates)}"] = _cad_metrics(best)
        repaired = [r for r in cad if r.after_one is not None and r.after_best is not None]
        if repaired:
            out["after_repair"] = _repair_metrics(repaired)
        served = [r for r in cad if r.served is not None and r.retrieved is not None]
        if served:
            k = max(len(r.retrieved or []) for r in served)
            out["with_gallery"] = {
                f"best_of_{len(served[0].candidates)}+{k}": _cad_metrics(
                    [r.served for r in served if r.served is not None]
                ),
                "gallery_best_of_k": _cad_metrics(
                    [max(r.retrieved, key=lambda s: s.rank) for r in served if r.retrieved]
                ),
                "tasks": len(served),
                "answered_from_gallery": _share([r.served_retrieved for r in served]),
            }
        fitted = [r for r in cad if r.after_fit is not None and r.fit is not None]
        if fitted:
            out["after_fit"] = {
                f"best_of_{len(fitted[0].candidates)}": _cad_metrics(
                    [r.after_fit for r in fitted if r.after_fit is not None]
                ),
                "tasks": len(fitted),
                "improved": _share([bool(r.fit and r.fit["improved"]) for r in fitted]),
                "trials_mean": _mean([float(r.fit["trials"]) for r in fitted if r.fit]),
                "seconds_mean": _mean([float(r.fit["seconds"]) for r in fitted if r.fit]),
            }
    if code:
        n = len(code[0].candidates)
        out["code_pass@1"] = statistics.fmean(
            sum(c.valid for c in r.candidates) / len(r.candidates) for r in code
        )
        out[f"code_pass@{n}"] = statistics.fmean(any(c.valid for c in r.candidates) for r in code)
    return out


def _at_one(result: TaskResult, per_sample: list[Any]) -> list[Any]:
    """Of a per-sample list, what @1 is measured on: the greedy first candidate's entry where
    there is one, else every sample's (drawn alike, each is an unbiased draw of the first)."""
    return per_sample[:1] if result.greedy_first else per_sample


def _cad_metrics(scores: list[CandidateScore]) -> dict[str, Any]:
    valid = [s for s in scores if s.valid]
    ious_valid = [s.iou for s in valid if s.iou is not None]
    ious_all = [s.iou if (s.valid and s.iou is not None) else 0.0 for s in scores]
    chamfers = [s.chamfer_x1000 for s in valid if s.chamfer_x1000 is not None]
    matches = [s.image_match or 0.0 for s in scores if s.pictured]  # nothing built: 0
    from genservice.generation.image_match import PASS

    # What serving calls VALID for a picture: every check passed, and it looks like the picture.
    # A served answer whose picture fits a different part as well is NOT AS ASKED (settle.py).
    as_pictured = [s.all_checks and (s.image_match or 0.0) >= PASS and not s.rivals
                   for s in scores if s.pictured]  # fmt: skip
    settled = [s for s in scores if s.rivals is not None]
    sized = [s for s in scores if s.bbox_within_5 is not None]
    with_spec = [s for s in scores if s.spec_passed is not None or not s.valid]
    spec_ok = sum(1 for s in with_spec if s.valid and s.spec_passed)
    asked = [s for s in scores if s.asked]
    request_ok = sum(1 for s in asked if s.valid and s.request_passed)
    return {
        "samples": len(scores),
        "invalidity": 1 - len(valid) / len(scores) if scores else None,
        "spec_adherence": spec_ok / len(with_spec) if with_spec else None,
        "request_adherence": request_ok / len(asked) if asked else None,
        "asked_samples": len(asked),
        "all_checks": sum(s.all_checks for s in scores) / len(scores) if scores else None,
        "iou_valid_median": _median(ious_valid),
        "iou_valid_mean": _mean(ious_valid),
        "iou_all_median": _median(ious_all),
        "iou_all_mean": _mean(ious_all),
        "chamfer_x1000_median": _median(chamfers),
        "chamfer_x1000_mean": _mean(chamfers),
        **(
            {
                "image_match_median": _median(matches),
                "as_pictured": _share(as_pictured),
                **({"unsettled": _share([bool(s.rivals) for s in settled])} if settled else {}),
                "bbox_within_5pct": _share([bool(s.bbox_within_5) for s in sized]),
            }
            if matches
            else {}
        ),
    }


def _repair_metrics(results: list[TaskResult]) -> dict[str, Any]:
    """The after-repair metrics of a group, and how often repair was needed and fixed it."""
    chains = [  # (rounds, after) of each sample that @1 is measured on
        pair
        for r in results
        for pair in _at_one(r, list(zip(r.rounds_one, r.after_one or [], strict=True)))
    ]
    ones = [after for _, after in chains]
    needed_one = [k > 0 for k, _ in chains]
    fixed_one = [after.all_checks for k, after in chains if k > 0]
    needed_best = [r.rounds_best > 0 for r in results]
    fixed_best = [bool(r.after_best and r.after_best.all_checks) for r in results if r.rounds_best]
    return {
        "pass@1": _cad_metrics(ones),
        f"best_of_{len(results[0].candidates)}": _cad_metrics(
            [r.after_best for r in results if r.after_best is not None]
        ),
        "needed@1": _share(needed_one),
        "fixed@1": _share(fixed_one),
        "needed_best": _share(needed_best),
        "fixed_best": _share(fixed_best),
    }


def _share(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def report(results: list[TaskResult]) -> dict[str, Any]:
    """Overall, per-domain and per-family summaries."""
    families = sorted({r.family for r in results})
    domains = sorted({r.domain for r in results})
    modalities = sorted({r.modality for r in results})
    return {
        "overall": summarise(results),
        "modalities": {m: summarise([r for r in results if r.modality == m]) for m in modalities},
        "domains": {d: summarise([r for r in results if r.domain == d]) for d in domains},
        "families": {f: summarise([r for r in results if r.family == f]) for f in families},
        "selection": "best of N chosen by the validators' blind reward (spec and the request's "
        "own words only, never the reference; a picture task as served: its words and picture, "
        "the spec only scored); IoU and Chamfer use the reference only to score"
        + (
            "; @1 of a task whose first candidate was decoded greedily (a picture task, as "
            "served) is that candidate, else the mean over the samples"
            if any(r.greedy_first for r in results)
            else ""
        ),
    }


def run_evaluation(
    tasks: Iterable[dict[str, Any]],
    generate: GenerateFn,
    pool: Any,
    n: int,
    seed: int,
    limits: Any = None,
    progress: ProgressFn | None = None,
    repair: RepairFn | None = None,
    rounds: int = 0,
    fit: int = 0,
    retrieve: RetrieveFn | None = None,
    fit_starts: int = FIT_STARTS,
    greedy_first: Callable[[dict[str, Any]], bool] | None = None,
) -> list[TaskResult]:
    """Generate N candidates per task and score them (then, with `rounds` of `repair`, repair
    the failing ones of CAD and scene tasks: repair_task; with `retrieve`, add an image task's
    gallery parts: retrieve_task; and with `fit` rounds, fit the best of an image task to its
    picture: fit_task, from up to `fit_starts` of its best candidates). `greedy_first` says
    which tasks' candidate 0 `generate` decoded greedily (their @1 is that candidate)."""
    items = list(tasks)
    results = []
    for index, task in enumerate(items):
        programs = generate(task, n, seed)
        result = evaluate_task(task, programs, pool, limits)
        result.greedy_first = greedy_first is not None and greedy_first(task)
        if repair is not None and rounds > 0 and task["domain"] in REPAIR_DOMAINS:
            repair_task(task, result, repair, rounds, seed, pool, limits)
        if retrieve is not None and task.get("images") and task["domain"] in REPAIR_DOMAINS:
            retrieve_task(task, result, retrieve, pool, limits)
        if fit > 0 and task["domain"] in REPAIR_DOMAINS and not task.get("previous_program"):
            fit_task(task, result, fit, pool, limits, starts=fit_starts)
        results.append(result)
        if progress is not None:
            progress(index + 1, len(items))
    return results


def markdown_table(summary: dict[str, Any]) -> str:
    """The per-family table of a report as markdown."""
    lines = [
        "| family | tasks | invalid@1 | spec@1 | request@1 | IoU@1 med (valid / all) "
        "| CD×10³ med | best-of-N invalid | best-of-N spec | best-of-N request "
        "| best-of-N IoU med (valid / all) | code pass@1 | pass@N |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [*summary["families"].items(), ("**overall**", summary["overall"])]
    for name, group in rows:
        one = group.get("pass@1", {})
        best_key = next((k for k in group if k.startswith("best_of_")), None)
        best = group.get(best_key, {}) if best_key else {}
        pass_n = next(
            (v for k, v in group.items() if k.startswith("code_pass@") and k != "code_pass@1"), None
        )
        lines.append(
            f"| {name} | {group['tasks']} | {_pct(one.get('invalidity'))} "
            f"| {_pct(one.get('spec_adherence'))} | {_pct(one.get('request_adherence'))} "
            f"| {_num(one.get('iou_valid_median'))} / {_num(one.get('iou_all_median'))} "
            f"| {_num(one.get('chamfer_x1000_median'))} | {_pct(best.get('invalidity'))} "
            f"| {_pct(best.get('spec_adherence'))} | {_pct(best.get('request_adherence'))} "
            f"| {_num(best.get('iou_valid_median'))} / {_num(best.get('iou_all_median'))} "
            f"| {_pct(group.get('code_pass@1'))} | {_pct(pass_n)} |"
        )
    return "\n".join(lines) + "\n"


def modality_table(summary: dict[str, Any]) -> str:
    """Image and text tasks side by side (empty when the run had no image tasks). IoU and
    Chamfer are of shapes centred and scaled to unit size; image_match is blind (the picture
    only); "bbox within 5 %" counts the image tasks whose words give the size."""
    groups = summary.get("modalities") or {}
    if "image" not in groups:
        return ""
    lines = [
        "| modality | tasks | invalid@1 | IoU@1 med (valid / all) | CD×10³ med "
        "| image_match@1 med | best-of-N IoU med (all) | best-of-N image_match med "
        "| best-of-N VALID as pictured | best-of-N bbox within 5 % |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, group in groups.items():
        one = group.get("pass@1", {})
        best_key = next((k for k in group if k.startswith("best_of_")), None)
        best = group.get(best_key, {}) if best_key else {}
        lines.append(
            f"| {name} | {group['tasks']} | {_pct(one.get('invalidity'))} "
            f"| {_num(one.get('iou_valid_median'))} / {_num(one.get('iou_all_median'))} "
            f"| {_num(one.get('chamfer_x1000_median'))} | {_num(one.get('image_match_median'))} "
            f"| {_num(best.get('iou_all_median'))} | {_num(best.get('image_match_median'))} "
            f"| {_pct(best.get('as_pictured'))} | {_pct(best.get('bbox_within_5pct'))} |"
        )
        gallery = group.get("with_gallery")
        if gallery:
            share = _pct(gallery["answered_from_gallery"])
            lines.append(_served_row(f"{name}, with gallery parts ({share} answered from it)",
                                     gallery))  # fmt: skip
        if group.get("after_fit"):
            lines.append(_served_row(f"{name}, fitted to the request", group["after_fit"]))
    return "\n".join(lines) + "\n"


def _served_row(label: str, group: dict[str, Any]) -> str:
    """A modality table row of what was served after a step (gallery parts, the fit)."""
    best = group[next(k for k in group if k.startswith("best_of_"))]
    return (
        f"| {label} | {group['tasks']} | – | – | – | – "
        f"| {_num(best.get('iou_all_median'))} | {_num(best.get('image_match_median'))} "
        f"| {_pct(best.get('as_pictured'))} | {_pct(best.get('bbox_within_5pct'))} |"
    )


def fit_table(summary: dict[str, Any]) -> str:
    """Before and after fitting to the request, per family (empty when no fit ran)."""
    rows = [*summary["families"].items(), ("**overall**", summary["overall"])]
    rows = [(name, group) for name, group in rows if "after_fit" in group]
    if not rows:
        return ""
    n = next(k for k in rows[0][1]["after_fit"] if k.startswith("best_of_"))
    lines = [
        "| family | tasks | best-of-N invalid before → after | best-of-N spec before → after "
        "| best-of-N request before → after | fit changed the part | tries (mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, group in rows:
        fitted = group["after_fit"]
        served = group.get("after_repair", group)  # the fit starts from the repaired best
        before, after = served.get(n, {}), fitted[n]
        lines.append(
            f"| {name} | {fitted['tasks']} "
            f"| {_pct(before.get('invalidity'))} → {_pct(after.get('invalidity'))} "
            f"| {_pct(before.get('spec_adherence'))} → {_pct(after.get('spec_adherence'))} "
            f"| {_pct(before.get('request_adherence'))} → {_pct(after.get('request_adherence'))} "
            f"| {_pct(fitted.get('improved'))} | {_num(fitted.get('trials_mean'))} |"
        )
    return "\n".join(lines) + "\n"


def repair_table(summary: dict[str, Any]) -> str:
    """Before and after repair, per family (empty when no repair ran)."""
    rows = [*summary["families"].items(), ("**overall**", summary["overall"])]
    rows = [(name, group) for name, group in rows if "after_repair" in group]
    if not rows:
        return ""
    lines = [
        "| family | tasks | invalid@1 before → after | request@1 before → after "
        "| IoU@1 med (all) before → after | best-of-N invalid before → after "
        "| best-of-N spec before → after | best-of-N IoU med (all) before → after "
        "| repaired@1 (needed) | repaired best (needed) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, group in rows:
        after = group["after_repair"]
        best_key = next(k for k in group if k.startswith("best_of_"))
        one, best, one_after, best_after = (
            group["pass@1"],
            group[best_key],
            after["pass@1"],
            after[best_key],
        )

        def pair(a: dict, b: dict, key: str, fmt: Callable[[float | None], str]) -> str:
            return f"{fmt(a.get(key))} → {fmt(b.get(key))}"

        lines.append(
            f"| {name} | {group['tasks']} | {pair(one, one_after, 'invalidity', _pct)} "
            f"| {pair(one, one_after, 'request_adherence', _pct)} "
            f"| {pair(one, one_after, 'iou_all_median', _num)} "
            f"| {pair(best, best_after, 'invalidity', _pct)} "
            f"| {pair(best, best_after, 'spec_adherence', _pct)} "
            f"| {pair(best, best_after, 'iou_all_median', _num)} "
            f"| {_pct(after['fixed@1'])} ({_pct(after['needed@1'])}) "
            f"| {_pct(after['fixed_best'])} ({_pct(after['needed_best'])}) |"
        )
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def plot(summary: dict[str, Any], out: Path) -> list[Path]:
    """Bar charts per family: invalidity and median IoU (pass@1 and best of N); code pass rates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    cad = {k: v for k, v in summary["families"].items() if "pass@1" in v}
    if cad:
        names = list(cad)
        best_key = next(k for k in next(iter(cad.values())) if k.startswith("best_of_"))
        figure, axes = plt.subplots(1, 2, figsize=(max(8, len(names) * 0.6), 4.5))
        for axis, metric, title in (
            (axes[0], "invalidity", "invalidity ratio"),
            (axes[1], "iou_all_median", "median IoU (invalid = 0)"),
        ):
            x = range(len(names))
            axis.bar([i - 0.2 for i in x], [cad[n]["pass@1"][metric] or 0 for n in names], 0.4,
                     label="pass@1")  # fmt: skip
            axis.bar([i + 0.2 for i in x], [cad[n][best_key][metric] or 0 for n in names], 0.4,
                     label=best_key.replace("_", " "))  # fmt: skip
            axis.set_xticks(list(x), names, rotation=60, ha="right", fontsize=8)
            axis.set_title(title)
            axis.legend(fontsize=8)
        figure.tight_layout()
        path = out / "eval_cad.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    code = {k: v for k, v in summary["families"].items() if "code_pass@1" in v}
    if code:
        names = list(code)
        figure, axis = plt.subplots(figsize=(max(6, len(names) * 0.6), 4))
        x = range(len(names))
        axis.bar([i - 0.2 for i in x], [code[n]["code_pass@1"] for n in names], 0.4, label="pass@1")
        pass_n = [
            next(v for k, v in code[n].items() if k.startswith("code_pass@") and k != "code_pass@1")
            for n in names
        ]
        axis.bar([i + 0.2 for i in x], pass_n, 0.4, label="pass@N")
        axis.set_xticks(list(x), names, rotation=60, ha="right", fontsize=8)
        axis.set_title("code families")
        axis.legend(fontsize=8)
        figure.tight_layout()
        path = out / "eval_code.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def write_outputs(results: list[TaskResult], out: Path, meta: dict[str, Any]) -> dict[str, Path]:
    """eval.json (summary, meta and per-task scores), eval.md and the PNG plots."""
    out.mkdir(parents=True, exist_ok=True)
    summary = report(results)
    per_task = [
        {
            "id": r.task_id,
            "family": r.family,
            "modality": r.modality,
            "best": r.best,
            "candidates": [c.__dict__ for c in r.candidates],
            "best_program": r.programs[r.best] if r.programs else None,
            "programs": r.programs,
            **(
                {
                    "after_one": [c.__dict__ for c in r.after_one],
                    "rounds_one": r.rounds_one,
                    "after_best": r.after_best.__dict__ if r.after_best else None,
                    "rounds_best": r.rounds_best,
                    "best_program_after": r.best_program_after,
                }
                if r.after_one is not None
                else {}
            ),
            **(
                {
                    "after_fit": r.after_fit.__dict__ if r.after_fit else None,
                    "served": r.served.__dict__ if r.served else None,
                    "served_from_gallery": r.served_retrieved,
                    "retrieved": [c.__dict__ for c in r.retrieved or []],
                    "fit": r.fit,
                    "best_program_fit": r.best_program_fit,
                }
                if r.fit is not None
                else {}
            ),
        }
        for r in results
    ]
    paths = {"json": out / "eval.json", "markdown": out / "eval.md"}
    paths["json"].write_text(
        json.dumps({"meta": meta, "summary": summary, "tasks": per_task}, indent=2)
    )
    text = (
        f"# Evaluation of {meta.get('model', '?')} on {meta.get('tasks', '?')}\n\n"
        f"{summary['selection']}.\n\n" + markdown_table(summary)
    )
    by_modality = modality_table(summary)
    if by_modality:
        text += f"\n## Pictures and words\n\n{by_modality}"
    repaired = repair_table(summary)
    if repaired:
        text += f"\n## Before and after repair\n\n{meta.get('repairing', '')}\n\n{repaired}"
    fitted = fit_table(summary)
    if fitted:
        text += f"\n## Before and after fitting\n\n{meta.get('fitting', '')}\n\n{fitted}"
    paths["markdown"].write_text(text)
    for index, path in enumerate(plot(summary, out)):
        paths[f"plot_{index}"] = path
    return paths
