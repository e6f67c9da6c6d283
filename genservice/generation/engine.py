"""One request end to end: prompt → N sampled programs → validated and ranked → the best one.

Serving (CLI, API, jobs) and training evaluation go through `generate`, so a program is always
produced and judged the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from genservice.generation.binding import bind_candidates
from genservice.generation.entry_point import EntryPoint, check_entry_point
from genservice.generation.fit import MAX_FIT, Fit, fit_candidate, fit_starts
from genservice.generation.gallery import MAX_RETRIEVE, checked_look_alike, gallery_candidates
from genservice.generation.loader import LoadedModel
from genservice.generation.pictures import read_by_model
from genservice.generation.prompts import DOMAINS, build_repair_messages, clean_completion
from genservice.generation.rerank import fit_rank, rerank, valid_but_the_picture, verdict_order
from genservice.generation.sampler import SamplingSettings, sample
from genservice.generation.settle import served_fit, settle
from validators.cad.request import missed_only_the_request, sizes_off
from validators.code.validate import check_time
from validators.report import Report

ProgressCallback = Callable[..., None]  # (stage, done, total): generating, validating, done
MAX_REPAIR = 4  # repair rounds a request may ask for
DEFAULT_REPAIR = 1  # rounds served by default: one more best-of-N, only when none is valid
REPAIR_DOMAINS = ("cad", "scene")  # the domains the model was taught to repair


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: the prompt, domain, optional images and edit, and how to sample."""

    prompt: str
    domain: str = "cad"
    n: int = 8
    seed: int = 0
    max_new_tokens: int = 1024
    temperature: float = 0.8
    top_p: float = 0.95
    greedy_first: bool = False  # candidate 0 decoded greedily (sampler.default_greedy_first)
    images: tuple[Any, ...] = ()
    previous_program: str | None = None
    instruction: str | None = None
    spec: dict[str, Any] | None = None
    tests: str | None = None
    entry_point: str | None = None
    time_budget_s: float | None = None  # code: seconds for all the tests (validators.code)
    repair: int = 0  # rounds of repair when no candidate is valid (cad and scene)
    fit: int = 0  # rounds of fitting the best to its stated sizes and picture (cad and scene)
    retrieve: int = 0  # gallery parts that look like the picture, as extra candidates (gallery.py)

    def __post_init__(self) -> None:
        if not 0 <= self.repair <= MAX_REPAIR:
            raise ValueError(f"repair must be between 0 and {MAX_REPAIR} rounds")
        if not 0 <= self.fit <= MAX_FIT:
            raise ValueError(f"fit must be between 0 and {MAX_FIT} rounds")
        if not 0 <= self.retrieve <= MAX_RETRIEVE:
            raise ValueError(f"retrieve must be between 0 and {MAX_RETRIEVE} gallery parts")
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, not {self.domain!r}")
        if not self.prompt.strip():
            raise ValueError("the prompt is empty")
        if (self.previous_program is None) != (self.instruction is None):
            raise ValueError("an edit needs both the previous program and an instruction")
        if self.domain == "code" and (self.tests is None or not self.entry_point):
            raise ValueError("a code request needs tests and an entry_point to judge candidates")
        if self.domain == "code":
            check_entry_point(str(self.entry_point))
        if self.domain != "code" and (self.tests is not None or self.entry_point):
            raise ValueError("tests and entry_point apply to the code domain only")
        if self.time_budget_s is not None:
            if self.domain != "code":
                raise ValueError("time_budget_s applies to code requests only")
            check_time(self.time_budget_s)
        if self.spec is not None and self.domain == "code":
            raise ValueError("a spec applies to cad and scene requests, not code")
        self.sampling()  # raises ValueError on bad sampling settings

    def asked(self) -> tuple[str, str | None]:
        """What the request asks, for the `request` check: its text and an edit's previous
        program (rerank.request_items)."""
        return (self.instruction or self.prompt, self.previous_program)

    def sampling(self) -> SamplingSettings:
        """The sampling settings of this request."""
        return SamplingSettings(
            self.n,
            self.seed,
            self.max_new_tokens,
            self.temperature,
            self.top_p,
            self.greedy_first,
        )


