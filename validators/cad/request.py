"""The `request` check: does the part have the sizes and counts its request asked for?

A served request has no spec but its words. genservice/generation/asked.py derives from them a
conservative list of items (what the words leave no doubt about); this module checks the items
against what was measured of the part (its bounding box, holes, solids), without knowing where
they came from. An item is plain JSON:

  {"what": "height", "value_mm": 40.0, "match": "about", "phrase": "40 mm tall"}
  {"what": "box", "values_mm": [80.0, 71.0, 4.0], "match": "about", "phrase": "80 × 71 × 4 mm"}
  {"what": "holes", "count": 6, "match": "at_least", "phrase": "six M5 bolt holes",
   "diameter_mm": 5.0, "diameter_max_mm": 6.25}
  {"what": "through_holes", "count": 4, "match": "at_least", "phrase": "four through holes"}
  {"what": "bored", "count": 1, "match": "at_least", "phrase": "washer"}
  {"what": "hollow", "phrase": "cup"}
  {"what": "round", "phrase": "round lid"}
  {"what": "hexagonal", "phrase": "hex nut"}

What each size means for the extents [x, y, z] of the bounding box (people do not say which
axis is the length and which the width, so only a height is tied to an axis):

- height: z; length, width, depth, across: some extent, each its own (a "length 80, width 80"
  part needs two extents of 80); largest: the largest extent ("largest side 80", "about 120 mm
  overall", "30 mm in size");
- thickness: the thinnest extent, or z;
- diameter: two extents, and round seen along the third axis (a disc, a rod: its outline fills
  at most ROUND_FILL of their square, `outline_fill` in the metrics; a square post of that width
  is not round), or one extent with the other two larger (a bent tube);
- box: the extents in any order (a pair: two of them);
- holes: at least that many round holes (validators/cad/measurer.py says what a hole is);
  with `diameter_mm`, holes of that diameter (within the tolerance; a counterbored hole counts
  by either of its bores), or with `diameter_max_mm` too, of a diameter in that range (an M5
  bolt's hole may be tapped at 5 or drilled for clearance up to 6.25); objects: at least that
  many solids; through_holes: at least that many ways right through the part (the genus of its
  surface: a plate's through holes, a washer's or a pipe's bore, not a cup's; mesh.py); bored:
  at least that many holes or ways through (a split collar's bore is a hole, a pipe bend's a way
  through); hollow: the part fills at most HOLLOW_FILL of its convex hull (a cup, a tray, a bin
  is no lump: `fill` in the metrics); round: seen along some axis the part is round, its other
  two extents alike and its outline filling at most ROUND_FILL of their square (a round lid, a
  round trivet: not a square one); hexagonal: seen along some axis its outline has six straight
  sides (`outline_sides` in the metrics: a hex nut, not a round one); rectangular: seen along its
  most telling axis (a plate's thickness, a bar's length: the extent least like the other two)
  its outline has four straight sides and fills at least SQUARE_FILL of their rectangle (a
  rectangular tab, not a disc or a round-ended strap); square: rectangular, and the two
  extents it shows alike (a square tile).

`about` is within TOLERANCE (relative, with an absolute floor); `at_least` is a lower bound
(the extent is at least the size, less the tolerance), for sizes of a thing that may have more
sticking out of it. The check passes when every item does; its score is the mean of the items'
(1 when met, else how close). Each item's detail says, in words, what was measured and asked:
"height 4 mm, asked 40 mm".

Whether a failed `request` makes a Report invalid is validate.py's call (it gates, like `spec`:
a served Report never says VALID for the wrong thing); `geometry_sound` in the metrics keeps the
other half of the verdict, and `missed_only_the_request` tells the one from the other. A request
with a picture is judged by its picture too (the `image_match` check, added when serving it):
a sound part that does not look like the picture is NOT AS ASKED in the same way.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from validators.report import Check, Report

SIZES = ("height", "length", "width", "depth", "thickness", "diameter", "across", "largest", "box")
COUNTS = ("holes", "objects", "through_holes", "bored")
SHAPES = ("hollow", "round", "hexagonal", "rectangular", "square")
# A hollow thing (a cup, a tray) fills at most this share of its convex hull; a lump of the same
# outline fills all of it (a solid cylinder 1.0, a cup with 5 mm walls about 0.3).
HOLLOW_FILL = 0.7
# A diameter's outline is round: seen along its axis the part fills at most this share of the
# square of its two extents (a disc pi / 4 = 0.785, an octagon 0.83, a square or a rounded-corner
# box nearly all of it; `outline_fill` in the metrics).
ROUND_FILL = 0.83
# A rectangle's outline fills its box; a rounded-corner one nearly (r = a tenth of its width:
# 99 %), a round-ended strap far less (86 % or under), a disc 79 %.
SQUARE_FILL = 0.9
_MEASURED = {"holes": "holes", "objects": "solids", "through_holes": "through_holes"}
MATCHES = ("about", "at_least")
TOLERANCE = 0.05  # relative: a request's sizes are a person's words, not a drawing's
FLOOR_MM = 0.2  # absolute floor of the tolerance, for small sizes
FREE = ("length", "width", "depth", "across")  # one extent each, in any orientation
# Checks that judge against what was asked; `request` (the words) and `image_match` (the picture,
# added when serving a request with one) are what the request itself asked.
JUDGED = ("spec", "request", "similarity", "image_match")
ASKED = ("request", "image_match")


def check_request(items: Any) -> list[dict[str, Any]]:
    """Validate a list of request items; raise ValueError saying what to fix."""
    if not isinstance(items, list):
        raise ValueError("request must be a list of items")
    for item in items:
        if not isinstance(item, dict) or item.get("what") not in (*SIZES, *COUNTS, *SHAPES):
            kinds = SIZES + COUNTS + SHAPES
            raise ValueError(f"request item {item!r}: 'what' must be one of {kinds}")
        if item.get("match", "about") not in MATCHES:
            raise ValueError(f"request item {item!r}: 'match' must be one of {MATCHES}")
        what = item["what"]
        if what == "box":
            values = item.get("values_mm")
            if not (isinstance(values, list) and len(values) in (2, 3)):
                raise ValueError(f"request item {item!r}: a box needs values_mm, 2 or 3 sizes")
            if not all(_positive(v) for v in values):
                raise ValueError(f"request item {item!r}: values_mm must be positive numbers")
        elif what in SIZES and not _positive(item.get("value_mm")):
            raise ValueError(f"request item {item!r}: value_mm must be a positive number")
        count = item.get("count")
        if what in COUNTS and not (isinstance(count, int) and not isinstance(count, bool)):
            raise ValueError(f"request item {item!r}: count must be a whole number")
        for key in ("diameter_mm", "diameter_max_mm"):
            if key in item and (what != "holes" or not _positive(item[key])):
                raise ValueError(f"request item {item!r}: {key} must be a positive number of holes")
        if "diameter_max_mm" in item and item["diameter_max_mm"] < item.get("diameter_mm", 0):
            raise ValueError(f"request item {item!r}: diameter_max_mm needs a smaller diameter_mm")
    return items


def request_check(asked: list[dict[str, Any]], metrics: Mapping[str, Any]) -> Check | None:
    """The `request` check of a part's measured metrics (bbox_mm, holes and their diameters,
    solids, through holes, fill) against the items its request asked; None when nothing was
    asked."""
    if not asked:
        return None
    extents = [float(v) for v in metrics["bbox_mm"]]
    results = [_judge(item, extents, metrics) for item in asked]
    _assign_free(asked, results, extents)
    passed = all(r["ok"] for r in results)
    missed = [r["note"] for r in results if not r["ok"]]
    detail = {
        "items": results,
        "summary": "; ".join(missed) if missed else "as asked",
        "tolerance": TOLERANCE,
        "extents_mm": [round(e, 3) for e in extents],
    }
    return Check(sum(r["score"] for r in results) / len(results), passed, detail)


def missed_only_the_request(report: Report) -> bool:
    """Whether a Report is invalid only because the part is not what its request asked: sound
    geometry, a spec and reference (if any) met, and the `request` check (its words) or the
    `image_match` check (its picture) failed. Such a part is still shown, with what is off; it
    is never called valid."""
    asked = [report.checks[name] for name in ASKED if name in report.checks]
    if report.valid or all(c.passed for c in asked):
        return False
    others = [report.checks[n] for n in JUDGED if n in report.checks and n not in ASKED]
    return bool(report.metrics.get("geometry_sound")) and all(c.passed for c in others)


def sizes_off(report: Report) -> tuple[float, ...]:
    """The factors (asked over measured) that would bring each size the `request` check found
    off to what the words ask; empty when the check passed or was not run, or when something
    other than a size is off (a count, a shape: no scaling makes those right)."""
    check = report.checks.get("request")
    if check is None or check.passed:
        return ()
    missed = [item for item in check.detail.get("items", []) if not item.get("ok")]
    if not missed or any(item.get("what") not in SIZES for item in missed):
        return ()
    extents = [float(e) for e in check.detail.get("extents_mm", [])]
    factors: set[float] = set()
    for item in missed:
        have, want = item.get("measured"), item.get("asked")
        pairs = zip(have, want, strict=False) if isinstance(have, list) else [(have, want)]
        if item["what"] in (*FREE, "diameter"):  # any extent may be the one meant
            pairs = [(extent, want) for extent in extents]
        for measured, asked in pairs:
            if _positive(measured) and _positive(asked) and not _near(measured, asked):
                factors.add(round(float(asked) / float(measured), 6))
    return tuple(sorted(factors))


def size_targets(report: Report) -> dict[int, float]:
    """The size the words ask along each axis (0 x, 1 y, 2 z) that the `request` check judged
    one of its `about` sizes by, met or not: a box's sizes go to the extents in the order of
    their size (any orientation), a height to z, any other size to the extent it was measured
    on. Empty without the check. A fit moves the part's extents toward these together."""
    check = report.checks.get("request")
    if check is None:
        return {}
    extents = [float(e) for e in check.detail.get("extents_mm", [])]
    if len(extents) != 3:
        return {}
    targets: dict[int, float] = {}
    by_size = sorted(range(3), key=lambda axis: -extents[axis])
    for item in check.detail.get("items", []):
        what, want, have = item.get("what"), item.get("asked"), item.get("measured")
        if what not in SIZES or item.get("match", "about") != "about":
            continue
        if what == "box" and isinstance(want, list) and len(want) == 3:
            targets.update((axis, float(w)) for axis, w in zip(by_size, want, strict=True))
        elif what == "height" and _positive(want):
            targets[2] = float(want)
        elif _positive(want) and _positive(have):
            free = [axis for axis in range(3) if axis not in targets] or [0, 1, 2]
            axis = min(free, key=lambda a: abs(extents[a] - float(have)))
            targets[axis] = float(want)
    return targets


