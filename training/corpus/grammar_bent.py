"""A grammar of CAD programs, part 5: bars swept along bends, and plates bent or leaning at angles.

Two bases that no other part of the grammar reaches: a round rod or a tube (an annulus) swept
along a path that bends through any angle on a stated bend radius, with optional straight runs
before and after the bend; and plates joined at angles: a base plate with a second plate leaning
back from it at a stated angle, an optional lip standing at its front edge and holes in the base.
Their sizes are said the way people say them (outside and inside diameter, bend radius, angle;
plate lengths, angle and thickness), and the bounding box is worked out from the same geometry
the program builds. Their words do not say which way they lie, so the spec compares sizes in any
orientation. See grammar.py.
"""

from __future__ import annotations

import math
import random

from training.corpus.grammar import HOLE_SIZES, Draft, Phrase, a_, dia, mm
from training.corpus.phrasing import (
    count,
    leaves_defaults_unsaid,
    length,
    number,
    pick,
    pick_more,
)

BEND_ANGLES = (30.0, 45.0, 60.0, 90.0, 90.0, 90.0, 120.0, 135.0, 150.0, 180.0)


def swept_base(rng: random.Random) -> Draft:
    """A rod or a tube swept along a bend (any angle, a bend radius), with straight runs."""
    hollow = rng.random() < 0.6
    draft = Draft("swept_tube" if hollow else "swept_rod", uses_math=True, any_orientation=True)
    outer_d = float(rng.choice([6, 8, 10, 12, 16, 20, 25, 30, 32, 40, 50]))
    params: dict[str, float] = {"outer_d": outer_d}
    if hollow:
        wall = rng.choice([w for w in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0) if w <= outer_d / 4])
        params["inner_d"] = outer_d - 2 * wall
    bend_r = mm(rng, max(outer_d * 0.75, 6.0), outer_d * 4, 5 if outer_d >= 10 else 1)
    # A row that leaves defaults unsaid bends through the default right angle half the time, so
    # that "bent on a 35 mm radius" is read as a quarter turn as often as a stated angle is.
    right_angle = leaves_defaults_unsaid() and rng.random() < 0.5
    angle = 90.0 if right_angle else rng.choice(BEND_ANGLES)
    params |= {"bend_r": bend_r, "bend_angle": angle}
    run_a = mm(rng, 5, 6 * outer_d, 5) if rng.random() < 0.4 else 0.0
    run_b = mm(rng, 5, 6 * outer_d, 5) if rng.random() < 0.3 else 0.0
    if run_a:
        params["run_a"] = run_a
    if run_b:
        params["run_b"] = run_b
    draft.params = params
    path = ['path = cq.Workplane("XZ")']
    if run_a:
        path.append("path = path.lineTo(0, run_a)")
    start = "run_a + " if run_a else ""
    path += [
        "a = math.radians(bend_angle)",
        "path = path.threePointArc(",
        f"    (bend_r * (1 - math.cos(a / 2)), {start}bend_r * math.sin(a / 2)),",
        f"    (bend_r * (1 - math.cos(a)), {start}bend_r * math.sin(a)),",
        ")",
    ]
    if run_b:
        path.append("path = path.line(run_b * math.sin(a), run_b * math.cos(a))")
    section = ".circle(outer_d / 2).circle(inner_d / 2)" if hollow else ".circle(outer_d / 2)"
    draft.lines = [*path, f'result = cq.Workplane("XY"){section}.sweep(path)']
    draft.bbox = _swept_box(outer_d / 2, bend_r, angle, run_a, run_b)
    draft.base_phrases = [_swept_words(params)]
    return draft


def _swept_box(r: float, bend_r: float, angle: float, run_a: float, run_b: float) -> list[float]:
    """The box of a round section of radius r swept along the path (x, y, z, in the order the
    program builds it: the bend in XZ, the section's diameter across y)."""
    a = math.radians(angle)
    xs: list[float] = []
    zs: list[float] = []

    def section_at(cx: float, cz: float, tx: float, tz: float) -> None:
        # The section is a disc normal to the path: in the bend's plane it spans ±r along the
        # in-plane normal (-tz, tx).
        xs.extend([cx - r * tz, cx + r * tz])
        zs.extend([cz + r * tx, cz - r * tx])

    section_at(0.0, 0.0, 0.0, 1.0)
    steps = 2000
    for i in range(steps + 1):
        t = a * i / steps
        section_at(
            bend_r * (1 - math.cos(t)), run_a + bend_r * math.sin(t), math.sin(t), math.cos(t)
        )
    end_x, end_z = bend_r * (1 - math.cos(a)), run_a + bend_r * math.sin(a)
    section_at(end_x + run_b * math.sin(a), end_z + run_b * math.cos(a), math.sin(a), math.cos(a))
    return [round(max(xs) - min(xs), 3), round(2 * r, 3), round(max(zs) - min(zs), 3)]