@dataclass(frozen=True)
class Candidate:
    """One ranked candidate: the program, its reward and validity, its sampling position."""

    program: str
    reward: float
    valid: bool
    index: int
    report: Report
    finish_reason: str
    round: int = 0  # 0: the first sampling; r: written in repair round r
    fitted_from: int | None = None  # the candidate this one was fitted to the request from
    retrieved_from: str | None = None  # the gallery entry it is (finish_reason "retrieved")

    def to_dict(self, with_report: bool = False) -> dict[str, Any]:
        """JSON form (the Report only on request)."""
        data: dict[str, Any] = {
            "program": self.program,
            "reward": self.reward,
            "valid": self.valid,
            "index": self.index,
            "finish_reason": self.finish_reason,
            "round": self.round,
            "fitted_from": self.fitted_from,
            "retrieved_from": self.retrieved_from,
        }
        if with_report:
            data["report"] = self.report.to_dict()
        return data


@dataclass(frozen=True)
class RepairRound:
    """One repair round: which candidate was fed back with which error, and what came of it."""

    round: int
    repaired: int  # the index of the candidate fed back
    error: dict[str, Any]  # its Report's error: kind, message, line
    candidates: int
    valid: int
    generate_s: float
    validate_s: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class GenerationResult:
    """The best program, its Report, every candidate best first, and how it was made."""

    program: str
    report: Report
    candidates: list[Candidate]
    sampling: dict[str, Any]
    seed: int
    model_id: str
    weights_sha256: str
    timings: dict[str, float] = field(default_factory=dict)
    generated_tokens: int = 0
    repairs: list[RepairRound] = field(default_factory=list)
    fit: dict[str, Any] | None = None  # what fitting to the request did (Fit.to_dict)
    # a picture request to a model that reads look-alikes: the gallery part it was shown
    # (program, retrieved_from), the one of its gallery parts the checks scored best
    look_alike: dict[str, Any] | None = None

    @property
    def valid(self) -> bool:
        """Whether the best candidate is valid."""
        return self.report.valid

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "program": self.program,
            "report": self.report.to_dict(),
            "candidates": [c.to_dict() for c in self.candidates],
            "sampling": dict(self.sampling),
            "seed": self.seed,
            "model_id": self.model_id,
            "weights_sha256": self.weights_sha256,
            "timings": dict(self.timings),
            "generated_tokens": self.generated_tokens,
            "repairs": [r.to_dict() for r in self.repairs],
            "fit": self.fit,
            **({"look_alike": self.look_alike} if self.look_alike is not None else {}),
        }


@dataclass(frozen=True)
class Sampled:
    """One sampled program before validation: the cleaned text, why it stopped, its length."""

    program: str
    finish_reason: str
    tokens: int
    retrieved_from: str | None = None  # a gallery entry's id: not sampled but retrieved

    def to_dict(self) -> dict[str, Any]:
        """JSON form (jobs store it between the generate and validate stages)."""
        data = {"program": self.program, "finish_reason": self.finish_reason, "tokens": self.tokens}
        if self.retrieved_from is not None:
            data["retrieved_from"] = self.retrieved_from
        return data