def what_is_off(report: Report) -> str:
    """In words, what of the request a part misses ("height 4 mm, asked 40 mm"; "it does not
    look like the picture ..."); empty when nothing is."""
    missed = []
    request, picture = report.checks.get("request"), report.checks.get("image_match")
    if request is not None and not request.passed:
        missed.append(str(request.detail.get("summary", "")))
    if picture is not None and not picture.passed:
        missed.append(picture_note(picture))
    return "; ".join(m for m in missed if m)


def picture_note(check: Check) -> str:
    """The `image_match` check in words."""
    limit = check.detail.get("pass")
    reason = check.detail.get("reason")
    if reason:
        return f"it cannot be compared with the picture ({reason})"
    rivals = check.detail.get("rivals")
    if rivals:  # genservice/generation/settle.py: the picture does not settle the part
        rival = rivals[0]
        which = f"candidate {rival['candidate']}" if "candidate" in rival else "another candidate"
        return (
            f"the picture fits a different part as well ({which} matches {rival['match']:.2f}, "
            f"this one {check.score:.2f}; the two share {rival['shared']:.0%} of their volume): "
            "a picture from another side, or the sizes in words, would settle which"
        )
    passes = f", passes at {float(limit):.2f}" if isinstance(limit, int | float) else ""
    return f"it does not look like the picture (match {check.score:.2f}{passes})"