def _swept_words(p: dict[str, float]) -> Phrase:
    def words(rng: random.Random) -> str:
        od, r, angle = p["outer_d"], p["bend_r"], p["bend_angle"]
        if "inner_d" in p:
            inner, wall = p["inner_d"], number((od - p["inner_d"]) / 2)
            size = pick_more(
                rng,
                [
                    f"{dia(od)} outside and {dia(inner)} inside",
                    f"{length(rng, od)} OD, {length(rng, inner)} ID",
                    f"outer diameter {length(rng, od)}, wall {wall} mm",
                    f"{number(od)}/{number(inner)} mm",
                ],
                lambda: [
                    f"for {number(od)} mm tubing, {number(inner)} mm bore",
                    f"OD {number(od)} ID {number(inner)}",
                    f"{length(rng, od)} outside diameter, {length(rng, inner)} inside diameter",
                    f"a {number(od)} mm OD tube with a {wall} mm wall",
                    f"outer Ø{number(od)}, inner Ø{number(inner)}",
                ],
            )
        else:
            size = pick_more(
                rng,
                [f"{dia(od)}", f"{length(rng, od)} diameter", f"{number(od)} mm round"],
                lambda: [f"{number(od)} mm round bar", f"solid, {length(rng, od)} across"],
            )
        if angle == 90 and leaves_defaults_unsaid():
            turn = pick(rng, _unsaid_right_angle(rng, r))
        else:
            turn = pick_more(
                rng,
                [
                    f"bent through {number(angle)}° on {a_(length(rng, r))} bend radius",
                    f"a {number(angle)} degree bend, bend radius {length(rng, r)}",
                    f"curving {number(angle)}° around a {number(r)} mm radius (to its centreline)",
                    f"swept through {number(angle)}° at R{number(r)}",
                ],
                lambda: [
                    f"{_turn_words(rng, angle)}, centreline radius {length(rng, r)}",
                    f"CLR {number(r)}, {_turn_words(rng, angle)}",
                    f"{_turn_words(rng, angle)} on R{number(r)}",
                    f"{number(r)} mm radius to the centre of the tube, {_turn_words(rng, angle)}",
                    f"turning {number(angle)} deg with a {length(rng, r)} centre-line radius",
                    # A bend with no angle said is a right angle, as a tube bender's default is.
                    *(_unsaid_right_angle(rng, r) if angle == 90 else []),
                ],
            )
        runs = []
        if "run_a" in p:
            runs.append(f"a straight run of {length(rng, p['run_a'])} before the bend")
        if "run_b" in p:
            runs.append(f"{a_(length(rng, p['run_b']))} straight after it")
        return ", ".join([size, turn, *runs])

    return words


def _unsaid_right_angle(rng: random.Random, r: float) -> list[str]:
    """A 90° bend said by its radius alone ('bent on a 35 mm radius', 'CLR 20')."""
    return [
        f"bent on {a_(length(rng, r))} radius",
        f"CLR {number(r)}",
        f"centreline radius {length(rng, r)}",
        f"{length(rng, r)} bend radius",
    ]


def _turn_words(rng: random.Random, angle: float) -> str:
    """How far a bend turns, as people say it: 'a quarter turn' for 90°, '120°' otherwise."""
    named = {
        90.0: ["a quarter turn", "a right-angle turn", "90°", "90 degrees"],
        180.0: ["a half turn", "a U-turn", "180°"],
        45.0: ["an eighth of a turn", "45°"],
    }
    return pick(rng, named.get(angle, [f"{number(angle)}°", f"{number(angle)} degrees"]))


def leaning_base(rng: random.Random) -> Draft:
    """A base plate with a plate leaning back from it at an angle, a front lip and holes."""
    draft = Draft("leaning", uses_math=True, any_orientation=True)
    t = rng.choice([2.0, 3.0, 4.0, 5.0, 6.0, 8.0])
    depth = mm(rng, max(30, 6 * t), 160, 5)
    width = mm(rng, 20, 200, 5)
    rise = mm(rng, max(20, 4 * t), 180, 5)
    angle = float(rng.choice([30, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85]))
    a = math.radians(angle)
    # Where the leaning plate meets the base, from the front edge: it must start where its
    # lower corner stays on the base, and lean back no further than the base's back edge.
    low = t * math.sin(a) + t
    set_back = mm(rng, low, max(low, depth - t), 5)
    draft.params = {
        "depth": depth,
        "width": width,
        "thickness": t,
        "set_back": set_back,
        "rise": rise,
        "lean_angle": angle,
    }
    draft.lines = [
        'result = cq.Workplane("XY").box(depth, width, thickness, centered=(False, True, False))',
        'plate = cq.Workplane("XY").box(rise, width, thickness, centered=(False, True, False))',
        "plate = plate.rotate((0, 0, 0), (0, 1, 0), -lean_angle).translate((set_back, 0, 0))",
        "result = result.union(plate)",
    ]
    x_far = max(depth, set_back + rise * math.cos(a))
    z_top = max(t, rise * math.sin(a) + t * math.cos(a))
    draft.bbox = [round(x_far, 3), width, round(z_top, 3)]
    draft.words = ("deep", "wide")
    draft.z_word = "tall"
    draft.base_phrases = [_leaning_words(draft.params)]
    if rng.random() < 0.6:
        lip = mm(rng, t + 3, max(t + 3, min(30, set_back / 2 + 10)))
        line = (
            'result = result.union(cq.Workplane("XY")'
            ".box(thickness, width, lip, centered=(False, True, False)))"
        )
        draft.add("lip", {"lip": lip}, [line], _lip_words(lip))
        if lip > z_top:
            draft.bbox[2] = lip
    front_room = set_back - t * math.sin(a) - (t if "lip" in draft.features else 0)
    d = rng.choice([h for h in HOLE_SIZES if h <= front_room - 6] or [0.0])
    if d and width >= 3 * d + 12 and rng.random() < 0.5:
        n = 2 if width < 80 else rng.choice([2, 3])
        x0 = (set_back - t * math.sin(a) + (t if "lip" in draft.features else 0)) / 2
        pitch = mm(rng, d + 4, (width - d - 8) / (n - 1))
        params = {"hole_d": d, "hole_count": float(n), "hole_pitch": pitch, "hole_x": round(x0, 2)}
        line = (
            'result = result.cut(cq.Workplane("XY").center(hole_x, 0)'
            ".rarray(1, hole_pitch, 1, int(hole_count)).circle(hole_d / 2).extrude(thickness))"
        )
        draft.add("holes_base", params, [line], _base_hole_words(n, d, pitch))
    return draft