def sample_programs(
    request: GenerationRequest,
    loaded: LoadedModel,
    progress: ProgressCallback | None = None,
    messages: list[dict[str, Any]] | None = None,
    seed: int | None = None,
    look_alike: str | None = None,
) -> list[Sampled]:
    """Sample request.n programs for the request (one prefill, shared KV cache), cleaned; for a
    new CAD or scene request, each bound to the numbers it states (binding.py). A model that
    reads look-alikes is shown one with a new picture request: `look_alike` (the gallery part
    the checks scored best, `checked_look_alike`), or else the gallery part closest in
    silhouette. `messages` and `seed` replace the request's own (a repair round asks with
    `repair_messages`, and is shown no look-alike)."""
    loaded.check_images(len(request.images))
    notify = progress or (lambda *event: None)
    settings = request.sampling()
    shown = read_by_model(request.images)  # the gallery, the checks and the fit read them all
    if messages is None:
        if request.images and request.previous_program is None and look_alike is None:
            look_alike = loaded.look_alike(request.domain, request.prompt, list(request.images))
        messages = loaded.messages(
            request.domain,
            request.prompt,
            previous_program=request.previous_program,
            instruction=request.instruction,
            images=len(shown),
            look_alike=look_alike,
        )
    else:
        look_alike = None  # a repair round mends from nothing but the failed program's words
    notify("generating", 0, settings.n)
    completions = sample(
        loaded,
        messages,
        n=settings.n,
        seed=settings.seed if seed is None else seed,
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        greedy_first=settings.greedy_first,
        images=shown or None,
        progress=lambda done, total: notify("generating", done, total),
        entry_point=(
            EntryPoint.from_request(request.prompt, str(request.entry_point))
            if request.domain == "code"
            else None
        ),
    )
    programs = bind_candidates(
        [clean_completion(c.text) for c in completions],
        request.domain,
        request.prompt,
        request.previous_program,
        look_alike,
        request.instruction,
    )
    return [
        Sampled(program, c.finish_reason, len(c.tokens))
        for program, c in zip(programs, completions, strict=True)
    ]


def gallery_programs(request: GenerationRequest, loaded: LoadedModel) -> list[Sampled]:
    """A new picture request's gallery parts as candidates (gallery.py): the `request.retrieve`
    parts that look most like its picture, each bound to the numbers its words state and, where
    that changed it, also as only scaled to their size; none without a picture or a gallery."""
    retrieved = retrieve_programs(request, loaded)
    scaled = [r.entry.scaled_to(request.prompt) for r in retrieved]
    bound = bind_candidates(scaled, request.domain, request.prompt)
    ids = [r.entry.id for r in retrieved]
    return [
        Sampled(program, "retrieved", 0, entry_id)
        for program, entry_id in gallery_candidates(bound, scaled, ids)
    ]


def check_gallery(
    request: GenerationRequest,
    loaded: LoadedModel,
    pool: Any,
    progress: ProgressCallback | None = None,
    limits: Any | None = None,
    parameters: dict[str, Any] | None = None,
) -> tuple[list[Candidate], str | None]:
    """A new picture request's gallery parts (gallery_programs), checked and ranked before any
    sampling (numbered after the request's n samples), and the look-alike the model is then
    shown: the best of them short enough to show (gallery.checked_look_alike); None when the
    model reads no look-alikes or there are no parts."""
    gallery = gallery_programs(request, loaded)
    if not gallery:
        return [], None
    checked = rank_programs(request, gallery, pool, progress, limits, parameters, request.n)
    if not loaded.reads_look_alikes:
        return checked, None
    return checked, checked_look_alike([c.program for c in checked])


def retrieves(request: GenerationRequest, loaded: LoadedModel) -> bool:
    """Whether a request gets gallery parts: a new CAD or scene request with a picture, asking
    for some, to a model with a gallery."""
    new_part = request.previous_program is None and request.domain in ("cad", "scene")
    return bool(request.images and request.retrieve and new_part and loaded.gallery is not None)


def retrieve_programs(request: GenerationRequest, loaded: LoadedModel) -> list[Any]:
    """The gallery entries (gallery.Retrieved) that look most like a new CAD or scene
    request's picture; none without a picture, a gallery or `request.retrieve`."""
    if not retrieves(request, loaded):
        return []
    from genservice.generation.image_match import as_target

    pictures = as_target(list(request.images))  # one picture, or several of one part
    return list(loaded.gallery.nearest(pictures, request.domain, request.retrieve))