def _judge(item: dict[str, Any], extents: list[float], metrics: Mapping[str, Any]) -> dict:
    """One item's verdict (free sizes get their extent in `_assign_free`)."""
    what, match = item["what"], item.get("match", "about")
    result: dict[str, Any] = {"what": what, "match": match, "phrase": item.get("phrase", "")}
    if what == "hollow":
        fill = float(metrics.get("fill", 1.0))
        ok = fill <= HOLLOW_FILL
        note = f"fills {fill:.0%} of its outline"
        note += "" if ok else f", not hollow ({result['phrase']})"
        score = 1.0 if ok else max(0.0, (1 - fill) / (1 - HOLLOW_FILL))
        measured = round(fill, 3)
        return {**result, "asked": HOLLOW_FILL, "measured": measured, "ok": ok, "score": score,
                "note": note}  # fmt: skip
    if what == "round":
        return _round(result, extents, metrics.get("outline_fill"))
    if what == "hexagonal":
        return _hexagonal(result, metrics.get("outline_sides"))
    if what in ("rectangular", "square"):
        return _rectangular(
            result, extents, metrics.get("outline_fill"), metrics.get("outline_sides")
        )
    if what in COUNTS:
        wanted = int(item["count"])
        if what == "bored":  # a bore, or a way right through that no cylinder makes (a bend)
            noun = "bores or ways through"
            have = max(int(metrics.get("holes") or 0), int(metrics.get("through_holes") or 0))
        elif what == "holes" and "diameter_mm" in item:
            noun = f"holes of {_sized(item)}"
            have = sum(1 for hole in metrics.get("hole_diameters_mm") or [] if _fits(item, hole))
        else:
            have = int(metrics.get(_MEASURED[what]) or 0)
            noun = _MEASURED[what].replace("_", " ")
        ok = have >= wanted
        score = 1.0 if ok else have / wanted if wanted else 0.0
        note = f"{have} {noun}, asked {wanted}" + ("" if ok else f" ({result['phrase']})")
        return {**result, "asked": wanted, "measured": have, "ok": ok, "score": score,
                "note": note}  # fmt: skip
    if what == "box":
        want_box = sorted((float(v) for v in item["values_mm"]), reverse=True)
        have_box = sorted(extents, reverse=True)
        if len(want_box) == 2 and match == "about":
            ok = any(
                all(_near(extents[i], w) for i, w in zip(pair, want_box, strict=True))
                for pair in itertools.permutations(range(3), 2)
            )
        elif match == "about":
            ok = all(_near(h, w) for h, w in zip(have_box, want_box, strict=True))
        else:
            ok = all(_above(h, w) for h, w in zip(have_box, want_box, strict=False))
        # How far the closest assignment of extents to the asked sizes is (each extent used
        # once: 100 × 30 × 30 is far from a 100 × 100 plate, though 100 is one of them).
        error = min(
            max(abs(extents[i] - w) / w for i, w in zip(axes, want_box, strict=False))
            for axes in itertools.permutations(range(3), len(want_box))
        )
        score = 1.0 if ok else max(0.0, min(0.99, 1 - error))
        note = f"size {_mm(have_box)}, asked {_mm(want_box)}"
        return {**result, "asked": want_box, "measured": have_box, "ok": ok, "score": score,
                "note": note}  # fmt: skip
    want = float(item["value_mm"])
    result["asked"] = want
    if what == "height":
        return _verdict(result, extents[2], want, match)
    if what == "largest":  # "largest side 80", "about 120 mm overall", "30 mm in size"
        return _verdict(result, max(extents), want, match)
    if what == "thickness":
        thinnest = min(extents)
        if match == "at_least" or (not _near(thinnest, want) and _near(extents[2], want)):
            return _verdict(result, extents[2], want, match)  # a sleeve's thickness is its z
        return _verdict(result, thinnest, want, match)
    if what == "diameter":
        near = sorted(extents, key=lambda e: abs(e - want))
        if match == "at_least":
            return _verdict(result, sorted(extents)[1], want, match)  # the two largest
        pairs = [
            (a, b)
            for a, b in itertools.combinations(range(3), 2)
            if _near(extents[a], want) and _near(extents[b], want)
        ]
        if pairs:  # a disc: two extents of the diameter, and round seen along the third axis
            fills = metrics.get("outline_fill")
            if not fills:
                return _verdict(result, near[0], want, match, ok=True)
            fill, axis = _roundest(fills, pairs)
            if fill <= ROUND_FILL:
                return _verdict(result, near[0], want, match, ok=True)
            square = _mm([extents[a] for a in range(3) if a != axis])
            note = (
                f"not round: seen along {'xyz'[axis]} it fills {fill:.0%} of its {square} "
                f"square (a circle {math.pi / 4:.0%}), asked {result['phrase']}"
            )
            score = max(0.0, min(1.0, (1 - fill) / (1 - ROUND_FILL)))
            return {**result, "measured": round(near[0], 3), "outline_fill": fill, "ok": False,
                    "score": score, "note": note}  # fmt: skip
        bent = _near(near[0], want) and all(_above(e, want) for e in near[1:])
        if bent:  # a bent tube: one extent of the diameter, the other two larger
            return _verdict(result, near[0], want, match, ok=True)
        return _verdict(result, near[0] if not _near(near[0], want) else near[1], want, match)
    if match == "at_least":
        return _verdict(result, max(extents), want, match)
    nearest = min(extents, key=lambda e: abs(e - want))
    return _verdict(result, nearest, want, match)  # one of FREE: `_assign_free` settles it


