"""A grammar of CAD programs, part 2: flat prisms (rectangle, circle, polygon, slot), ears, flutes.

Each base writes its sketch extruded to a prism standing on z = 0, then the features of its top
face (grammar.py): an edge treatment, a hole pattern, one feature in the middle; a rectangle
may round its vertical edges, and rectangles and discs may have mirrored mounting ears.
"""

from __future__ import annotations

import math
import random

from training.corpus.cad_parts_a import holes
from training.corpus.grammar import (
    HOLE_SIZES,
    MAX_FEATURES,
    PLATE_THICKNESS,
    Draft,
    Phrase,
    Room,
    a_,
    center_feature,
    dia,
    edge_treatment,
    mm,
    pattern_holes,
)
from training.corpus.phrasing import count, length, number, pick


def ears(
    rng: random.Random,
    draft: Draft,
    reach: str,
    half: float,
    width_room: float,
    inset: str | None = None,
) -> None:
    """Mirrored mounting ears with a hole each, sticking out at both ends along x.

    `reach` is the expression of where the base's side is (x), `half` its value in mm. An ear
    starts at the middle (x = 0) of a solid base, or `inset` inside the side of a hollow one.
    """
    top = draft.params.get("thickness", draft.params.get("height", 7.0))
    ear_width = mm(rng, 10, min(width_room, 30), 2)
    ear_hole_d = rng.choice([h for h in HOLE_SIZES if h <= ear_width - 5] or [3.5])
    if ear_width > width_room or top < 3:
        return
    p = {
        "ear_length": mm(rng, max(ear_hole_d + 6, 8), 25),
        "ear_width": ear_width,
        "ear_t": mm(rng, 2, min(top - 1, 8)),
        "ear_hole_d": ear_hole_d,
    }
    if inset is None:
        box = f'ear = cq.Workplane("XY").box({reach} + ear_length, ear_width, ear_t, '
        box += "centered=(False, True, False))"
    else:
        box = f'ear = cq.Workplane("XY").box({inset} + ear_length, ear_width, ear_t, '
        box += f"centered=(False, True, False)).translate(({reach} - {inset}, 0, 0))"
    lines = [
        box,
        f'ear = ear.cut(cq.Workplane("XY").center({reach} + ear_length / 2, 0)'
        ".circle(ear_hole_d / 2).extrude(ear_t))",
        'result = result.union(ear).union(ear.mirror("YZ"))',
    ]

    def words(rng: random.Random) -> str:
        hole = a_(pick(rng, [f"{number(ear_hole_d)} mm", dia(ear_hole_d)])) + " hole"
        return pick(
            rng,
            [
                f"a mounting ear at each end sticking out {length(rng, p['ear_length'])}, "
                f"{length(rng, ear_width)} wide and {length(rng, p['ear_t'])} thick, "
                f"each with {hole}",
                f"two mirrored tabs ({number(p['ear_length'])} out, {number(ear_width)} wide, "
                f"{number(p['ear_t'])} thick) with {hole} in each",
            ],
        )

    draft.add("ears", p, lines, words)
    draft.grow(x=2 * (half + p["ear_length"]))


# The flat prisms: each writes its base, then features on its top face.
def _flat_features(
    rng: random.Random, draft: Draft, room: Room, depth: float, center_kinds: list[str]
) -> None:
    """Up to MAX_FEATURES features on a flat prism's top face (edge, holes, one central)."""
    corner_r = draft.params.get("corner_r", 0.0)
    limit = min(depth / 3, corner_r - 0.5 if corner_r else 3)
    if "ears" in draft.features:  # the rounded or chamfered band stays above the ears
        limit = min(limit, depth - draft.params["ear_t"] - 0.5)
    if rng.random() < 0.35 and "flutes" not in draft.features:  # a chamfer fails on flutes
        edge = edge_treatment(rng, draft, limit)
        room = Room(room.half_x - edge, room.half_y - edge, room.round)
    free: Room | None = room
    if rng.random() < 0.7:
        free = pattern_holes(
            rng, draft, Room(room.half_x - 1, room.half_y - 1, room.round), depth, corner_r
        )
    if free is not None and rng.random() < 0.75 and len(draft.features) < MAX_FEATURES:
        center_feature(rng, draft, free, depth, "thickness", center_kinds)


def rect_base(rng: random.Random) -> Draft:
    """A rectangular plate or block, corners sharp or rounded, with top features and ears."""
    draft = Draft("rect")
    length_ = mm(rng, 30, 160, 5)
    width = mm(rng, 20, length_, 5)
    block = rng.random() < 0.3
    thickness = mm(rng, 12, min(width, 50), 2) if block else rng.choice(PLATE_THICKNESS)
    draft.params = {"length": length_, "width": width, "thickness": thickness}
    draft.bbox = [length_, width, thickness]
    draft.lines = [
        'result = cq.Workplane("XY").box(length, width, thickness, centered=(True, True, False))'
    ]
    draft.z_word = "thick" if thickness < width else "tall"
    corner_r = 0.0
    if rng.random() < 0.45:
        corner_r = mm(rng, 2, min(width / 4, 12))
        draft.add(
            "fillet_z",
            {"corner_r": corner_r},
            ['result = result.edges("|Z").fillet(corner_r)'],
            _corner_words(corner_r),
        )
    if rng.random() < 0.2 and thickness >= 4:
        ears(rng, draft, "length / 2", length_ / 2, width - 2 * corner_r - 2)
    room = Room(length_ / 2, width / 2)
    kinds = ["center_hole", "pocket", "pocket", "slot", "boss", "ribs", "handle"]
    _flat_features(rng, draft, room, thickness, kinds)
    return draft


