"""A grammar of CAD programs, part 3: L, T, U and C profiles, split rings and arcs.

Profiles (L, T, U and C sections) are drawn in XZ as polylines and extruded along y, with holes
in their flanges (mirrored across a T's web), gussets mirrored at an L's ends, axle holes through
a U's walls and rounded bends; a split ring (a C clip) and an arc segment (threePointArc) lie
flat. Their words do not say which way they lie, so their spec compares sizes in any
orientation. See grammar.py.
"""

from __future__ import annotations

import math
import random
from typing import Any

from training.corpus.grammar import (
    HOLE_SIZES,
    Draft,
    Phrase,
    a_,
    dia,
    edge_treatment,
    mm,
)
from training.corpus.phrasing import length, number, pick


def _profile(points: list[str]) -> list[str]:
    """The lines of a polyline profile, one point per line."""
    return ["profile = [", *[f"    {p}," for p in points], "]"]


def _hole_row(rng: random.Random, span: float, room_across: float) -> dict[str, Any] | None:
    """A row of holes along y: diameter, count and pitch that fit `span` (y) and `room_across`."""
    d = rng.choice([h for h in HOLE_SIZES if h <= room_across - 4] or [0.0])
    if not d:
        return None
    n = rng.randint(2, 4)
    while n > 2 and (n - 1) * (d + 4) > span - d - 4:
        n -= 1
    if span - d - 4 < d + 4:
        return None
    pitch = mm(rng, d + 4, (span - d - 4) / (n - 1))
    if pitch > (span - d - 4) / (n - 1):
        return None
    return {"hole_d": d, "hole_count": n, "hole_pitch": pitch}


def _row_words(p: dict[str, Any], where: str) -> Phrase:
    def words(rng: random.Random) -> str:
        from training.corpus.cad_parts_a import holes

        n, d = p["hole_count"], p["hole_d"]
        return f"{holes(rng, n, d)} {where}, {length(rng, p['hole_pitch'])} apart"

    return words


def _fillet_profile(rng: random.Random, draft: Draft, thinnest: float) -> None:
    r = mm(rng, 0.5, thinnest / 2 - 0.5, 0.5)
    if r > thinnest / 2 - 0.5:
        return
    line = 'result = result.edges("|Y").fillet(profile_r)'

    def words(rng: random.Random) -> str:
        return pick(rng, [f"all bends rounded R{number(r)}", f"corners filleted {number(r)} mm"])

    draft.add("fillet_profile", {"profile_r": r}, [line], words)


def _stock(rng: random.Random, t: float) -> str:
    return pick(
        rng,
        [f"from {length(rng, t)} stock", f"in {number(t)} mm material", f"{number(t)} mm plate"],
    )


