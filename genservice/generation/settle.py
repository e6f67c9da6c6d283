"""Whether a picture settles which part it shows: VALID only when no different part fits it too.

One picture leaves a part's depth along the line of sight open and hides whatever faces away
from the camera: a tray seen edge-on is a rectangle, and so is a slot seen from above; a knob
seen from above hides whether its underside is solid or hollowed out. `image_match` can only
say that a candidate looks like the picture, and a different part may look like it just as
much. Among a picture request's candidates that pass every check (the picture's included),
those that match within MARGIN of the best match are, by every blind check, equally good
answers. When any of them is a different shape from the best (volumetric IoU under
SAME_SHAPE, both centred and scaled to unit size as the similarity measures do), the picture
does not settle which part it shows. Then the `image_match` check of every candidate that
passed fails with the rivals named ("the picture fits a different part as well"): the best
and its rivals are equally good guesses, and the rest match worse than two different parts.
So the answer is NOT AS ASKED, never VALID, and says what would settle it: a picture from
another side (image_match scores several pictures of one part together) or the sizes in
words (which rule out rivals of the wrong size). Every candidate keeps its place: the served
part is the same part as before; only its verdict changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from validators.report import Check, Report

MARGIN = 0.02  # image_match within which two candidates are equally good answers
SAME_SHAPE = 0.7  # volumetric IoU at or above which two candidates are one part
MAX_RIVALS = 8  # candidates compared with the best at most (the closest matches first)
# How much better a later start's fit must match to be served over an earlier one's. MARGIN
# (keep the earlier start where the check cannot tell) was measured and did not pay: within
# noise on the fit set, worse on hand-drawn pictures (docs/pictures.md, "Which fit is served").
SERVE_WITHIN = 0.0

Shape = Callable[[str], Any]  # a program -> its combined mesh (trimesh), None when it fails


def rivals(
    entries: Sequence[tuple[str, float]], shape: Shape, workers: int = 1
) -> list[dict[str, Any]]:
    """The rivals of the best of `entries` ((program, image_match) of candidates that pass
    every check, the picture's included): those matching within MARGIN of it whose shape is
    another part's, each as {"entry": its index, "match": its score, "shared": the IoU of the
    two}; [] when the picture settles the part. The shapes are built `workers` at a time."""
    if len(entries) < 2:
        return []
    order = sorted(range(len(entries)), key=lambda i: -entries[i][1])
    best = order[0]
    top_program, top_match = entries[best]
    near = [i for i in order[1:] if entries[i][1] >= top_match - MARGIN][:MAX_RIVALS]
    if not near:
        return []
    programs = [top_program] + [entries[i][0] for i in near]
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(programs)))) as threads:
        top_shape, *shapes = threads.map(shape, programs)
    if top_shape is None:
        return []
    found = []
    for i, other in zip(near, shapes, strict=True):
        program, match = entries[i]
        if program == top_program:
            continue
        shared = _shared(top_shape, other)
        if shared is not None and shared < SAME_SHAPE:
            found.append({"entry": i, "match": round(float(match), 4), "shared": round(shared, 3)})
    return found


def served_fit(fits: Sequence[tuple[Any, float]], within: float | None = None) -> int:
    """Which of a picture request's fits (in start order, best-ranked start first: each its
    verdict order, best lowest, and its image_match) is served: of the fits of the best
    verdict, the earliest start whose match is within `within` (SERVE_WITHIN) of the best.

    With 0 the highest match serves (ties: the earlier start). With MARGIN, a later start's
    fit serves only when it matches clearly better: a fit climbs the score that judges it,
    and within MARGIN the check scores different parts alike (bench/served_fit.py compares)."""
    within = SERVE_WITHIN if within is None else within
    best = min(order for order, _ in fits)
    top = max(match for order, match in fits if order == best)
    return next(i for i, (order, match) in enumerate(fits)
                if order == best and match >= top - within)  # fmt: skip


def _shared(a: Any, b: Any) -> float | None:
    """The volumetric IoU of two meshes centred and scaled to unit size (None when either
    cannot be compared)."""
    from validators.cad import similarity

    if a is None or b is None:
        return None
    try:
        return float(similarity.iou(a, b))
    except ValueError:
        return None


def unsettled(report: Report, found: list[dict[str, Any]]) -> Report:
    """A Report whose picture does not settle the part: its `image_match` check fails with
    the rivals in its detail, and a part that passed every check is NOT AS ASKED (valid but
    for the picture), never VALID. The reward is unchanged."""
    from genservice.generation.rerank import with_picture_check

    check = report.checks.get("image_match")
    if check is None or not found:
        return report
    detail = {**check.detail, "rivals": found, "settled": False}
    return with_picture_check(report, Check(check.score, False, detail))


def settle(
    candidates: Sequence[tuple[int, str, Report]], pool: Any, limits: Any = None
) -> dict[int, Report]:
    """The Reports a picture request's candidates ((index, program, Report)) change to: when
    the picture fits a different part as well as the best, every one that passed, marked
    `unsettled` with the rivals named by index; {} when the picture settles the part."""
    passing = [(i, p, r) for i, p, r in candidates if r.valid and "image_match" in r.checks]
    entries = [(program, report.checks["image_match"].score) for _, program, report in passing]
    found = rivals(entries, built_shape(pool, limits), getattr(pool, "size", 1))
    if not found:
        return {}
    named = [{"candidate": passing[r["entry"]][0], "match": r["match"], "shared": r["shared"]}
             for r in found]  # fmt: skip
    return {index: unsettled(report, named) for index, _, report in passing}


def built_shape(pool: Any, limits: Any = None) -> Shape:
    """A Shape that runs a program on the sandbox pool for its combined mesh (memoised; safe
    to call from several threads, as the pool is)."""
    from validators.cad.mesh import combine, decode_mesh

    cache: dict[str, Any] = {}

    def shape(program: str) -> Any:
        if program not in cache:
            built = pool.run("cad", program, {"check_self_intersection": False}, limits)
            parts = (built.payload or {}).get("parts") if built.ok else None
            cache[program] = combine([decode_mesh(p.get("mesh")) for p in parts]) if parts else None
        return cache[program]

    return shape