def _corner_words(r: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"R{number(r)} corners",
            f"{length(rng, r)} corner radius",
            f"corners rounded to {length(rng, r)}",
            f"rounded corners (r = {number(r)})",
        ],
    )


def disc_base(rng: random.Random) -> Draft:
    """A round disc with a bolt circle, a centre feature, grip flutes or ears."""
    draft = Draft("disc", shape="round")
    outer_d = mm(rng, 20, 150, 5)
    thickness = mm(rng, 3, min(30, outer_d / 2), 1)
    draft.params = {"outer_d": outer_d, "thickness": thickness}
    draft.bbox = [outer_d, outer_d, thickness]
    draft.lines = ['result = cq.Workplane("XY").circle(outer_d / 2).extrude(thickness)']
    draft.z_word = "thick" if thickness < outer_d / 2 else "tall"
    radius = outer_d / 2
    if rng.random() < 0.25 and outer_d >= 30:
        flutes(rng, draft, "outer_d", outer_d, "thickness")
        radius -= draft.params["flute_d"] / 2 + 1
    elif rng.random() < 0.2 and thickness >= 4:
        ears(rng, draft, "outer_d / 2", outer_d / 2, min(outer_d * 0.6, 30))
    room = Room(radius, radius, round=True)
    _flat_features(rng, draft, room, thickness, ["center_hole", "pocket", "boss", "handle"])
    return draft


def flutes(rng: random.Random, draft: Draft, d_name: str, d: float, height: str) -> None:
    """Grip flutes: a polar array of round cuts around the rim, through the given height."""
    n = rng.choice([6, 8, 10, 12, 16, 18, 24])
    flute_d = mm(rng, 2, min(d / 8, 8), 0.5)
    while n > 6 and math.pi * d / n < flute_d + 2:
        n -= 2
    params = {"flute_count": n, "flute_d": flute_d}
    line = (
        f'result = result.cut(cq.Workplane("XY").polarArray({d_name} / 2, 0, 360, flute_count)'
        f".circle(flute_d / 2).extrude({height}))"
    )

    def words(rng: random.Random) -> str:
        return pick(
            rng,
            [
                f"{count(rng, n)} grip flutes round the rim ({dia(flute_d)})",
                f"{n} scallops of {length(rng, flute_d, False)} diameter around the edge for grip",
            ],
        )

    draft.add("flutes", params, [line], words)


def polygon_base(rng: random.Random) -> Draft:
    """A hexagonal or octagonal prism (sized across flats) with a centre feature."""
    sides = rng.choice([6, 8])
    draft = Draft("hexagon" if sides == 6 else "octagon", any_orientation=True)
    across = mm(rng, 12, 90, 2)
    thickness = mm(rng, 3, min(40, across), 1)
    draft.params = {"across_flats": across, "thickness": thickness}
    corner = across / math.cos(math.pi / sides)
    draft.bbox = [across, round(corner if sides == 6 else across, 4), thickness]
    draft.lines = [
        f'result = cq.Workplane("XY").polygon({sides}, across_flats, circumscribed=True)'
        ".extrude(thickness)"
    ]
    draft.z_word = "thick" if thickness < across / 2 else "tall"
    draft.base_phrases = [_across_words(across)]
    room = Room(across / 2 - 1, across / 2 - 1, round=True)
    _flat_features(rng, draft, room, thickness, ["center_hole", "center_hole", "boss", "pocket"])
    return draft


def _across_words(across: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{length(rng, across)} across flats",
            f"{number(across)} AF",
            f"{length(rng, across)} across the flats",
        ],
    )


def obround_base(rng: random.Random) -> Draft:
    """A slot-shaped (obround) bar: holes in its rounded ends, a slot or a boss between."""
    draft = Draft("obround")
    width = mm(rng, 10, 40, 2)
    length_ = mm(rng, width + 12, 140, 5)
    thickness = rng.choice(PLATE_THICKNESS[:6])
    draft.params = {"length": length_, "width": width, "thickness": thickness}
    draft.bbox = [length_, width, thickness]
    draft.lines = ['result = cq.Workplane("XY").slot2D(length, width).extrude(thickness)']
    draft.adjective = pick(rng, ["", "", "slot-shaped", "obround", "round-ended"])
    if rng.random() < 0.35:
        edge_treatment(rng, draft, min(thickness / 3, 1.5))
    if rng.random() < 0.8:
        d = rng.choice([h for h in HOLE_SIZES if h <= width - 6] or [3.5])
        params = {"hole_d": d, "hole_pitch": length_ - width}
        line = 'result = result.faces(">Z").workplane().rarray(hole_pitch, 1, 2, 1).hole(hole_d)'
        draft.add("holes_ends", params, [line], _end_hole_words(d))
        half = (length_ - width) / 2 - d / 2 - 2
    else:
        half = (length_ - width) / 2
    room = Room(half, width / 2 - 2)
    if room.half_x >= 5 and rng.random() < 0.6:
        center_feature(rng, draft, room, thickness, "thickness", ["slot", "center_hole", "boss"])
    return draft


def _end_hole_words(d: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{holes(rng, 2, d)}, one in each rounded end",
            f"a {dia(d)} hole at each end, centred on the end radius",
        ],
    )