def profile_base(rng: random.Random) -> Draft:
    """An L, T, U or C section extruded along y, with holes, gussets or an axle hole."""
    kind = pick(rng, ["l", "l", "t", "u", "u", "c"])
    t = rng.choice([3.0, 4.0, 5.0, 6.0, 8.0])
    draft = Draft(f"profile_{kind}", any_orientation=True)
    draft.words = ("deep", "wide") if kind == "l" else ("wide", "long")
    extrude = 'result = cq.Workplane("XZ").polyline(profile).close().extrude({} / 2, both=True)'
    if kind == "l":
        leg_a, leg_b = mm(rng, t + 20, 120, 5), mm(rng, t + 20, 120, 5)
        width = mm(rng, 15, 100, 5)
        draft.params = {"leg_a": leg_a, "leg_b": leg_b, "width": width, "thickness": t}
        points = ["(0, 0)", "(leg_a, 0)", "(leg_a, thickness)", "(thickness, thickness)"]
        points += ["(thickness, leg_b)", "(0, leg_b)"]
        draft.lines = [*_profile(points), extrude.format("width")]
        draft.bbox = [leg_a, width, leg_b]
        draft.base_phrases = [_l_words(leg_a, leg_b, t)]
        if rng.random() < 0.3:
            _fillet_profile(rng, draft, t)
        span = width
        if rng.random() < 0.4:
            g = mm(rng, 8, min(leg_a, leg_b) - t - 4, 2)
            gt = mm(rng, 2, t)
            gp = {"gusset": g, "gusset_t": gt}
            gusset = _profile(["(thickness, thickness)", "(thickness + gusset, thickness)"])
            gusset[-1:] = ["    (thickness, thickness + gusset),", "]"]
            lines = [
                *[line.replace("profile", "web") for line in gusset],
                'gusset = cq.Workplane("XZ").polyline(web).close()'
                ".extrude(gusset_t / 2, both=True)",
                "gusset = gusset.translate((0, width / 2 - gusset_t / 2, 0))",
                'result = result.union(gusset).union(gusset.mirror("XZ"))',
            ]
            draft.add("gussets", gp, lines, _gusset_words(g, gt))
            span = width - 2 * gt - 2
        row = _hole_row(rng, span, min(leg_a, leg_b) - t - 2)
        if row is not None and rng.random() < 0.8:
            both = rng.random() < 0.5
            lines = [
                'result = result.cut(cq.Workplane("XY").center((thickness + leg_a) / 2, 0)'
                ".rarray(1, hole_pitch, 1, hole_count).circle(hole_d / 2).extrude(thickness))"
            ]
            if both:
                lines.append(
                    'result = result.cut(cq.Workplane("YZ").center(0, (thickness + leg_b) / 2)'
                    ".rarray(hole_pitch, 1, hole_count, 1).circle(hole_d / 2).extrude(thickness))"
                )
            where = "in each leg" if both else "in the base leg"
            draft.add("holes_legs" if both else "holes_base", row, lines, _row_words(row, where))
    elif kind == "t":
        flange_w, flange_t = mm(rng, 30, 120, 5), t
        web_t, web_h = rng.choice([3.0, 4.0, 5.0, 6.0, 8.0]), mm(rng, 10, 80, 5)
        long = mm(rng, 20, 150, 5)
        draft.params = {
            "flange_w": flange_w,
            "flange_t": flange_t,
            "web_h": web_h,
            "web_t": web_t,
            "length": long,
        }
        points = ["(-flange_w / 2, 0)", "(flange_w / 2, 0)", "(flange_w / 2, flange_t)"]
        points += ["(web_t / 2, flange_t)", "(web_t / 2, flange_t + web_h)"]
        points += ["(-web_t / 2, flange_t + web_h)", "(-web_t / 2, flange_t)"]
        points += ["(-flange_w / 2, flange_t)"]
        draft.lines = [*_profile(points), extrude.format("length")]
        draft.bbox = [flange_w, long, flange_t + web_h]
        draft.base_phrases = [_t_words(flange_w, flange_t, web_h, web_t)]
        if rng.random() < 0.3:
            _fillet_profile(rng, draft, min(flange_t, web_t))
        row = _hole_row(rng, long, (flange_w - web_t) / 2 - 2)
        if row is not None and rng.random() < 0.7:
            lines = [
                'holes = cq.Workplane("XY").center((web_t + flange_w) / 4, 0)'
                ".rarray(1, hole_pitch, 1, hole_count).circle(hole_d / 2).extrude(flange_t)",
                'result = result.cut(holes).cut(holes.mirror("YZ"))',
            ]
            draft.add("holes_mirrored", row, lines, _row_words(row, "in the flange each side"))
        if web_h >= 12 and rng.random() < 0.4:
            d = mm(rng, 3, min(web_h - 6, 16))
            line = (
                'result = result.cut(cq.Workplane("YZ").center(0, flange_t + web_h / 2)'
                ".circle(web_hole_d / 2).extrude(web_t, both=True))"
            )
            draft.add("cross_hole", {"web_hole_d": d}, [line], _web_hole_words(d))
    else:
        width, height, long = mm(rng, 20, 120, 5), mm(rng, 10, 80, 5), mm(rng, 20, 150, 5)
        height = max(height, t + 6 if kind == "u" else 2 * t + 6)
        if kind == "c":
            width = max(width, 4 * t + 10)
        draft.params = {"width": width, "height": height, "length": long, "thickness": t}
        points = ["(-width / 2, 0)", "(width / 2, 0)", "(width / 2, height)"]
        if kind == "u":
            points += ["(width / 2 - thickness, height)", "(width / 2 - thickness, thickness)"]
            points += ["(-width / 2 + thickness, thickness)", "(-width / 2 + thickness, height)"]
        else:
            lip = mm(rng, t + 2, width / 2 - t - 3)
            draft.params["lip"] = lip
            points += ["(width / 2 - lip, height)", "(width / 2 - lip, height - thickness)"]
            points += ["(width / 2 - thickness, height - thickness)"]
            points += ["(width / 2 - thickness, thickness)", "(-width / 2 + thickness, thickness)"]
            points += ["(-width / 2 + thickness, height - thickness)"]
            points += ["(-width / 2 + lip, height - thickness)", "(-width / 2 + lip, height)"]
        points += ["(-width / 2, height)"]
        draft.lines = [*_profile(points), extrude.format("length")]
        draft.bbox = [width, long, height]
        draft.base_phrases = [_channel_words(kind, draft.params)]
        if rng.random() < 0.3:
            room = height - t if kind == "u" else draft.params["lip"] - t
            _fillet_profile(rng, draft, min(t, room))
        row = _hole_row(rng, long, width - 2 * t - 2)
        if row is not None and rng.random() < 0.6:
            line = (
                'result = result.cut(cq.Workplane("XY").rarray(1, hole_pitch, 1, hole_count)'
                ".circle(hole_d / 2).extrude(thickness))"
            )
            draft.add("holes_base", row, [line], _row_words(row, "in the base"))
        if kind == "u" and height - t >= 10 and rng.random() < 0.5:
            d = mm(rng, 3, min(height - t - 6, long - 6, 20))
            z = mm(rng, t + d / 2 + 2, height - d / 2 - 2)
            line = (
                'result = result.cut(cq.Workplane("YZ").center(0, axle_z)'
                ".circle(axle_d / 2).extrude(width / 2, both=True))"
            )
            draft.add("cross_hole", {"axle_d": d, "axle_z": z}, [line], _axle_words(d, z))
    draft.z_word = "tall"
    return draft