def rank_programs(
    request: GenerationRequest,
    sampled: list[Sampled],
    pool: Any,
    progress: ProgressCallback | None = None,
    limits: Any | None = None,
    parameters: dict[str, Any] | None = None,
    first_index: int = 0,
    repair_round: int = 0,
) -> list[Candidate]:
    """Validate the sampled programs on the pool; candidates best first (valid, then reward).
    Each is also checked against what the request's words ask (asked.py, the `request` check),
    so the best is one that matches the request whenever one does, and never VALID otherwise.
    Candidates are numbered from `first_index` and marked with their `repair_round`."""
    notify = progress or (lambda *event: None)
    notify("validating", 0, len(sampled))
    ranked = rerank(
        [s.program for s in sampled],
        request.domain,
        pool,
        spec=request.spec,
        tests=request.tests,
        entry_point=request.entry_point,
        time_budget_s=request.time_budget_s,
        parameters=parameters,
        limits=limits,
        progress=lambda done, total: notify("validating", done, total),
        asked=request.asked(),
        picture=list(request.images) or None,
    )
    return [
        Candidate(
            s.program,
            s.reward,
            s.valid,
            first_index + s.index,
            s.report,
            sampled[s.index].finish_reason,
            repair_round,
            retrieved_from=sampled[s.index].retrieved_from,
        )
        for s in ranked
    ]


def repair_messages(request: GenerationRequest, failed: Program) -> list[dict[str, Any]]:
    """The messages of a repair round: the request, the failed program and its Report's error
    (kind, message, line), as the model was taught to read them (prompts.build_repair_messages).
    A part that ran but missed a check is described by the checks it failed."""
    program, report = failed
    error = report.error
    if error is not None:
        kind, message, line = error.kind, error.message, error.line
    else:
        failed_checks = [name for name, check in report.checks.items() if not check.passed]
        kind, message, line = "check_failed", "failed checks: " + ", ".join(failed_checks), None
    return build_repair_messages(
        request.domain, request.instruction or request.prompt, program, kind, message, line,
        images=len(read_by_model(request.images)),
    )  # fmt: skip


def error_of(report: Report) -> dict[str, Any]:
    """A Report's error as plain data (what a repair round fed back)."""
    if report.error is None:
        return {"kind": "check_failed", "message": "", "line": None}
    return {"kind": report.error.kind, "message": report.error.message, "line": report.error.line}


def repair_seed(seed: int, repair_round: int) -> int:
    """The sampling seed of a repair round (a draw of its own, reproducible)."""
    return seed + 7919 * repair_round


def wants_repair(rounds: int, domain: str, best_valid: bool, rounds_done: int) -> bool:
    """Whether another of a request's `rounds` of repair runs: none is valid, rounds are left,
    the domain is one the model repairs."""
    return not best_valid and rounds_done < rounds and domain in REPAIR_DOMAINS


def round_order(valid: bool, reward: float) -> tuple[bool, float]:
    """The sort key that ranks candidates of several rounds: valid ones first, then by reward."""
    return (not valid, -reward)


def merge_ranked(earlier: list[Candidate], later: list[Candidate]) -> list[Candidate]:
    """Candidates of all rounds, best first: valid ones, then by reward; ties keep the earlier
    round's place (each round is already ranked)."""
    return sorted([*earlier, *later], key=lambda c: round_order(c.valid, c.reward))


Program = tuple[str, Report]


