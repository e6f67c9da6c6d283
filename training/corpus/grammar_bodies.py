"""A grammar of CAD programs, part 4: turned parts, lofts and shells.

Turned parts revolve a stepped profile (a tube, a flanged body, a headed peg, a stepped shaft;
bored or solid); lofts join a rectangle or circle to a smaller section above; shells hollow a
box or cylinder open at the top (a tray, a box, a cup) or at the bottom (a lid), and a lid may
carry the swept handle (grammar.py's center_feature). See grammar.py.
"""

from __future__ import annotations

import math
import random
from typing import Any

from training.corpus.grammar import (
    HOLE_SIZES,
    Draft,
    Phrase,
    Room,
    a_,
    center_feature,
    dia,
    mm,
    pattern_holes,
)
from training.corpus.grammar_flat import ears, flutes
from training.corpus.phrasing import length, number, pick


def _profile(points: list[str]) -> list[str]:
    """The lines of a polyline profile, one point per line."""
    return ["profile = [", *[f"    {p}," for p in points], "]"]


# Turned parts: sections from the bottom up, (diameter name, height name).
TURNED = {
    "tube": [("outer_d", "height")],
    "flanged": [("flange_d", "flange_h"), ("body_d", "body_h")],
    "headed": [("stem_d", "stem_h"), ("head_d", "head_h")],
    "stepped": [("base_d", "base_h"), ("body_d", "body_h"), ("tip_d", "tip_h")],
}


def turned_base(rng: random.Random) -> Draft:
    """A revolved stepped profile: a tube, a flanged body, a headed peg or a stepped shaft."""
    kind = pick(rng, ["tube", "flanged", "flanged", "headed", "stepped"])
    draft = Draft(f"turned_{kind}", shape="round")
    sections = TURNED[kind]
    diameters = sorted((mm(rng, 8, 100, 2) for _ in sections), reverse=True)
    if kind == "headed":
        diameters.reverse()
    for i in range(1, len(diameters)):
        step = diameters[i] - diameters[i - 1]
        if abs(step) < 6:
            diameters[i] = diameters[i - 1] + (6 if kind == "headed" else -6)
    if min(diameters) < 6:
        diameters = [d - min(diameters) + 6 for d in diameters]
    heights = [mm(rng, 3, 40) for _ in sections]
    if kind == "tube":
        heights = [mm(rng, 5, 80)]
    params: dict[str, Any] = {}
    for (d_name, h_name), d, h in zip(sections, diameters, heights, strict=True):
        params[d_name], params[h_name] = float(d), float(h)
    smallest = min(diameters)
    bore = kind == "tube" or (kind != "headed" and rng.random() < 0.6)
    if bore:
        params["bore_d"] = mm(rng, 2, smallest - 4)
    draft.params = params
    inner = "bore_d / 2" if bore else "0"
    points, z = [f"({inner}, 0)"], "0"
    for d_name, h_name in sections:
        top = h_name if z == "0" else f"{z} + {h_name}"
        points += [f"({d_name} / 2, {z})", f"({d_name} / 2, {top})"]
        z = top
    points.append(f"({inner}, {z})")
    draft.lines = [
        *_profile(points),
        'result = cq.Workplane("XZ").polyline(profile).close().revolve(360, (0, 0, 0), (0, 1, 0))',
    ]
    total = sum(heights)
    biggest = max(diameters)
    draft.bbox = [float(biggest), float(biggest), float(total)]
    draft.z_word = "tall" if total >= biggest / 2 else "thick"
    draft.base_phrases = [_section_words(kind, params, bore)]
    top_d, top_h = params[sections[-1][0]], params[sections[-1][1]]
    below = total - top_h
    if kind in ("flanged", "stepped") and rng.random() < 0.5:
        flange_d, flange_h = params[sections[0][0]], params[sections[0][1]]
        hole_d = rng.choice(HOLE_SIZES[:4])
        low, high = params[sections[1][0]] / 2 + hole_d / 2 + 1.5, flange_d / 2 - hole_d / 2 - 1.5
        if low <= high:
            bolt_circle_d = mm(rng, 2 * low, 2 * high)
            n = rng.choice([3, 4, 6, 8])
            while n > 3 and bolt_circle_d * math.sin(math.pi / n) < hole_d + 2:
                n -= 1
            if bolt_circle_d / 2 <= high:
                hp = {"hole_d": hole_d, "hole_count": n, "bolt_circle_d": bolt_circle_d}
                line = (
                    'result = result.cut(cq.Workplane("XY").polarArray(bolt_circle_d / 2, 0, 360,'
                    f" hole_count).circle(hole_d / 2).extrude({sections[0][1]}))"
                )
                draft.add("holes_polar", hp, [line], _flange_hole_words(hp, flange_h))
    if top_h >= 6 and rng.random() < 0.35:
        d = mm(rng, 2, min(top_h - 3, top_d / 2))
        z_top = " + ".join(h for _, h in sections[:-1])
        centre = f"{z_top} + {sections[-1][1]} / 2" if z_top else f"{sections[-1][1]} / 2"
        line = (
            f'result = result.cut(cq.Workplane("YZ").center(0, {centre})'
            f".circle(cross_d / 2).extrude({sections[-1][0]} / 2, both=True))"
        )
        draft.add("cross_hole", {"cross_d": d}, [line], _cross_words(d, below + top_h / 2))
    elif kind in ("headed", "tube") and not bore and top_d >= 16 and rng.random() < 0.5:
        flutes(rng, draft, sections[-1][0], top_d, f"{sections[-1][1]}")
        if kind == "headed":
            draft.lines[-1] = draft.lines[-1].replace(
                'cq.Workplane("XY")', 'cq.Workplane("XY").workplane(offset=stem_h)'
            )
    wall = (smallest - params.get("bore_d", 0.0)) / 2 if bore else smallest / 2
    if rng.random() < 0.3 and not {"cross_hole", "flutes"} & set(draft.features):
        c = mm(rng, 0.5, min(top_h / 3, wall / 3, 2), 0.5)
        if c <= min(top_h / 3, wall / 3):
            line = 'result = result.faces(">Z").chamfer(top_chamfer)'
            draft.add("edge_chamfer", {"top_chamfer": c}, [line], _top_chamfer_words(c))
    return draft


