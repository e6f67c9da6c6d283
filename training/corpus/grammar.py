"""A grammar of CAD programs, part 1: the draft being composed, and features of flat top faces.

A composition is a base solid (a sketch extruded, revolved, lofted, swept or shelled) and up to
MAX_FEATURES features (holes, counterbores, pockets, bosses, ribs, fillets, chamfers, arrays,
mirrored ears, a swept handle), each kind at most once, so that its parameters have one name each.
Every choice is bounded by what is already there (a hole keeps clear of the edges, fillets and
other features; an addition stands where nothing was cut), so a draw builds one valid solid.

A `Draft` collects what a program is: named parameters, construction lines ending in `result`,
the exact bounding box, the signature (base and feature tokens), and phrases that describe each
part in words (training/corpus/compositional.py turns them into requests). This module holds the
draft and the features cut into or standing on a flat top face (hole patterns of four hole kinds,
pockets, slots, bosses, ribs, the swept handle, edge chamfers and fillets); grammar_flat.py the
flat prisms (rectangle, rounded rectangle, circle, regular polygon, slot), mirrored ears and grip
flutes; grammar_solids.py the L/T/U/C profiles, split rings and arcs; grammar_bodies.py turned
parts, lofts and shells. Those build on this module, never the other way round. Depth is bounded
by construction: a base takes at most MAX_FEATURES features (a hole pattern's kind is a token
that qualifies it, not another feature).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from training.corpus.cad_parts_a import holes
from training.corpus.phrasing import count, length, number, pick

Phrase = Callable[[random.Random], str]
MAX_FEATURES = 4
HOLE_SIZES = (3.5, 4.5, 5.5, 6.5, 8.5)  # clearance holes for M3 .. M8
PLATE_THICKNESS = (3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)


@dataclass
class Draft:
    """A program being composed: parameters, lines, bounding box, signature and phrases."""

    base: str  # the base token: "rect", "disc", "profile_l", "turned_flanged", ...
    shape: str = "box"  # how its overall size reads: "box" (x, y, z) or "round" (diameter, z)
    params: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    bbox: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    features: list[str] = field(default_factory=list)
    base_phrases: list[Phrase] = field(default_factory=list)  # the base's own sizes in words
    phrases: list[Phrase] = field(default_factory=list)  # one per feature
    sticks_out: bool = False  # a feature makes the part larger than its base
    uses_math: bool = False
    z_word: str = "thick"  # what the z extent of the base is called: thick, tall, high, deep
    base_box: list[float] = field(default_factory=list)  # the base's box, once a feature grows it
    grown: set[str] = field(default_factory=set)  # the axes ("x", "z") features made larger
    words: tuple[str, str] = ("long", "wide")  # what the x and y extents are called
    any_orientation: bool = False  # the words do not say which way the part lies
    adjective: str = ""  # said before the name: "slot-shaped"

    def add(self, token: str, params: dict[str, Any], lines: list[str], phrase: Phrase) -> None:
        """Add a feature: its token, parameters, construction lines and description."""
        assert token not in self.features, f"feature {token} twice"
        self.features.append(token)
        self.params.update(params)
        self.lines += lines
        self.phrases.append(phrase)

    def grow(self, x: float = 0.0, y: float = 0.0, dz: float = 0.0) -> None:
        """A feature sticks out: the box is at least x by y and dz taller (the base's is kept)."""
        if not self.sticks_out:
            self.base_box = list(self.bbox)
            self.sticks_out = True
        if x > self.bbox[0]:
            self.grown.add("x")
        if dz:
            self.grown.add("z")
        self.bbox = [max(self.bbox[0], x), max(self.bbox[1], y), self.bbox[2] + dz]

    @property
    def signature(self) -> str:
        """The composition: base and sorted feature tokens, numbers left out."""
        return "+".join([self.base, *sorted(self.features)])


def mm(rng: random.Random, low: float, high: float, step: float = 1.0) -> float:
    """A round length in [low, high] on a grid of `step` (low itself if the range is empty)."""
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    if last < first:
        return float(round(first * step, 3))
    return float(round(rng.randint(first, last) * step, 3))


def dia(value: float) -> str:
    """A diameter as drawings write it: Ø8, Ø5.5."""
    return f"Ø{number(value)}"


def size_of(rng: random.Random, value: float) -> str:
    """A feature's size: '8 mm', 'Ø8', '8mm'."""
    return pick(rng, [length(rng, value, False), dia(value), f"{number(value)} mm"])


# Holes: what a pattern cuts at each point (through, blind, cbore, csk), and how it reads.


def hole_kind(rng: random.Random, depth_room: float, d: float) -> tuple[str, dict[str, float]]:
    """A hole kind that fits a plate `depth_room` thick, and its extra sizes."""
    kinds = ["through", "through", "blind", "cbore", "csk"]
    kind = pick(rng, kinds if depth_room >= 5 else ["through"])
    if kind == "blind":
        return kind, {"hole_depth": mm(rng, 2, depth_room - 1.5)}
    if kind == "cbore":
        cbore_d = float(math.ceil(d * 1.8))
        return kind, {"cbore_d": cbore_d, "cbore_depth": mm(rng, 1.5, depth_room / 2, 0.5)}
    if kind == "csk":
        csk_d = float(math.ceil(d * 2))
        if (csk_d - d) / 2 > depth_room - 1.5:
            return "through", {}
        return kind, {"csk_d": csk_d}
    return "through", {}


def hole_call(kind: str) -> str:
    """The CadQuery call that cuts one hole of the kind at every pushed point."""
    return {
        "through": ".hole(hole_d)",
        "blind": ".hole(hole_d, hole_depth)",
        "cbore": ".cboreHole(hole_d, cbore_d, cbore_depth)",
        "csk": ".cskHole(hole_d, csk_d, 90)",
    }[kind]


def hole_width(d: float, extra: dict[str, float]) -> float:
    """The widest diameter a hole of this kind opens at the surface."""
    return max(d, extra.get("cbore_d", 0.0), extra.get("csk_d", 0.0))


def hole_rest(rng: random.Random, kind: str, extra: dict[str, float]) -> str:
    """How a hole's kind reads after the holes: '', ', 6 mm deep', ', counterbored Ø10'."""
    if kind == "blind":
        return pick(rng, [f", {length(rng, extra['hole_depth'])} deep", " (blind)"])
    if kind == "cbore":
        return pick(
            rng,
            [
                f", counterbored {dia(extra['cbore_d'])} to {length(rng, extra['cbore_depth'])}",
                f" with {dia(extra['cbore_d'])} counterbores {number(extra['cbore_depth'])} deep",
            ],
        )
    if kind == "csk":
        return pick(rng, [f", countersunk to {dia(extra['csk_d'])}", " (countersunk, 90°)"])
    return ""


@dataclass
class Room:
    """Where a flat top face still has room: a centred rectangle or circle, half sizes in mm."""

    half_x: float
    half_y: float
    round: bool = False

    @property
    def radius(self) -> float:
        """The largest centred circle that fits."""
        return min(self.half_x, self.half_y)


def pattern_holes(
    rng: random.Random, draft: Draft, room: Room, depth_room: float, corner_r: float = 0.0
) -> Room | None:
    """Cut a hole pattern into the top face (corners, grid, row or bolt circle); the room it
    leaves free in the middle, or None when the pattern fills the face."""
    d = rng.choice([h for h in HOLE_SIZES if h <= room.radius / 2] or [HOLE_SIZES[0]])
    kind, extra = hole_kind(rng, depth_room, d)
    width = hole_width(d, extra)
    patterns = ["polar"] if room.round else ["corners", "corners", "grid", "row", "polar"]
    pattern = pick(rng, patterns)
    params: dict[str, Any] = {"hole_d": d}
    free: Room | None = None
    if pattern == "polar":
        outer = room.radius - width / 2
        inner = max(width / 2 + 4, outer * 0.45)
        if outer < inner + 1:
            return room
        n = rng.choice([3, 4, 5, 6, 8])
        bolt_circle_d = mm(rng, 2 * inner, 2 * outer)
        while n > 3 and bolt_circle_d * math.sin(math.pi / n) < width + 2:
            n -= 1
        params |= {"hole_count": n, "bolt_circle_d": bolt_circle_d}
        place = ".polarArray(bolt_circle_d / 2, 0, 360, hole_count)"
        free = Room(bolt_circle_d / 2 - width / 2 - 2, bolt_circle_d / 2 - width / 2 - 2, True)
        pieces = [f"on {a_(length(rng, bolt_circle_d))} bolt circle", "equally spaced"]
        where = pick(rng, [f"on {a_(length(rng, bolt_circle_d))} bolt circle", " ".join(pieces)])
        where = pick(rng, [where, f"on a {number(bolt_circle_d)} PCD"])
    else:
        inset = max(width / 2 + 2, corner_r)
        if pattern == "corners":
            cols, rows = 2, 2
        elif pattern == "row":
            cols, rows = rng.randint(2, 5), 1
        else:
            cols, rows = rng.randint(2, 4), rng.randint(2, 3)
        pitch_x = _pitch(rng, 2 * room.half_x - 2 * inset, cols, width)
        pitch_y = _pitch(rng, 2 * room.half_y - 2 * inset, rows, width) if rows > 1 else 1.0
        if pitch_x is None or pitch_y is None:
            return room
        if pattern == "corners":
            params |= {"pitch_x": pitch_x, "pitch_y": pitch_y}
            place = ".rarray(pitch_x, pitch_y, 2, 2)"
            free = Room(pitch_x / 2 - width / 2 - 2, pitch_y / 2 - width / 2 - 2)
            where = pick(
                rng,
                [
                    f"near the corners on a {number(pitch_x)} x {number(pitch_y)} mm pattern",
                    f"at the corners, {length(rng, pitch_x)} by {length(rng, pitch_y)} apart",
                    f"in a {number(pitch_x)} × {number(pitch_y)} rectangle",
                ],
            )
        elif pattern == "row":
            params |= {"hole_count": cols, "hole_pitch": pitch_x}
            place = ".rarray(hole_pitch, 1, hole_count, 1)"
            where = pick(
                rng,
                [
                    f"in a row along the length, {length(rng, pitch_x)} apart",
                    f"in a line at {length(rng, pitch_x)} pitch",
                ],
            )
        else:
            params |= {"cols": cols, "rows": rows, "pitch_x": pitch_x, "pitch_y": pitch_y}
            place = ".rarray(pitch_x, pitch_y, cols, rows)"
            where = pick(
                rng,
                [
                    f"in a {cols} x {rows} grid at {number(pitch_x)} x {number(pitch_y)} mm pitch",
                    f"as a {count(rng, cols)} by {count(rng, rows)} grid, "
                    f"{length(rng, pitch_x)} and {length(rng, pitch_y)} apart",
                ],
            )
    params |= extra
    n = params.get("hole_count", params.get("cols", 2) * params.get("rows", 2))
    line = f'result = result.faces(">Z").workplane(){place}{hole_call(kind)}'

    def phrase(rng: random.Random) -> str:
        said = holes(rng, n, d)
        if kind != "through":  # blind, counterbored or countersunk: not "through holes, 4 deep"
            said = said.replace(" through holes", " holes")
        return f"{said}{hole_rest(rng, kind, extra)} {where}"

    draft.add(f"holes_{pattern}", params, [line], phrase)
    draft.features.append(f"hole_{kind}")
    return free


def a_(phrase: str) -> str:
    """The phrase with 'a' or 'an' (for numbers: 'an 8 mm', 'an 80 mm', 'an 11')."""
    first = phrase  # "a Ø8 hole" (a diameter 8), "an 8 mm hole"
    vowel = first[:1].lower() in "aeiou" or first.startswith(("8", "11 ", "11m", "18"))
    return f"{'an' if vowel else 'a'} {phrase}"


def _pitch(rng: random.Random, span: float, n: int, width: float) -> float | None:
    """A round pitch for n holes within span (centre to centre), or None when they do not fit."""
    if n == 1:
        return 1.0
    high = span / (n - 1)
    low = width + 3
    if high < low:
        return None
    step = 5.0 if high - low >= 10 else 1.0
    value = mm(rng, low, high, step)
    return value if low <= value <= high else None


def center_feature(
    rng: random.Random, draft: Draft, room: Room, depth_room: float, top: str, kinds: list[str]
) -> None:
    """Cut or add one feature in the middle of the top face, within the room left there."""
    if room.radius < 4:
        return
    kind = pick(rng, kinds)
    half = room.radius
    if kind == "center_hole":
        d = mm(rng, 3, min(2 * half, 30), 1 if half < 8 else 2)
        if d > 2 * half:
            return
        if depth_room >= 6 and 2 * half >= d + 6 and rng.random() < 0.4:
            extra = {
                "bore_cbore_d": mm(rng, d + 4, min(2 * half, d * 2)),
                "bore_cbore_depth": mm(rng, 1.5, depth_room / 2, 0.5),
            }
            line = (
                'result = result.faces(">Z").workplane()'
                ".cboreHole(bore_d, bore_cbore_d, bore_cbore_depth)"
            )
            draft.add("center_cbore", {"bore_d": d, **extra}, [line], _cbore_words(d, extra))
        else:
            line = 'result = result.faces(">Z").workplane().hole(bore_d)'
            draft.add("center_hole", {"bore_d": d}, [line], _bore_words(d))
    elif kind == "pocket" and depth_room >= 5:
        depth = mm(rng, 1.5, depth_room - 2, 0.5)
        shape = pick(rng, ["rect", "round", "slot"] if not room.round else ["round"])
        cut = ".cutBlind(-pocket_depth)"
        if shape == "round":
            d = mm(rng, 6, 2 * half, 2)
            if d > 2 * half:
                return
            line = f'result = result.faces(">Z").workplane().circle(pocket_d / 2){cut}'
            params: dict[str, Any] = {"pocket_d": d, "pocket_depth": depth}
            draft.add("pocket_round", params, [line], _round_pocket_words(d, depth))
            return
        pl = mm(rng, 8, 2 * room.half_x, 2)
        pw = mm(rng, 4, min(2 * room.half_y, pl - 2), 2)
        if pl > 2 * room.half_x or pw > min(2 * room.half_y, pl - 2):
            return
        if shape == "slot" and pl > pw + 2:
            draw, token = ".slot2D(pocket_length, pocket_width)", "pocket_slot"
        else:
            draw, token = ".rect(pocket_length, pocket_width)", "pocket_rect"
        line = f'result = result.faces(">Z").workplane(){draw}{cut}'
        params = {"pocket_length": pl, "pocket_width": pw, "pocket_depth": depth}
        draft.add(token, params, [line], _pocket_words(token, pl, pw, depth))
    elif kind == "slot" and not room.round and room.half_x > room.half_y + 2:
        sl = mm(rng, 10, 2 * room.half_x, 2)
        sw = mm(rng, 3, min(2 * room.half_y, sl / 2), 1)
        if sl > 2 * room.half_x or sw > min(2 * room.half_y, sl / 2):
            return
        line = (
            'result = result.faces(">Z").workplane().slot2D(slot_length, slot_width).cutThruAll()'
        )
        draft.add("slot_cut", {"slot_length": sl, "slot_width": sw}, [line], _slot_words(sl, sw))
    elif kind == "boss":
        boss_d = mm(rng, 6, min(2 * half, 50), 2)
        if boss_d > 2 * half:
            return
        boss_h = mm(rng, 3, 25)
        lines = ['result = result.faces(">Z").workplane().circle(boss_d / 2).extrude(boss_h)']
        params = {"boss_d": boss_d, "boss_h": boss_h}
        bore = boss_d >= 10 and rng.random() < 0.5
        if bore:
            params["boss_bore_d"] = mm(rng, 3, boss_d - 5)
            lines.append('result = result.faces(">Z").workplane().hole(boss_bore_d)')
        draft.add("boss_bore" if bore else "boss", params, lines, _boss_words(params))
        draft.grow(dz=boss_h)
    elif kind == "ribs" and not room.round and room.half_y >= 6 and room.half_x >= 5:
        rib_t = mm(rng, 2, 4, 0.5)
        n = rng.randint(2, 5)
        while n > 2 and (n - 1) * (rib_t + 3) > 2 * room.half_y - rib_t - 2:
            n -= 1
        pitch = _pitch(rng, 2 * room.half_y - rib_t - 2, n, rib_t + 2)
        if pitch is None:
            return
        params = {
            "rib_count": n,
            "rib_pitch": pitch,
            "rib_length": mm(rng, min(10, 2 * room.half_x), 2 * room.half_x, 2),
            "rib_t": rib_t,
            "rib_h": mm(rng, 3, 20),
        }
        if params["rib_length"] > 2 * room.half_x:
            return
        line = (
            'result = result.faces(">Z").workplane().rarray(1, rib_pitch, 1, rib_count)'
            ".rect(rib_length, rib_t).extrude(rib_h)"
        )
        draft.add("ribs", params, [line], _rib_words(params))
        draft.grow(dz=params["rib_h"])
    elif kind == "handle":
        add_handle(rng, draft, room, top)


def add_handle(rng: random.Random, draft: Draft, room: Room, top: str) -> None:
    """A handle on the top face: a circle swept along an arch whose feet sink into the top."""
    grip_d = mm(rng, 4, min(14, 2 * room.half_y - 2), 1)
    # The feet keep 2 mm clear of what is around them (a chamfer, a rim, holes).
    most = 2 * (room.radius if room.round else room.half_x) - grip_d - 4
    if most < 2 * grip_d + 8:
        return
    span = mm(rng, 2 * grip_d + 8, min(most, 140), 2)
    rise = mm(rng, grip_d + 4, 50, 2)
    p = {"handle_span": span, "handle_rise": rise, "grip_d": grip_d}
    foot = "thickness / 2" if top == "thickness" else "height - wall / 2"
    lines = [
        "path = (",
        '    cq.Workplane("XZ")',
        f"    .moveTo(-handle_span / 2, {foot})",
        f"    .lineTo(-handle_span / 2, {top} + handle_rise - grip_d)",
        "    .tangentArcPoint((grip_d, grip_d))",
        f"    .lineTo(handle_span / 2 - grip_d, {top} + handle_rise)",
        "    .tangentArcPoint((grip_d, -grip_d))",
        f"    .lineTo(handle_span / 2, {foot})",
        ")",
        f'handle = cq.Workplane("XY").workplane(offset={foot}).center(-handle_span / 2, 0)'
        ".circle(grip_d / 2).sweep(path)",
        "result = result.union(handle)",
    ]

    def words(rng: random.Random) -> str:
        return pick(
            rng,
            [
                f"a handle on top: a {dia(grip_d)} bar bent into an arch, feet "
                f"{length(rng, span)} apart, rising {length(rng, rise)} above the top",
                f"an arched {number(grip_d)} mm round handle, {number(span)} between centres "
                f"and {number(rise)} high",
            ],
        )

    draft.add("handle", p, lines, words)
    draft.grow(x=span + grip_d, y=grip_d, dz=rise + grip_d / 2)


def _bore_words(d: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{a_(size_of(rng, d))} hole through the centre",
            f"{a_(dia(d))} centre hole",
            f"a {number(d)} mm bore in the middle",
        ],
    )