def _l_words(leg_a: float, leg_b: float, t: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"a {number(leg_a)} mm base leg and a {number(leg_b)} mm upright {_stock(rng, t)}",
            f"legs of {number(leg_a)} (horizontal) and {number(leg_b)} (vertical) mm, "
            f"{_stock(rng, t)}",
        ],
    )


def _t_words(flange_w: float, flange_t: float, web_h: float, web_t: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"a {number(flange_w)} mm wide flange {number(flange_t)} thick with a "
            f"{number(web_t)} mm web standing {number(web_h)} above it",
            f"flange {number(flange_w)} x {number(flange_t)}, web {number(web_t)} thick "
            f"rising {length(rng, web_h)} from the flange",
        ],
    )


def _channel_words(kind: str, p: dict[str, Any]) -> Phrase:
    lip = f" and {number(p['lip'])} mm lips turned in" if kind == "c" else ""
    return lambda rng: f"walls {_stock(rng, p['thickness'])}{lip}"


def _gusset_words(g: float, gt: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"a triangular gusset at each end ({number(g)} mm legs, {number(gt)} mm thick)",
            f"two {number(gt)} mm gussets, {length(rng, g)} on a side, mirrored at the ends",
        ],
    )


def _web_hole_words(d: float) -> Phrase:
    return lambda rng: pick(
        rng, [f"{a_(dia(d))} hole through the web", f"a {number(d)} mm cross hole in the web"]
    )


def _axle_words(d: float, z: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{a_(dia(d))} axle hole through both walls, {length(rng, z)} up from the bottom",
            f"a {number(d)} mm cross hole through the walls at a height of {number(z)}",
        ],
    )