def _round(result: dict[str, Any], extents: list[float], fills: Any) -> dict[str, Any]:
    """A "round" item: an axis along which the part is round (two alike extents, an outline
    that fills at most ROUND_FILL of their square); unjudged when the outline was not measured."""
    if not fills:
        return {**result, "ok": True, "score": 1.0, "note": "round: not measured"}
    alike = [
        (a, b)
        for a, b in itertools.combinations(range(3), 2)
        if _near(max(extents[a], extents[b]), min(extents[a], extents[b]))
    ]
    fill, axis = _roundest(fills, alike) if alike else (min(float(f) for f in fills), -1)
    ok = axis >= 0 and fill <= ROUND_FILL
    where = f"seen along {'xyz'[axis]} it fills {fill:.0%} of its square" if axis >= 0 else (
        "no two of its extents are alike"
    )  # fmt: skip
    note = (
        f"round: {where}"
        if ok
        else f"not round: {where} (a circle {math.pi / 4:.0%}; {result['phrase']})"
    )
    score = 1.0 if ok else max(0.0, min(1.0, (1 - fill) / (1 - ROUND_FILL))) * (axis >= 0)
    return {**result, "asked": ROUND_FILL, "measured": round(fill, 3), "ok": ok, "score": score,
            "note": note}  # fmt: skip