def generate(
    request: GenerationRequest,
    loaded: LoadedModel,
    pool: Any,
    progress: ProgressCallback | None = None,
    limits: Any | None = None,
    parameters: dict[str, Any] | None = None,
) -> GenerationResult:
    """Sample request.n programs, validate them all on `pool`, and return the best.

    `pool` may also be a Future of a pool still starting: it is awaited once sampling is done.
    """
    notify = progress or (lambda *event: None)
    settings = request.sampling()
    started = time.perf_counter()
    checked: list[Candidate] = []
    look_alike = None
    if retrieves(request, loaded):  # checked first, so that the model is shown the best of them
        pool = pool.result() if isinstance(pool, Future) else pool
        checked, look_alike = check_gallery(request, loaded, pool, notify, limits, parameters)
    checked_at = time.perf_counter()
    sampled = sample_programs(request, loaded, notify, look_alike=look_alike)
    generated = time.perf_counter()
    if isinstance(pool, Future):
        pool = pool.result()
    ready = time.perf_counter()
    # Ordered as rerank orders candidates; samples before gallery parts on ties.
    ranked = rank_programs(request, sampled, pool, notify, limits, parameters)
    candidates = sorted([*ranked, *checked], key=lambda c: verdict_order(c.report))
    validated = time.perf_counter()
    repairs: list[RepairRound] = []
    tokens = sum(s.tokens for s in sampled)
    fit, fit_s = None, 0.0
    new = request.previous_program is None
    while True:
        # Fitting comes first: it costs no sampling, and a part that misses only the sizes its
        # words state, or only its picture, is the fit's to put right (once), not repair's.
        if fit is None and wants_fit(
            request.fit, request.domain, new, bool(request.images), candidates[0].report
        ):
            began_fit = time.perf_counter()
            design_of = loaded.gallery.design_of if loaded.gallery is not None else None
            fit, candidates = fit_best(
                request, candidates, pool, limits, parameters, notify, design_of
            )
            fit_s += time.perf_counter() - began_fit
        if not wants_repair(
            request.repair,
            request.domain,
            valid_but_the_picture(candidates[0].report),
            len(repairs),
        ):
            break
        round_ = len(repairs) + 1
        failed = candidates[0]
        notify("repairing", round_, request.repair)
        begun = time.perf_counter()
        again = sample_programs(
            request,
            loaded,
            notify,
            messages=repair_messages(request, (failed.program, failed.report)),
            seed=repair_seed(settings.seed, round_),
        )
        sampled_at = time.perf_counter()
        fresh = rank_programs(
            request, again, pool, notify, limits, parameters, len(candidates), round_
        )
        candidates = merge_ranked(candidates, fresh)
        tokens += sum(s.tokens for s in again)
        repairs.append(
            RepairRound(
                round=round_,
                repaired=failed.index,
                error=error_of(failed.report),
                candidates=len(fresh),
                valid=sum(c.valid for c in fresh),
                generate_s=round(sampled_at - begun, 4),
                validate_s=round(time.perf_counter() - sampled_at, 4),
            )
        )
    repaired = time.perf_counter()
    if request.images and request.domain in ("cad", "scene"):
        candidates = settle_candidates(candidates, pool, limits)
    settled = time.perf_counter()
    best = candidates[0]
    valid = sum(c.valid for c in candidates)
    notify("done", valid, len(candidates))
    return GenerationResult(
        program=best.program,
        report=best.report,
        candidates=candidates,
        sampling=settings.to_dict(),
        seed=settings.seed,
        model_id=loaded.model_id,
        weights_sha256=loaded.weights_sha256,
        timings={
            "generate_s": round(generated - checked_at, 4),
            "pool_wait_s": round(ready - generated, 4),
            "gallery_s": round(checked_at - started, 4),  # its parts checked before sampling
            "validate_s": round(validated - ready, 4),
            "repair_s": round(repaired - validated - fit_s, 4),
            "fit_s": round(fit_s, 4),
            "settle_s": round(settled - repaired, 4),
        },
        generated_tokens=tokens,
        repairs=repairs,
        fit=fit.to_dict() if fit is not None else None,
        look_alike=shown_from(look_alike, checked),
    )


def shown_from(look_alike: str | None, checked: list[Candidate]) -> dict[str, Any] | None:
    """The look-alike a model was shown, and the gallery entry it is (None when none was)."""
    chosen = next((c for c in checked if c.program == look_alike), None)
    if chosen is None:
        return None
    return {"program": chosen.program, "retrieved_from": chosen.retrieved_from}


def settle_candidates(
    candidates: list[Candidate], pool: Any, limits: Any | None = None
) -> list[Candidate]:
    """The candidates of a picture request, with every one that passed marked NOT AS ASKED
    when the picture also fits a different part as well as the best (settle.py); unchanged,
    and in the same order, otherwise."""
    changed = settle([(c.index, c.program, c.report) for c in candidates], pool, limits)
    return [
        replace(c, report=changed[c.index], valid=False) if c.index in changed else c
        for c in candidates
    ]


def wants_fit(rounds: int, domain: str, new: bool, pictured: bool, best: Report) -> bool:
    """Whether the best is fitted to its request (fit.py): asked for, a new part (an edit
    changes what its words ask and nothing else), and either sound but for sizes its words
    state, or from a picture and valid but perhaps for the picture."""
    if rounds <= 0 or not new or domain not in REPAIR_DOMAINS:
        return False
    sizes = bool(sizes_off(best)) and missed_only_the_request(best)
    return sizes or (pictured and valid_but_the_picture(best))


def fit_best(
    request: GenerationRequest,
    candidates: list[Candidate],
    pool: Any,
    limits: Any | None = None,
    parameters: dict[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    design_of: Callable[[str | None], str | None] | None = None,
) -> tuple[Fit, list[Candidate]]:
    """Fit the best candidate to the request (fit.py: its stated sizes, its picture), and with
    a picture the next best ones of other designs too (fit.fit_starts; `design_of` gives a
    gallery part's design from its entry id); the candidates with each fitted one added, in
    rerank's order, and the record of the fit that came out first."""
    picture = list(request.images) or None  # one picture, or several of one part
    ranked = [(c.program, valid_but_the_picture(c.report)) for c in candidates]
    designs = [design_of(c.retrieved_from) if design_of else None for c in candidates]
    starts = [candidates[i] for i in fit_starts(ranked, picture is not None, designs=designs)]
    if progress is not None:
        progress("fitting", 0, len(starts) * request.fit)
    fits: list[tuple[Fit, Candidate]] = []
    fitted: list[Candidate] = []
    next_index = max(c.index for c in candidates) + 1
    for number, start in enumerate(starts):
        fit = fit_candidate(
            request.domain, pool, picture, start.program, start.report, request.prompt,
            request.fit, keep=set(parameters or ()),
            progress=_fit_progress(progress, number, len(starts)),
            spec=request.spec, asked=request.asked(), limits=limits, parameters=parameters,
        )  # fmt: skip
        fit.starts = len(starts)
        fits.append((fit, start))
        if fit.scored is None:
            continue
        scored = fit.scored.record
        fitted.append(
            Candidate(
                fit.program, scored.reward, scored.valid, next_index, scored.report, "fitted",
                start.round, fitted_from=start.index,
            )
        )  # fmt: skip
        next_index += 1
    if not fitted:
        return fits[0][0], candidates
    if len(starts) == 1:  # the best, fitted: it meets the request better than it did
        return fits[0][0], [*fitted, *candidates]
    # A fitted candidate goes before any it ties with (its start among them): sorted is stable.
    ordered = sorted([*fitted, *candidates], key=lambda c: verdict_order(c.report))
    if ordered[0].fitted_from is not None:  # which fit serves: settle.served_fit
        chosen = fitted[served_fit([fit_rank(c.report) for c in fitted])]
        ordered = [chosen, *(c for c in ordered if c is not chosen)]
    record = next((f for f, s in fits if s.index == ordered[0].fitted_from), fits[0][0])
    return record, ordered


def _fit_progress(
    progress: ProgressCallback | None, number: int, starts: int
) -> Callable[[int, int], None] | None:
    """Fitting progress over all starts: start `number`'s round `done` of `total`."""
    if progress is None:
        return None
    return lambda done, total: progress("fitting", number * total + done, starts * total)
