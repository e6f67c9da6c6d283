"""Deterministic corpus of valid, parametric CadQuery scripts for benchmarking validators."""

from __future__ import annotations

import random
from collections.abc import Callable


def _r(rng: random.Random, lo: float, hi: float, step: float = 0.5) -> float:
    return round(rng.uniform(lo, hi) / step) * step


def _finish(rng: random.Random, var: str) -> str:
    if rng.random() < 0.25:
        return f'\nshow_object({var}, name="{var}")\n'
    return f"\nresult = {var}\n"


def plate(rng: random.Random) -> str:
    cols, rows, px, py = rng.randint(2, 5), rng.randint(2, 4), _r(rng, 12, 25), _r(rng, 12, 25)
    return f"""length = {px * (cols - 1) + _r(rng, 20, 40)}
width = {py * (rows - 1) + _r(rng, 20, 40)}
thickness = {_r(rng, 3, 12)}
cols = {cols}
rows = {rows}
pitch_x = {px}
pitch_y = {py}
hole_d = {_r(rng, 3, 8)}

import cadquery as cq

plate = cq.Workplane("XY").box(length, width, thickness)
plate = plate.faces(">Z").workplane().rarray(pitch_x, pitch_y, cols, rows).hole(hole_d)
""" + _finish(rng, "plate")


def flange(rng: random.Random) -> str:
    outer_d = _r(rng, 60, 160)
    bore_d = _r(rng, 0.2 * outer_d, 0.4 * outer_d)
    return f"""outer_d = {outer_d}
thickness = {_r(rng, 6, 20)}
bore_d = {bore_d}
hub_d = {_r(rng, bore_d + 8, 0.6 * outer_d)}
hub_h = {_r(rng, 4, 15)}
bolt_circle_d = {_r(rng, 0.72 * outer_d, 0.8 * outer_d)}
bolt_count = {rng.choice([3, 4, 5, 6, 8, 10, 12])}
bolt_d = {_r(rng, 4, 0.08 * outer_d)}

import cadquery as cq

flange = (
    cq.Workplane("XY")
    .circle(outer_d / 2)
    .extrude(thickness)
    .faces(">Z").workplane()
    .polarArray(bolt_circle_d / 2, 0, 360, bolt_count)
    .hole(bolt_d)
    .faces(">Z").workplane().circle(hub_d / 2).extrude(hub_h)
    .faces(">Z").workplane().hole(bore_d)
)
""" + _finish(rng, "flange")


def bracket(rng: random.Random) -> str:
    t = _r(rng, 3, 8)
    return f"""leg_a = {_r(rng, 30, 80)}
leg_b = {_r(rng, 30, 70)}
width = {_r(rng, 20, 50)}
thickness = {t}
bend_r = {_r(rng, 1, 1.5 * t)}
hole_d = {_r(rng, 3, 6)}

import cadquery as cq

profile = [
    (0.0, 0.0), (leg_a, 0.0), (leg_a, thickness),
    (thickness, thickness), (thickness, leg_b), (0.0, leg_b),
]
bracket = cq.Workplane("XZ").polyline(profile).close().extrude(-width)
inner_bend = cq.selectors.NearestToPointSelector((thickness, width / 2, thickness))
bracket = bracket.edges(inner_bend).fillet(bend_r)
hole_x = (leg_a + thickness + bend_r) / 2
hole_pts = [(hole_x, width / 3), (hole_x, 2 * width / 3)]
holes = cq.Workplane("XY").pushPoints(hole_pts).circle(hole_d / 2).extrude(thickness)
bracket = bracket.cut(holes)
""" + _finish(rng, "bracket")


def shelled_box(rng: random.Random) -> str:
    wall = _r(rng, 1.5, 4)
    return f"""box_l = {_r(rng, 40, 120)}
box_w = {_r(rng, 30, 80)}
box_h = {_r(rng, 20, 60)}
wall = {wall}
corner_r = {_r(rng, wall + 1, wall + 8)}

import cadquery as cq

enclosure = cq.Workplane("XY").box(box_l, box_w, box_h).edges("|Z").fillet(corner_r)
enclosure = enclosure.faces(">Z").shell(-wall)
""" + _finish(rng, "enclosure")


def pulley(rng: random.Random) -> str:
    bore_r = _r(rng, 3, 8)
    outer_r = _r(rng, bore_r + 15, bore_r + 40)
    groove = _r(rng, 3, min(10.0, outer_r - bore_r - 8))
    return f"""bore_r = {bore_r}
outer_r = {outer_r}
groove_depth = {groove}
width = {_r(rng, 2 * groove + 6, 2 * groove + 20)}

import cadquery as cq

mid = width / 2
profile = [
    (bore_r, 0.0), (outer_r, 0.0), (outer_r, mid - groove_depth),
    (outer_r - groove_depth, mid), (outer_r, mid + groove_depth),
    (outer_r, width), (bore_r, width),
]
pulley = cq.Workplane("XZ").polyline(profile).close().revolve(360, (0, 0, 0), (0, 1, 0))
""" + _finish(rng, "pulley")