def _roundest(fills: Any, pairs: list[tuple[int, int]]) -> tuple[float, int]:
    """The least outline fill seen along the axis each pair of extents leaves, and that axis."""
    return min((float(fills[3 - a - b]), 3 - a - b) for a, b in pairs)


def _hexagonal(result: dict[str, Any], sides: Any) -> dict[str, Any]:
    """A "hexagonal" item: an axis along which the outline has six straight sides; unjudged
    when the outline was not measured."""
    if not sides:
        return {**result, "ok": True, "score": 1.0, "note": "hexagonal: not measured"}
    ok = 6 in sides
    counted = ", ".join(str(int(n)) for n in sides)
    note = "hexagonal" if ok else f"not hexagonal: its outlines have {counted} straight sides"
    note += "" if ok else f" ({result['phrase']})"
    return {**result, "asked": 6, "measured": list(sides), "ok": ok, "score": float(ok),
            "note": note}  # fmt: skip


def _rectangular(
    result: dict[str, Any], extents: list[float], fills: Any, sides: Any
) -> dict[str, Any]:
    """A "rectangular" or "square" item: seen along the extent least like the other two, four
    straight sides filling their rectangle (and, for a square, the two alike); unjudged when
    the outline was not measured."""
    what = result["what"]
    if not fills or not sides:
        return {**result, "ok": True, "score": 1.0, "note": f"{what}: not measured"}
    axis = max(range(3), key=lambda k: abs(math.log(_telling(extents, k))))
    a, b = (extents[k] for k in range(3) if k != axis)
    fill, straight = float(fills[axis]), int(sides[axis])
    ok = straight == 4 and fill >= SQUARE_FILL
    alike = _near(max(a, b), min(a, b))
    where = f"seen along {'xyz'[axis]} its outline has {straight} straight sides, fills {fill:.0%}"
    if what == "square" and ok and not alike:
        ok, where = False, f"seen along {'xyz'[axis]} it is {_mm([max(a, b), min(a, b)])}"
    note = f"{what}: {where}" if ok else f"not {what}: {where} ({result['phrase']})"
    score = 1.0 if ok else 0.5 * min(1.0, fill / SQUARE_FILL)
    return {**result, "asked": SQUARE_FILL, "measured": round(fill, 3), "ok": ok, "score": score,
            "note": note}  # fmt: skip