def _section_words(kind: str, p: dict[str, Any], bore: bool) -> Phrase:
    def words(rng: random.Random) -> str:
        parts = []
        if kind == "flanged":
            parts.append(
                f"a {dia(p['flange_d'])} flange {number(p['flange_h'])} thick at the bottom, "
                f"then a {dia(p['body_d'])} body {length(rng, p['body_h'])} long"
            )
        elif kind == "headed":
            parts.append(
                f"a {dia(p['stem_d'])} stem {length(rng, p['stem_h'])} long under a "
                f"{dia(p['head_d'])} head {number(p['head_h'])} high"
            )
        elif kind == "stepped":
            parts.append(
                f"three steps from the bottom: {dia(p['base_d'])} x {number(p['base_h'])}, "
                f"{dia(p['body_d'])} x {number(p['body_h'])}, {dia(p['tip_d'])} x "
                f"{number(p['tip_h'])}"
            )
        if bore:
            parts.append(pick(rng, [f"{a_(dia(p['bore_d']))} bore through", "bored through"]))
            if parts[-1] == "bored through":
                parts[-1] = f"bored {dia(p['bore_d'])} right through"
        return ", ".join(parts)

    return words


def _flange_hole_words(p: dict[str, Any], flange_h: float) -> Phrase:
    def words(rng: random.Random) -> str:
        from training.corpus.cad_parts_a import holes

        n, d, bc = p["hole_count"], p["hole_d"], p["bolt_circle_d"]
        return f"{holes(rng, n, d)} through the flange on {a_(length(rng, bc))} bolt circle"

    return words


def _cross_words(d: float, z: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{a_(dia(d))} cross hole through the top section",
            f"a {number(d)} mm pin hole across the top, {number(z)} up from the bottom",
        ],
    )


def _top_chamfer_words(c: float) -> Phrase:
    return lambda rng: pick(
        rng, [f"the top edge chamfered {number(c)} mm", f"{length(rng, c)} chamfer at the top"]
    )


def loft_base(rng: random.Random) -> Draft:
    """A loft from a rectangle or circle to a smaller one above, with a hole or ears."""
    kind = pick(rng, ["rect", "round", "transition"])
    draft = Draft(f"loft_{kind}", shape="round" if kind == "round" else "box")
    height = mm(rng, 10, 80, 5)
    if kind == "round":
        base_d = mm(rng, 20, 120, 5)
        top_d = mm(rng, 8, base_d - 6, 2)
        draft.params = {"base_d": base_d, "top_d": top_d, "height": height}
        draft.lines = [
            'result = cq.Workplane("XY").circle(base_d / 2).workplane(offset=height)'
            ".circle(top_d / 2).loft()"
        ]
        draft.bbox = [base_d, base_d, height]
        top_room, reach, half = top_d / 2, "", base_d / 2
    else:
        base_l = mm(rng, 20, 120, 5)
        base_w = mm(rng, 20, base_l, 5)
        draft.params = {"base_length": base_l, "base_width": base_w}
        if kind == "rect":
            top_l, top_w = mm(rng, 8, base_l - 4, 2), mm(rng, 8, base_w - 4, 2)
            draft.params |= {"top_length": top_l, "top_width": top_w, "height": height}
            top = ".rect(top_length, top_width)"
            top_room = min(top_l, top_w) / 2
        else:
            top_d = mm(rng, 8, min(base_l, base_w) - 4, 2)
            draft.params |= {"top_d": top_d, "height": height}
            top = ".circle(top_d / 2)"
            top_room = top_d / 2
        draft.lines = [
            'result = cq.Workplane("XY").rect(base_length, base_width)'
            f".workplane(offset=height){top}.loft()"
        ]
        draft.bbox = [base_l, base_w, height]
        reach, half = "base_length / 2", base_l / 2
    draft.z_word = "tall"
    draft.base_phrases = [_loft_words(kind, draft.params)]
    if reach and rng.random() < 0.3:
        ears(rng, draft, reach, half, draft.params["base_width"] - 2)
    if top_room >= 5 and rng.random() < 0.6:
        room = Room(top_room - 2, top_room - 2, True)
        center_feature(rng, draft, room, height, "height", ["center_hole"])
    return draft