def ring_base(rng: random.Random) -> Draft:
    """A split ring (a C clip) or an arc segment lying flat, with holes or edges treated."""
    if rng.random() < 0.5:
        return _arc_base(rng)
    draft = Draft("split_ring", shape="round", any_orientation=True)
    outer_d = mm(rng, 16, 120, 2)
    inner_d = mm(rng, outer_d * 0.5, outer_d - 6, 2)
    height = mm(rng, 4, 40)
    gap = mm(rng, 2, min(inner_d * 0.6, outer_d / 4))
    draft.params = {"outer_d": outer_d, "inner_d": inner_d, "height": height, "gap": gap}
    draft.lines = [
        'result = cq.Workplane("XY").circle(outer_d / 2).circle(inner_d / 2).extrude(height)',
        'result = result.cut(cq.Workplane("XY").center(0, -outer_d / 4)'
        ".rect(gap, outer_d / 2).extrude(height))",
    ]
    r = outer_d / 2
    draft.bbox = [outer_d, round(r + math.sqrt(r * r - gap * gap / 4), 4), height]
    draft.z_word = "tall" if height > (outer_d - inner_d) / 2 else "thick"
    draft.base_phrases = [_ring_words(inner_d, gap)]
    if rng.random() < 0.3:
        edge_treatment(rng, draft, min((outer_d - inner_d) / 6, height / 4))
    if height >= 8 and rng.random() < 0.5:
        d = mm(rng, 2.5, min(height - 4, 8), 0.5)
        line = (
            'result = result.cut(cq.Workplane("XZ").center(0, height / 2)'
            ".circle(screw_d / 2).extrude(-outer_d / 2))"
        )
        draft.add("radial_hole", {"screw_d": d}, [line], _screw_words(d))
    return draft


def _ring_words(inner_d: float, gap: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"bore {dia(inner_d)}, split with a {number(gap)} mm gap",
            f"{length(rng, inner_d, False)} inside diameter and a {length(rng, gap)} slot "
            "through one side",
        ],
    )


def _screw_words(d: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{a_(dia(d))} radial hole opposite the gap",
            f"a {number(d)} mm screw hole through the wall across from the split",
        ],
    )


def _arc_base(rng: random.Random) -> Draft:
    draft = Draft("arc", uses_math=True, any_orientation=True)
    outer_r = mm(rng, 25, 150, 5)
    band = mm(rng, 8, min(40, outer_r / 2), 2)
    angle = float(rng.choice([60, 90, 120, 135, 150, 180]))
    t = mm(rng, 3, 20)
    draft.params = {"outer_r": outer_r, "band": band, "sweep_angle": angle, "thickness": t}
    draft.lines = [
        "half = math.radians(sweep_angle / 2)",
        "inner_r = outer_r - band",
        "result = (",
        '    cq.Workplane("XY")',
        "    .moveTo(-outer_r * math.sin(half), outer_r * math.cos(half))",
        "    .threePointArc((0, outer_r), (outer_r * math.sin(half), outer_r * math.cos(half)))",
        "    .lineTo(inner_r * math.sin(half), inner_r * math.cos(half))",
        "    .threePointArc((0, inner_r), (-inner_r * math.sin(half), inner_r * math.cos(half)))",
        "    .close()",
        "    .extrude(thickness)",
        ")",
    ]
    half = math.radians(angle / 2)
    draft.bbox = [
        round(2 * outer_r * math.sin(half), 4),
        round(outer_r - (outer_r - band) * math.cos(half), 4),
        t,
    ]
    draft.base_phrases = [_arc_words(outer_r, band, angle)]
    if rng.random() < 0.3:
        # A fillet along an arc's top edges is sometimes self-intersecting: chamfers only.
        edge_treatment(rng, draft, min(t / 3, band / 6), fillet_ok=False)
    if band >= 10 and rng.random() < 0.7:
        d = rng.choice([h for h in HOLE_SIZES if h <= band - 5] or [3.5])
        lines = [
            "mid_r = outer_r - band / 2",
            "end = half - band / 2 / mid_r",
            'result = result.faces(">Z").workplane().pushPoints('
            "[(mid_r * math.sin(end), mid_r * math.cos(end)), "
            "(-mid_r * math.sin(end), mid_r * math.cos(end))]).hole(hole_d)",
        ]
        draft.add("holes_ends", {"hole_d": d}, lines, _arc_hole_words(d))
    return draft


def _arc_words(outer_r: float, band: float, angle: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{number(angle)}° of arc at R{number(outer_r)} outside, the band "
            f"{length(rng, band)} across",
            f"an outer radius of {length(rng, outer_r)}, a {number(band)} mm band, "
            f"spanning {number(angle)} degrees",
        ],
    )


def _arc_hole_words(d: float) -> Phrase:
    return lambda rng: pick(
        rng, [f"a {dia(d)} hole near each end", f"one {number(d)} mm hole at either end"]
    )