def _cbore_words(d: float, extra: dict[str, float]) -> Phrase:
    big, deep = extra["bore_cbore_d"], extra["bore_cbore_depth"]
    return lambda rng: pick(
        rng,
        [
            f"a counterbored centre hole {dia(d)}, counterbore {dia(big)} {number(deep)} deep",
            f"{a_(dia(d))} hole in the middle with {a_(dia(big))} counterbore, "
            f"{length(rng, deep)} deep",
        ],
    )


def _round_pocket_words(d: float, depth: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{a_(dia(d))} recess {length(rng, depth)} deep in the top",
            f"a round pocket in the middle, {length(rng, d, False)} across and "
            f"{length(rng, depth)} deep",
        ],
    )


def _pocket_words(token: str, pl: float, pw: float, depth: float) -> Phrase:
    noun = "slot-shaped pocket" if token == "pocket_slot" else "pocket"
    return lambda rng: pick(
        rng,
        [
            f"a {number(pl)} x {number(pw)} mm {noun} {length(rng, depth)} deep in the top",
            f"a centred {noun}, {length(rng, pl)} by {length(rng, pw)}, {length(rng, depth)} deep",
            f"{a_(noun)} of {number(pl)} by {number(pw)} mm, {number(depth)} deep, in the top",
        ],
    )