def _loft_words(kind: str, p: dict[str, Any]) -> Phrase:
    def words(rng: random.Random) -> str:
        if kind == "round":
            return f"tapering from {dia(p['base_d'])} at the bottom to {dia(p['top_d'])} on top"
        base = f"{number(p['base_length'])} x {number(p['base_width'])} mm at the bottom"
        if kind == "rect":
            return f"{base}, narrowing to {number(p['top_length'])} x {number(p['top_width'])}"
        return f"{base}, blending into a round top of {dia(p['top_d'])}"

    return words


def shell_base(rng: random.Random) -> Draft:
    """A hollow box or cylinder open at the top (tray, box, cup) or bottom (lid), with features."""
    kind = pick(rng, ["box", "box", "cup", "lid"])
    round_ = kind == "cup" or (kind == "lid" and rng.random() < 0.4)
    draft = Draft(f"shell_{kind}", shape="round" if round_ else "box")
    wall = mm(rng, 1.5, 4, 0.5)
    height = mm(rng, 10, 30, 2) if kind == "lid" else mm(rng, 15, 80, 5)
    if round_:
        outer_d = mm(rng, 30, 120, 5)
        draft.params = {"outer_d": outer_d, "height": height, "wall": wall}
        draft.lines = ['result = cq.Workplane("XY").circle(outer_d / 2).extrude(height)']
        draft.bbox = [outer_d, outer_d, height]
        room = Room(outer_d / 2 - wall - 1, outer_d / 2 - wall - 1, True)
        reach, half, across = "outer_d / 2", outer_d / 2, outer_d * 0.5
    else:
        long = mm(rng, 40, 160, 5)
        width = mm(rng, 30, long, 5)
        draft.params = {"length": long, "width": width, "height": height, "wall": wall}
        draft.lines = [
            'result = cq.Workplane("XY").box(length, width, height, centered=(True, True, False))'
        ]
        draft.bbox = [long, width, height]
        corner_r = 0.0
        if rng.random() < 0.6:
            corner_r = mm(rng, wall + 1, min(width / 4, 15))
            line = 'result = result.edges("|Z").fillet(corner_r)'
            draft.add("fillet_z", {"corner_r": corner_r}, [line], _shell_corner(corner_r))
        room = Room(long / 2 - wall - 1, width / 2 - wall - 1)
        reach, half, across = "length / 2", long / 2, width - 2 * corner_r - 2
    face = "<Z" if kind == "lid" else ">Z"
    draft.lines.append(f'result = result.faces("{face}").shell(-wall)')
    draft.z_word = "high" if kind == "lid" else pick(rng, ["tall", "deep", "high"])
    draft.base_phrases = [_wall_words(wall, kind)]
    if kind == "lid":
        if rng.random() < 0.6:
            free = pattern_holes(rng, draft, room, wall) if rng.random() < 0.5 else room
            if free is not None:
                center_feature(rng, draft, free, wall, "height", ["boss", "handle", "handle"])
        return draft
    if not round_ and rng.random() < 0.3:
        line = (
            'result = result.union(cq.Workplane("XY").box(wall, width - wall, height, '
            "centered=(True, True, False)))"
        )
        draft.add("divider", {}, [line], lambda rng: pick(rng, _DIVIDER))
    elif rng.random() < 0.5:
        before = len(draft.phrases)
        pattern_holes(rng, draft, room, wall)
        if len(draft.phrases) > before:  # the holes go through the floor, from below
            draft.lines[-1] = draft.lines[-1].replace('faces(">Z")', 'faces("<Z")')
            draft.phrases[-1] = _in_floor(draft.phrases[-1])
    if rng.random() < 0.25 and wall <= 3:
        ears(rng, draft, reach, half, across, inset="wall")
    return draft


_DIVIDER = (
    "a divider across the middle",
    "split into two compartments by a wall across the middle",
    "with a centre partition as thick as the walls",
)


def _shell_corner(r: float) -> Phrase:
    return lambda rng: pick(rng, [f"outside corners R{number(r)}", f"rounded corners r{number(r)}"])


def _wall_words(wall: float, kind: str) -> Phrase:
    shut = "top" if kind == "lid" else "bottom"
    return lambda rng: pick(
        rng,
        [
            f"walls {length(rng, wall)} thick",
            f"{number(wall)} mm walls and {shut}",
            f"wall thickness {number(wall)}",
            f"open at the {'bottom' if kind == 'lid' else 'top'}, {number(wall)} mm walls",
        ],
    )


def _in_floor(phrase: Phrase) -> Phrase:
    return lambda rng: f"{phrase(rng)} in the floor"