def _leaning_words(p: dict[str, float]) -> Phrase:
    def words(rng: random.Random) -> str:
        t, rise, angle = p["thickness"], p["rise"], p["lean_angle"]
        depth, width = p["depth"], p["width"]
        base = pick_more(
            rng,
            [
                f"a {number(depth)} x {number(width)} base plate",
                f"a base {length(rng, depth)} deep and {length(rng, width)} wide",
            ],
            lambda: [
                f"{length(rng, width)} wide with a {length(rng, depth)} deep foot",
                f"base d{number(depth)} w{number(width)}",
                f"a base {number(depth)} deep, {number(width)} wide",
            ],
        )
        lean = pick_more(
            rng,
            [
                f"a {length(rng, rise)} back plate leaning back at {number(angle)}° from the base",
                f"a second plate {number(rise)} mm long tilted {number(angle)} degrees up "
                "from the base",
                f"an upright {length(rng, rise)} long at {number(angle)}° to the base",
            ],
            lambda: [
                f"a back {length(rng, rise)} long at {number(angle)}° from horizontal",
                f"a rest {number(rise)} @ {number(angle)}°",
                f"a {length(rng, rise)} panel reclined to {number(angle)} deg from the floor",
                f"a leaning back {number(rise)} mm long, {number(angle)} degrees to the base",
            ],
        )
        where = pick_more(
            rng,
            [
                f"rising {length(rng, p['set_back'])} back from the front edge",
                f"its foot {number(p['set_back'])} mm from the front",
            ],
            lambda: [f"starting {length(rng, p['set_back'])} behind the front edge"],
        )
        stock = pick_more(
            rng,
            [f"all {length(rng, t)} thick", f"{number(t)} mm plate throughout"],
            lambda: [f"t{number(t)}", f"{length(rng, t)} stock", f"thickness {length(rng, t)}"],
        )
        return ", ".join([base, lean, where, stock])

    return words


def _lip_words(lip: float) -> Phrase:
    return lambda rng: pick_more(
        rng,
        [
            f"a {length(rng, lip)} lip along the front edge",
            f"a front ledge {number(lip)} mm high",
            f"a {number(lip)} mm stop at the front",
        ],
        lambda: [
            f"lip {number(lip)}",
            f"a {length(rng, lip)} high front lip",
            f"front edge raised {number(lip)}",
        ],
    )


def _base_hole_words(n: int, d: float, pitch: float) -> Phrase:
    return lambda rng: pick(
        rng,
        [
            f"{count(rng, n)} {dia(d)} holes in the base in front of the upright, "
            f"{number(pitch)} apart",
            f"{count(rng, n)} {number(d)} mm screw holes through the base, "
            f"{number(pitch)} mm pitch",
        ],
    )


def names_for_bent(draft: Draft) -> list[str]:
    """Everyday names for the bent and leaning bases (a name may repeat to weigh it)."""
    p = draft.params
    if draft.base == "swept_tube":
        names = ["curved tube", "bent tube", "curved pipe", "swept tube", "tube section"]
        return names + (["U tube", "return tube"] if p["bend_angle"] == 180 else [])
    if draft.base == "swept_rod":
        names = ["bent rod", "curved rod", "bent bar", "curved pin"]
        if p["bend_angle"] >= 150 and "run_a" in p:
            names += ["hook", "hook", "J hook"]
        return names + (["grab handle"] if p["bend_angle"] == 180 else [])
    names = ["display stand", "book stand", "easel", "sign holder", "card holder"]
    if p["lean_angle"] <= 45:
        names += ["ramp", "angled bracket"]
    if "lip" in draft.features:
        names += ["book rest", "plate stand", "recipe stand"]
    return names