def _slot_words(sl: float, sw: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"a {number(sl)} x {number(sw)} mm slot through the middle",
            f"a through slot in the centre, {length(rng, sl)} by {length(rng, sw)}",
        ],
    )


def _boss_words(p: dict[str, Any]) -> Phrase:
    def words(rng: random.Random) -> str:
        boss = pick(
            rng,
            [
                f"{a_(dia(p['boss_d']))} boss {length(rng, p['boss_h'])} high on top",
                f"a round boss on top, {length(rng, p['boss_d'], False)} diameter and "
                f"{length(rng, p['boss_h'])} tall",
            ],
        )
        if "boss_bore_d" in p:
            boss += pick(
                rng,
                [
                    f" with {a_(dia(p['boss_bore_d']))} hole through it",
                    f", bored {dia(p['boss_bore_d'])} right through",
                ],
            )
        return boss

    return words


def _rib_words(p: dict[str, Any]) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{count(rng, p['rib_count'])} ribs on top, {length(rng, p['rib_pitch'])} apart, "
            f"each {length(rng, p['rib_length'])} long, {length(rng, p['rib_t'])} thick and "
            f"{length(rng, p['rib_h'])} high",
            f"{p['rib_count']} stiffening ribs along the length ({number(p['rib_length'])} long, "
            f"{number(p['rib_t'])} thick, {number(p['rib_h'])} tall, at {number(p['rib_pitch'])} "
            "pitch)",
        ],
    )