def loft(rng: random.Random) -> str:
    return f"""base_w = {_r(rng, 30, 80)}
base_h = {_r(rng, 20, 60)}
outlet_d = {_r(rng, 10, 30)}
length = {_r(rng, 20, 80)}
flange_t = {_r(rng, 2, 6)}

import cadquery as cq

duct = (
    cq.Workplane("XY")
    .rect(base_w + 10, base_h + 10)
    .extrude(flange_t)
    .faces(">Z").workplane()
    .rect(base_w, base_h)
    .workplane(offset=length)
    .circle(outlet_d / 2)
    .loft(combine=True)
)
""" + _finish(rng, "duct")


def pipe(rng: random.Random) -> str:
    od = _r(rng, 6, 20)
    return f"""tube_od = {od}
tube_id = {_r(rng, 0.5 * od, od - 2)}
rise = {_r(rng, 10, 60)}
bend_r = {_r(rng, od, 3 * od)}
run = {_r(rng, 10, 60)}

import cadquery as cq

path = cq.Workplane("XZ").vLine(rise).tangentArcPoint((bend_r, bend_r)).hLine(run)
section = cq.Workplane("XY").circle(tube_od / 2).circle(tube_id / 2)
tube = section.sweep(path, transition="round")
""" + _finish(rng, "tube")


def cbore_block(rng: random.Random) -> str:
    hole_d = _r(rng, 3.5, 9)
    cbore_d, sx, sy = _r(rng, hole_d + 3, hole_d + 6), _r(rng, 20, 70), _r(rng, 15, 40)
    return f"""block_l = {sx + cbore_d + _r(rng, 6, 20)}
block_w = {sy + cbore_d + _r(rng, 6, 20)}
block_h = {_r(rng, 10, 30)}
hole_d = {hole_d}
cbore_d = {cbore_d}
cbore_depth = {_r(rng, 2, 6)}
spacing_x = {sx}
spacing_y = {sy}

import cadquery as cq

block = (
    cq.Workplane("XY")
    .box(block_l, block_w, block_h)
    .faces(">Z").workplane()
    .rect(spacing_x, spacing_y, forConstruction=True)
    .vertices()
    .cboreHole(hole_d, cbore_d, cbore_depth)
)
""" + _finish(rng, "block")


def gear(rng: random.Random) -> str:
    root_d = _r(rng, 30, 90)
    return f"""root_d = {root_d}
teeth = {rng.randint(8, 18)}
tooth_h = {_r(rng, 2, 6)}
tooth_w = {_r(rng, 1.5, min(6.0, 2.2 * root_d / 24))}
thickness = {_r(rng, 4, 15)}
bore_d = {_r(rng, 4, 0.3 * root_d)}

import cadquery as cq

teeth_wp = (
    cq.Workplane("XY")
    .polarArray(root_d / 2 + tooth_h / 2 - 0.5, 0, 360, teeth)
    .rect(tooth_h + 1.0, tooth_w)
    .extrude(thickness)
)
wheel = cq.Workplane("XY").circle(root_d / 2).extrude(thickness).union(teeth_wp)
wheel = wheel.faces(">Z").workplane().hole(bore_d)
""" + _finish(rng, "wheel")


def assembly(rng: random.Random) -> str:
    plate_t = _r(rng, 4, 10)
    src = f"""plate_l = {_r(rng, 40, 100)}
plate_w = {_r(rng, 30, 70)}
plate_t = {plate_t}
post_d = {_r(rng, 6, 20)}
post_h = {_r(rng, 15, 60)}
cap_d = {_r(rng, 22, 40)}
cap_t = {_r(rng, 3, 8)}
cap_angle = {rng.choice([0, 30, 45, 90])}

import cadquery as cq

plate = cq.Workplane("XY").box(plate_l, plate_w, plate_t).edges("|Z").fillet(2.0)
post = cq.Workplane("XY").circle(post_d / 2).extrude(post_h)
cap = cq.Workplane("XY").polygon(6, cap_d).extrude(cap_t)

assy = (
    cq.Assembly(name="stand")
    .add(plate, name="plate", loc=cq.Location((0, 0, plate_t / 2)), color=cq.Color("gray"))
    .add(post, name="post", loc=cq.Location((0, 0, plate_t)), color=cq.Color("red"))
"""
    if rng.random() < 0.7:
        src += """    .add(
        cap,
        name="cap",
        loc=cq.Location(cq.Vector(0, 0, plate_t + post_h), cq.Vector(0, 0, 1), cap_angle),
    )
"""
    return src + ")\n\nresult = assy\n"


_FUNCS = (plate, flange, bracket, shelled_box, pulley, loft, pipe, cbore_block, gear, assembly)
FAMILIES: dict[str, Callable[[random.Random], str]] = {f.__name__: f for f in _FUNCS}


def corpus(n: int = 120, seed: int = 0) -> list[tuple[str, str]]:
    """Return n deterministic (name, source) pairs of valid CadQuery scripts."""
    rng = random.Random(seed)
    names = list(FAMILIES)
    out: list[tuple[str, str]] = []
    for i in range(n):
        family = names[i % len(names)]
        out.append((f"{i:03d}_{family}", FAMILIES[family](rng)))
    return out
