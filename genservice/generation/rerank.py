"""Best-of-N: validate every candidate on the sandbox pool and rank them by the validators' reward.

Only the validators choose: no reference shape is ever given (that would be an oracle, not a
service). Candidates run in parallel, one thread per pool worker (the pool hands each run to a
free worker); identical candidates are validated once.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from genservice.generation.asked import asked_items
from genservice.generation.stated import (
    asked_numbers,
    name_stems,
    named_numbers,
    shared,
    stated_numbers,
)
from validators.cad.program import ProgramError
from validators.report import Report

DOMAINS = ("cad", "scene", "code")


@dataclass(frozen=True)
class Scored:
    """A candidate program with its Report; `index` is its position among the candidates."""

    program: str
    report: Report
    reward: float
    index: int
    preview: bytes | None = None  # a small PNG of the part (CAD and scenes, when asked for)

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
    time_budget_s: float | None = None,
    parameters: dict[str, Any] | None = None,
    limits: Any | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    asked: tuple[str, str | None] | None = None,
    request: list[dict[str, Any]] | None = None,
    preview_size: int | None = None,
    picture: Any | None = None,
) -> list[Scored]:
    """Validate all candidates in parallel; best first: valid ones, then by reward, then order.

    Validity leads because a sound part that misses the spec is invalid yet keeps a geometric
    reward, which can exceed a valid candidate's; the best must be valid whenever one is.
    `asked` = (the request's text, the previous program of an edit or None): each CAD or scene
    candidate is also checked against what the text asks (asked.py: sizes and counts its words
    leave no doubt about; an edit's absolute sizes only), so a candidate that matches the request
    is valid and one that ignores it is not: the matching one wins. Among equally
    rewarded candidates, those whose parameters take the numbers asked for come first
    (see `adherence`), and of those, the ones whose parameters the request's words name
    (see `labelled`: "8 mm thick" in `thickness`, not in `bolt_count`); for an edit, then the
    one that changes the fewest lines of the previous program (see `changed_lines`).
    `request`: items to check instead of those `asked` gives (a manual edit is judged against
    the request its session stands on, see tasks.standing_request).
    `preview_size`: also draw each CAD or scene candidate that built geometry, one iso view of
    that many pixels (`Scored.preview`), from the same tessellation the checks measured.
    `picture`: the request's picture (PIL), its pictures (a list: several of one part), or
    them read (image_match.as_target); each CAD or scene candidate gains the `image_match`
    check (image_match.py; a sound part unlike the picture is NOT AS ASKED, see
    `with_image_match`), and among candidates alike in validity the closer match ranks first:
    for a request from a picture, looking like it is the point.
    """
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, not {domain!r}")
    if domain == "code" and (tests is None or not entry_point):
        raise ValueError("code candidates need tests and an entry_point to be validated")
    if domain != "code" and (tests is not None or entry_point):
        raise ValueError("tests and entry_point apply to the code domain only")

    def validate(program: str) -> tuple[Report, bytes | None]:
        if domain == "code":
            from validators.code.validate import validate_code

            code = validate_code(
                program,
                pool,
                tests=str(tests),
                entry_point=str(entry_point),
                limits=limits,
                time_budget_s=time_budget_s,
            )
            return code, None
        from validators.cad.validate import run_cad

        run = run_cad(
            program,
            pool,
            spec=spec,
            parameters=parameters,
            limits=limits,
            domain=domain,
            request=request,
        )
        drawn = preview(run.payload, preview_size) if preview_size and run.payload else None
        report = run.report
        if target is not None and run.payload:
            report = with_image_match(report, target, run.payload)
        return report, drawn

    if request is None:
        request = request_items(asked, domain)
    target = None
    if picture is not None and domain != "code":
        from genservice.generation.image_match import as_target

        target = as_target(picture)

    unique = list(dict.fromkeys(candidates))
    reports: dict[str, Report] = {}
    previews: dict[str, bytes | None] = {}
    if unique:
        threads = max(1, min(len(unique), workers or getattr(pool, "size", 1) or 1))
        with ThreadPoolExecutor(max_workers=threads) as executor:
            futures = {executor.submit(validate, program): program for program in unique}
            for done, future in enumerate(as_completed(futures), start=1):
                program = futures[future]
                reports[program], previews[program] = future.result()
                if progress is not None:
                    progress(done, len(unique))
    scored = [
        Scored(program, reports[program], reports[program].reward, index, previews[program])
        for index, program in enumerate(candidates)
    ]
    agree: dict[str, tuple[int, int, int]] = {}
    if asked and domain != "code":
        agree = {
            c: (-adherence(c, *asked), -labelled(c, *asked), changed_lines(c, asked[1]))
            for c in unique
        }
    return sorted(
        scored,
        key=lambda s: (*verdict_order(s.report), *agree.get(s.program, (0, 0, 0)), s.index),
    )


def verdict_order(report: Report) -> tuple[bool, bool, float, float]:
    """How a Report ranks, best first: valid, then valid but for the picture, then how much it
    looks like the picture, then reward (rerank then breaks ties by the request's words)."""
    return (not report.valid, not valid_but_the_picture(report), -match_score(report),
            -report.reward)  # fmt: skip


def fit_rank(report: Report) -> tuple[tuple[bool, bool], float]:
    """A fitted candidate as settle.served_fit weighs it: its verdict, then its match."""
    return verdict_order(report)[:2], match_score(report)


def match_score(report: Report) -> float:
    """The `image_match` score of a Report (0 without the check)."""
    check = report.checks.get("image_match")
    return check.score if check is not None else 0.0


def with_image_match(report: Report, target: Any, payload: dict[str, Any]) -> Report:
    """The Report with the `image_match` check added. A part that passes every other check but
    does not look like the request's picture is not what was asked: it is NOT AS ASKED (invalid,
    `metrics.valid_but_for_the_picture`), never VALID. The reward is unchanged."""
    from exporters.parts import PartsError, parts_from_payload
    from exporters.render import RenderError
    from genservice.generation.image_match import PASS, image_match
    from validators.report import Check

    try:
        score, detail = image_match(target, parts_from_payload(payload))
    except (PartsError, RenderError) as exc:
        score, detail = 0.0, {"reason": str(exc), "pass": PASS}
    return with_picture_check(report, Check(score, score >= PASS, detail))


def with_picture_check(report: Report, check: Any) -> Report:
    """The Report with this `image_match` check; when it failed and the part passed every
    other check, NOT AS ASKED (invalid, `metrics.valid_but_for_the_picture`) with the check in
    words as its error. The reward is unchanged."""
    import dataclasses
    from types import MappingProxyType

    from validators.cad.request import picture_note
    from validators.report import ErrorInfo

    checks = MappingProxyType({**report.checks, "image_match": check})
    if check.passed or not report.valid:
        return dataclasses.replace(report, checks=checks)
    message = f"failed checks: image_match; not as asked: {picture_note(check)}"
    return dataclasses.replace(
        report,
        valid=False,
        checks=checks,
        error=ErrorInfo("check_failed", message),
        metrics=MappingProxyType({**report.metrics, "valid_but_for_the_picture": True}),
    )


def match_pose(report: Report) -> Any:
    """The camera (azimuth, elevation, lens) a Report's part matched its picture from, or for
    several pictures one such camera (or None) each; None without one (no picture, a rig
    picture: four cameras). What image_match's Target.seen_from takes."""
    check = report.checks.get("image_match")
    return _frozen(check.detail.get("pose")) if check is not None else None


def _frozen(pose: Any) -> Any:
    """A pose from a check's detail as tuples of floats (None stays None)."""
    if pose is None:
        return None
    if isinstance(pose, list | tuple):
        return tuple(_frozen(v) for v in pose)
    return float(pose)


def valid_but_the_picture(report: Report) -> bool:
    """Whether a Report passes every check, `image_match` perhaps excepted: a part the fit may
    bring closer to its picture, and one that needs no repair."""
    return report.valid or bool(report.metrics.get("valid_but_for_the_picture"))


def preview(payload: dict[str, Any], size: int) -> bytes | None:
    """A PNG of a sandbox payload's parts from the iso view; None when it cannot be drawn."""
    from exporters.parts import PartsError, parts_from_payload
    from exporters.render import RenderError, png_bytes, render

    try:
        return png_bytes(render(parts_from_payload(payload), ["iso"], size))
    except (PartsError, RenderError):
        return None


def request_items(asked: tuple[str, str | None] | None, domain: str) -> list[dict[str, Any]] | None:
    """The `request` check's items for what was asked (text, previous program of an edit or
    None): for an edit, only the absolute sizes its words give; None when nothing is asked."""
    if not asked or domain == "code":
        return None
    return asked_items(asked[0], domain, edit=asked[1] is not None) or None


def adherence(program: str, text: str, previous: str | None = None) -> int:
    """How many of the request's numbers the candidate's parameters take, judged from the texts
    alone (a blind signal: no reference). For an edit, only numbers the previous program did
    not have count, and an unchanged program scores -1: "make it 12 mm thick" prefers the
    candidate with a parameter of 12."""
    if previous is not None and program.strip() == previous.strip():
        return -1
    try:
        new = _numbers(program)
        old = _numbers(previous) if previous is not None else set()
    except ProgramError:
        return 0
    return sum(1 for number in asked_numbers(text) if number in new and number not in old)


def changed_lines(program: str, previous: str | None) -> int:
    """How many lines an edit rewrites, adds or drops against the previous program (0 for a new
    request): a refinement changes what was asked and leaves the rest of the program alone, so
    of two candidates that both make "12 mm thick", the one that also rewrote the derived bore
    as a number is the worse."""
    if previous is None:
        return 0
    old, new = previous.strip().splitlines(), program.strip().splitlines()
    opcodes = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")


def _numbers(source: str) -> set[float]:
    """The numeric values of a program's top-level parameters."""
    return set(named_numbers(source).values())


def labelled(program: str, text: str, previous: str | None = None) -> int:
    """How many of the request's numbers sit in a parameter that the words around the number
    name (a stem in common: "8 mm thick" and `thickness`), judged from the texts alone. For an
    edit, only parameters the previous program did not already have at that value count."""
    try:
        params = named_numbers(program)
        old = named_numbers(previous) if previous is not None else {}
    except ProgramError:
        return 0
    score = 0
    for stated in stated_numbers(text):
        names = [n for n, v in params.items() if v == stated.value and old.get(n) != v]
        if any(shared(stated.stems, name_stems(name)) for name in names):
            score += 1
    return score