def edge_treatment(rng: random.Random, draft: Draft, limit: float, fillet_ok: bool = True) -> float:
    """Chamfer or fillet the top edges (size below `limit`); the size taken (0 for none)."""
    size = mm(rng, 0.5, min(limit, 3), 0.5)
    if limit < 0.5 or size > limit:
        return 0.0
    if rng.random() < 0.5 or not fillet_ok:
        line = 'result = result.faces(">Z").edges().chamfer(edge_chamfer)'
        draft.add("edge_chamfer", {"edge_chamfer": size}, [line], _edge_words("chamfer", size))
    else:
        line = 'result = result.faces(">Z").edges().fillet(edge_fillet)'
        draft.add("edge_fillet", {"edge_fillet": size}, [line], _edge_words("fillet", size))
    return size


def _edge_words(kind: str, size: float) -> Phrase:
    if kind == "chamfer":
        return lambda rng: pick(
            rng,
            [
                f"{length(rng, size)} chamfer on the top edges",
                f"top edges chamfered {number(size)} mm",
                f"a {number(size)} x 45° chamfer round the top",
            ],
        )
    return lambda rng: pick(
        rng,
        [
            f"top edges filleted R{number(size)}",
            f"{a_(length(rng, size))} fillet on the top edges",
            f"the top edges rounded off (r = {number(size)})",
        ],
    )