def _telling(extents: list[float], k: int) -> float:
    """How unlike the other two the extent along axis k is (its ratio to their geometric mean)."""
    a, b = (max(extents[j], 1e-9) for j in range(3) if j != k)
    return max(extents[k], 1e-9) / math.sqrt(a * b)


def _fits(item: dict[str, Any], diameters: list[float]) -> bool:
    """Whether a hole (the diameters of its bores) has the diameter the item asks."""
    low = float(item["diameter_mm"])
    high = float(item.get("diameter_max_mm", low))
    return any(_above(d, low) and _above(high, d) for d in diameters)


def _sized(item: dict[str, Any]) -> str:
    low, high = float(item["diameter_mm"]), item.get("diameter_max_mm")
    return f"Ø{low:g}" if high is None else f"Ø{low:g}–{float(high):g}"


def _assign_free(asked: list[dict[str, Any]], results: list[dict], extents: list[float]) -> None:
    """Give each `about` height and free size its own extent (a height has z), the most items
    met; an item left without one fails, saying which extent the others took."""
    index = [
        i
        for i, item in enumerate(asked)
        if item.get("match", "about") == "about" and item["what"] in ("height", *FREE)
    ]
    if len(index) < 2:
        return
    options = []
    for i in index:
        want = float(asked[i]["value_mm"])
        axes = [2] if asked[i]["what"] == "height" else [0, 1, 2]
        options.append([a for a in axes if _near(extents[a], want)] + [None])
    best: tuple[Any, ...] = ()
    for choice in itertools.product(*options):
        taken = [a for a in choice if a is not None]
        if len(taken) == len(set(taken)) and len(taken) > sum(a is not None for a in best):
            best = choice
    for i, axis in zip(index, best or [None] * len(index), strict=True):
        result = results[i]
        if result["ok"] and axis is None:
            result.update(ok=False, score=0.5)
            result["note"] = (
                f"{result['what']}: no extent of {_mm(extents)} left for {_mm([result['asked']])}"
                f" (the others took it)"
            )


def _verdict(
    result: dict[str, Any], have: float, want: float, match: str, ok: bool | None = None
) -> dict[str, Any]:
    ok = (_near(have, want) if match == "about" else _above(have, want)) if ok is None else ok
    score = 1.0 if ok else max(0.0, 1 - abs(have - want) / want)
    note = f"{result['what']} {_mm([have])}, asked {_mm([want])}"
    return {**result, "measured": round(have, 3), "ok": ok, "score": score, "note": note}


def _near(have: float, want: float) -> bool:
    return abs(have - want) <= max(TOLERANCE * want, FLOOR_MM)


def _above(have: float, want: float) -> bool:
    return have >= want - max(TOLERANCE * want, FLOOR_MM)


def _mm(values: list[float]) -> str:
    shown = [f"{v:.2f}".rstrip("0").rstrip(".") for v in values]
    return " × ".join(shown) + " mm"


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )
