"""Build eval/pictures_by_hand.jsonl and eval/pictures/: 16 everyday parts drawn by hand.

Each part below is a small parametric CadQuery program written by hand for this set (named
numbers at the top, the final solid in `result`, as the corpus programs are), of an object no
corpus family makes: a washer, a cup, a picture frame, a door wedge, a cable hook, a tray, a soap
dish, a coat hook, a bottle cap, a cookie cutter, a drawer pull, a pencil holder, a wall plug, a
ruler, a napkin ring and a thread spool.

Every program runs once in the project's sandbox (exporters.export.script_parts, as the image
corpus does); its triangle mesh is drawn once with matplotlib, deliberately not with the
project's renderer (exporters/render.py), so that neither the objects nor the look come from the
corpus: flat shading under one light (face colour = base colour x (0.35 + 0.65 max(0, n.light))),
an orthographic view chosen per part, the part's own colour, a plain paper-coloured background,
no axes, equal aspect, 320 x 320 px, no antialiasing. Back faces are culled, long triangles
split, and the rest painted far to near.

The rows have the image corpus's row format (training/corpus/images.py, `image_row`): 8 ask with
no size ("make this"), 5 give the largest size in words ("sized": "across"), 3 give all three
("sized": "bbox"). The spec follows `image_spec`: the overall size (measured from the built
part, as the validator measures it) only where the words give all three sizes; one solid always.
Every row carries its program as the reference, so the evaluator reports IoU and Chamfer.

Run from the repository root (needs the sandbox): .venv/bin/python eval/make_pictures.py
The same programs give the same rows and the same PNG bytes.
"""

from __future__ import annotations

import ast
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from mpl_toolkits.mplot3d.art3d import Poly3DCollection
from trimesh.remesh import subdivide_to_size

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "pictures_by_hand.jsonl"
PICTURES = "pictures"  # beside the JSONL file; rows name pictures relative to it
SIZE_PX = 320
DPI = 100
BACKGROUND = "#efe9dd"  # plain paper, a colour the corpus's backgrounds never take
AMBIENT = 0.35
SPLIT = 24  # no drawn triangle has an edge longer than the bbox diagonal / SPLIT
FILL = 0.9  # the part reaches this share of the way from the centre to the edge


@dataclass(frozen=True)
class Part:
    """One hand-drawn part: its program, what it is, how it is asked for and how it is drawn."""

    name: str
    description: str  # a plain description of the object (the row's source_prompt)
    words: str  # the request; {big} or {x} {y} {z} are filled in from the built part
    sized: str  # how much size the words give: "none", "across" or "bbox"
    elev: float  # the viewpoint, degrees (matplotlib's view_init)
    azim: float
    color: str
    program: str


WASHER = """\
import cadquery as cq

outer_d = 30.0
inner_d = 13.0
thickness = 2.5
edge_chamfer = 0.4

result = (
    cq.Workplane("XY")
    .circle(outer_d / 2)
    .circle(inner_d / 2)
    .extrude(thickness)
    .edges()
    .chamfer(edge_chamfer)
)
"""

CUP = """\
import cadquery as cq

body_d = 80.0
height = 95.0
wall = 4.0
floor = 6.0
handle_reach = 30.0
handle_h = 60.0
handle_grip = 9.0
handle_t = 12.0
rim_r = 1.5

body = cq.Workplane("XY").circle(body_d / 2).extrude(height)
handle = (
    cq.Workplane("XZ")
    .center(body_d / 2 - wall, height / 2)
    .ellipse(handle_reach + wall, handle_h / 2)
    .ellipse(handle_reach + wall - handle_grip, handle_h / 2 - handle_grip)
    .extrude(handle_t / 2, both=True)
)
cavity = cq.Workplane("XY").workplane(offset=floor).circle(body_d / 2 - wall).extrude(height)
result = body.union(handle).cut(cavity).faces(">Z").edges().fillet(rim_r)
"""

PICTURE_FRAME = """\
import cadquery as cq

width = 130.0
height = 100.0
depth = 12.0
window_w = 90.0
window_h = 60.0
rebate = 3.0
rebate_depth = 5.0
corner_r = 2.0
front_r = 1.5

frame = cq.Workplane("XY").box(width, height, depth).edges("|Z").fillet(corner_r)
window = cq.Workplane("XY").box(window_w, window_h, depth + 2)
back = (
    cq.Workplane("XY")
    .workplane(offset=-depth / 2 - 1)
    .rect(window_w + 2 * rebate, window_h + 2 * rebate)
    .extrude(rebate_depth + 1)
)
result = frame.cut(window).faces(">Z").edges().fillet(front_r).cut(back)
"""

DOOR_WEDGE = """\
import cadquery as cq

length = 120.0
width = 40.0
heel = 25.0
toe = 3.0
grip_d = 12.0
grip_x = 100.0

wedge = (
    cq.Workplane("XZ")
    .polyline([(0, 0), (length, 0), (length, heel), (0, toe)])
    .close()
    .extrude(width / 2, both=True)
)
grip = (
    cq.Workplane("XY")
    .workplane(offset=-1)
    .center(grip_x, 0)
    .circle(grip_d / 2)
    .extrude(heel + 2)
)
result = wedge.cut(grip)
"""

CABLE_HOOK = """\
import cadquery as cq

base_l = 30.0
base_w = 20.0
base_t = 3.0
corner_r = 4.0
hook_r = 7.0
hook_t = 2.5
hook_w = 10.0
opening = 6.0

base = (
    cq.Workplane("XY")
    .box(base_l, base_w, base_t, centered=(True, True, False))
    .edges("|Z")
    .fillet(corner_r)
)
centre_z = base_t + hook_r + hook_t - 1.0
ring = (
    cq.Workplane("YZ")
    .center(0, centre_z)
    .circle(hook_r + hook_t)
    .circle(hook_r)
    .extrude(hook_w / 2, both=True)
)
gap = (
    cq.Workplane("XY")
    .box(hook_w + 2, opening, hook_r + hook_t + 1, centered=(True, True, False))
    .translate((0, hook_r / 2, centre_z))
)
result = base.union(ring).cut(gap)
"""

TRAY = """\
import cadquery as cq

length = 140.0
width = 90.0
height = 20.0
wall = 2.5
floor = 2.0
corner_r = 12.0
foot_r = 2.0

outside = (
    cq.Workplane("XY")
    .box(length, width, height, centered=(True, True, False))
    .edges("|Z")
    .fillet(corner_r)
    .faces("<Z")
    .edges()
    .fillet(foot_r)
)
inside = (
    cq.Workplane("XY")
    .workplane(offset=floor)
    .box(length - 2 * wall, width - 2 * wall, height, centered=(True, True, False))
    .edges("|Z")
    .fillet(corner_r - wall)
)
result = outside.cut(inside)
"""

SOAP_DISH = """\
import cadquery as cq

length = 110.0
width = 75.0
height = 18.0
rim = 5.0
floor = 4.0
rim_r = 2.0
slot_l = 40.0
slot_w = 5.0
slots = 5
slot_pitch = 10.0

dish = cq.Workplane("XY").ellipse(length / 2, width / 2).extrude(height).edges(">Z").fillet(rim_r)
pocket = (
    cq.Workplane("XY")
    .workplane(offset=floor)
    .ellipse(length / 2 - rim, width / 2 - rim)
    .extrude(height)
)
drains = (
    cq.Workplane("XY")
    .workplane(offset=-1)
    .rarray(1, slot_pitch, 1, slots)
    .slot2D(slot_l, slot_w)
    .extrude(floor + 2)
)
result = dish.cut(pocket).cut(drains)
"""

COAT_HOOK = """\
import math

import cadquery as cq

plate_w = 26.0
plate_h = 70.0
plate_t = 6.0
plate_r = 5.0
screw_d = 4.5
screw_pitch = 45.0
arm_d = 10.0
arm_l = 55.0
arm_angle = 35.0
arm_z = 26.0
knob_d = 16.0

plate = (
    cq.Workplane("XY")
    .box(plate_w, plate_t, plate_h, centered=(True, False, False))
    .edges("|Y")
    .fillet(plate_r)
)
start = cq.Vector(0, plate_t / 2, arm_z)
along = cq.Vector(0, -math.cos(math.radians(arm_angle)), math.sin(math.radians(arm_angle)))
arm = cq.Solid.makeCylinder(arm_d / 2, arm_l, start, along)
end = start + along * arm_l
knob = cq.Workplane("XY").sphere(knob_d / 2).translate((end.x, end.y, end.z))
screws = (
    cq.Workplane("XZ", origin=(0, plate_t + 1, 0))
    .pushPoints([(0, plate_h / 2 - screw_pitch / 2), (0, plate_h / 2 + screw_pitch / 2)])
    .circle(screw_d / 2)
    .extrude(plate_t + 2)
)
result = plate.union(arm).union(knob).cut(screws)
"""

BOTTLE_CAP = """\
import cadquery as cq

cap_d = 32.0
height = 14.0
wall = 1.8
top = 2.0
top_chamfer = 1.0
ribs = 36
rib_d = 1.4
bead_z = 4.0
bead_t = 1.5
bead_depth = 1.0

cap = cq.Workplane("XY").circle(cap_d / 2).extrude(height).faces(">Z").edges().chamfer(top_chamfer)
inside = cq.Workplane("XY").circle(cap_d / 2 - wall).extrude(height - top)
grip = (
    cq.Workplane("XY")
    .polarArray(cap_d / 2, 0, 360, ribs)
    .circle(rib_d / 2)
    .extrude(height - 3 * top_chamfer)
)
bead = (
    cq.Workplane("XY")
    .workplane(offset=bead_z)
    .circle(cap_d / 2 - wall + 0.1)
    .circle(cap_d / 2 - wall - bead_depth)
    .extrude(bead_t)
)
result = cap.cut(inside).cut(grip).union(bead)
"""

COOKIE_CUTTER = """\
import math

import cadquery as cq

points = 5
outer_r = 40.0
inner_r = 18.0
height = 20.0
wall = 1.2
lip = 3.0
lip_t = 2.0

star = [
    (
        (outer_r if k % 2 == 0 else inner_r) * math.cos(math.pi / 2 + k * math.pi / points),
        (outer_r if k % 2 == 0 else inner_r) * math.sin(math.pi / 2 + k * math.pi / points),
    )
    for k in range(2 * points)
]
outside = cq.Workplane("XY").polyline(star).close().extrude(height)
lip_ring = (
    cq.Workplane("XY")
    .workplane(offset=height - lip_t)
    .polyline(star)
    .close()
    .offset2D(lip)
    .extrude(lip_t)
)
inside = (
    cq.Workplane("XY")
    .workplane(offset=-1)
    .polyline(star)
    .close()
    .offset2D(-wall)
    .extrude(height + 2)
)
result = outside.union(lip_ring).cut(inside)
"""

DRAWER_PULL = """\
import cadquery as cq

centres = 96.0
length = 128.0
bar_w = 10.0
bar_t = 8.0
bar_r = 3.0
stand_off = 28.0
post_d = 9.0
screw_d = 3.3
screw_depth = 10.0

bar = (
    cq.Workplane("XY")
    .box(length, bar_w, bar_t, centered=(True, True, False))
    .edges()
    .fillet(bar_r)
    .translate((0, 0, stand_off - bar_t))
)
posts = (
    cq.Workplane("XY")
    .pushPoints([(-centres / 2, 0), (centres / 2, 0)])
    .circle(post_d / 2)
    .extrude(stand_off - bar_t + 1)
)
screws = (
    cq.Workplane("XY")
    .workplane(offset=-1)
    .pushPoints([(-centres / 2, 0), (centres / 2, 0)])
    .circle(screw_d / 2)
    .extrude(screw_depth + 1)
)
result = bar.union(posts).cut(screws)
"""

PENCIL_HOLDER = """\
import math

import cadquery as cq

across_corners = 80.0
height = 100.0
wall = 3.0
floor = 4.0
corner_r = 3.0

outside = cq.Workplane("XY").polygon(6, across_corners).extrude(height).edges("|Z").fillet(corner_r)
inside = (
    cq.Workplane("XY")
    .workplane(offset=floor)
    .polygon(6, across_corners - 2 * wall / math.cos(math.pi / 6))
    .extrude(height)
)
result = outside.cut(inside)
"""

WALL_PLUG = """\
import cadquery as cq

length = 40.0
shank_d = 8.0
collar_d = 12.0
collar_t = 2.0
tip_chamfer = 1.0
bore_d = 4.5
barb_d = 9.6
barb_l = 3.0
barbs = 5
barb_pitch = 5.0
first_barb = 6.0
slot_w = 1.6
slot_l = 18.0

plug = (
    cq.Workplane("XY")
    .circle(shank_d / 2)
    .extrude(length)
    .faces(">Z")
    .edges()
    .chamfer(tip_chamfer)
    .union(cq.Workplane("XY").circle(collar_d / 2).extrude(collar_t))
)
for k in range(barbs):
    z = collar_t + first_barb + k * barb_pitch
    barb = cq.Solid.makeCone(barb_d / 2, shank_d / 2 - 0.2, barb_l, cq.Vector(0, 0, z))
    plug = plug.union(barb)
bore = cq.Workplane("XY").workplane(offset=-1).circle(bore_d / 2).extrude(length + 2)
slot = (
    cq.Workplane("XY")
    .box(barb_d + 2, slot_w, slot_l + 1, centered=(True, True, False))
    .translate((0, 0, length - slot_l))
)
result = plug.cut(bore).cut(slot)
"""

RULER = """\
import cadquery as cq

length = 150.0
width = 25.0
thickness = 3.0
bevel = 1.5
zero_x = -70.0
cm_marks = 14
mark_w = 0.6
mark_depth = 0.5
long_mark = 8.0
short_mark = 4.5
hole_d = 6.0
hole_x = 66.0

ruler = (
    cq.Workplane("XY")
    .box(length, width, thickness, centered=(True, True, False))
    .faces(">Z")
    .edges(">Y")
    .chamfer(bevel)
)
long_marks = [(zero_x + 10 * k, width / 2 - long_mark / 2) for k in range(cm_marks)]
short_marks = [(zero_x + 5 + 10 * k, width / 2 - short_mark / 2) for k in range(cm_marks - 1)]
cuts = (
    cq.Workplane("XY")
    .workplane(offset=thickness - mark_depth)
    .pushPoints(long_marks)
    .rect(mark_w, long_mark)
    .extrude(1.0)
    .union(
        cq.Workplane("XY")
        .workplane(offset=thickness - mark_depth)
        .pushPoints(short_marks)
        .rect(mark_w, short_mark)
        .extrude(1.0)
    )
)
hole = cq.Workplane("XY").workplane(offset=-1).center(hole_x, 0).circle(hole_d / 2).extrude(5)
result = ruler.cut(cuts).cut(hole)
"""

NAPKIN_RING = """\
import cadquery as cq

outer_d = 50.0
inner_d = 42.0
width = 30.0
edge_r = 1.0
groove_w = 2.0
groove_depth = 1.0
groove_offset = 9.0

ring = (
    cq.Workplane("YZ")
    .circle(outer_d / 2)
    .circle(inner_d / 2)
    .extrude(width / 2, both=True)
    .edges()
    .fillet(edge_r)
)
for x in (-groove_offset, groove_offset):
    groove = (
        cq.Workplane("YZ")
        .workplane(offset=x - groove_w / 2)
        .circle(outer_d / 2 + 1)
        .circle(outer_d / 2 - groove_depth)
        .extrude(groove_w)
    )
    ring = ring.cut(groove)
result = ring.translate((0, 0, outer_d / 2))
"""

SPOOL = """\
import cadquery as cq

flange_d = 40.0
flange_t = 3.0
flange_chamfer = 0.8
barrel_d = 20.0
barrel_l = 30.0
bore_d = 8.0
notch_w = 1.5
notch_l = 5.0

bottom = cq.Workplane("XY").circle(flange_d / 2).extrude(flange_t).edges().chamfer(flange_chamfer)
barrel = cq.Workplane("XY").workplane(offset=flange_t).circle(barrel_d / 2).extrude(barrel_l)
top = (
    cq.Workplane("XY")
    .workplane(offset=flange_t + barrel_l)
    .circle(flange_d / 2)
    .extrude(flange_t)
    .edges()
    .chamfer(flange_chamfer)
)
bore = (
    cq.Workplane("XY")
    .workplane(offset=-1)
    .circle(bore_d / 2)
    .extrude(barrel_l + 2 * flange_t + 2)
)
notch = (
    cq.Workplane("XY")
    .box(notch_l + 1, notch_w, flange_t + 2, centered=(False, True, False))
    .translate((flange_d / 2 - notch_l, 0, flange_t + barrel_l - 1))
)
result = bottom.union(barrel).union(top).cut(bore).cut(notch)
"""

PARTS = [
    Part(
        name="washer",
        description="a flat washer with chamfered edges",
        words="make this",
        sized="none",
        elev=40,
        azim=-50,
        color="#b8b2a6",
        program=WASHER,
    ),
    Part(
        name="cup",
        description="a mug: a round cup with a thick floor and a loop handle on its side",
        words="this, {big} mm across",
        sized="across",
        elev=20,
        azim=-35,
        color="#d9694a",
        program=CUP,
    ),
    Part(
        name="picture_frame",
        description="a picture frame lying face up: a rectangular frame with a window, "
        "rounded front edges and a rebate at the back for the glass",
        words="like this, {x} x {y} x {z} mm",
        sized="bbox",
        elev=55,
        azim=-70,
        color="#8b5a2b",
        program=PICTURE_FRAME,
    ),
    Part(
        name="door_wedge",
        description="a door wedge with a finger hole through its thick end",
        words="make this, about {big} mm across",
        sized="across",
        elev=25,
        azim=-130,
        color="#e0b23a",
        program=DOOR_WEDGE,
    ),
    Part(
        name="cable_hook",
        description="a stick-on cable hook: a flat pad with an open ring a cable clicks into",
        words="model this part",
        sized="none",
        elev=20,
        azim=-25,
        color="#4aa3a2",
        program=CABLE_HOOK,
    ),
    Part(
        name="tray",
        description="a shallow tray with rounded corners and a rounded bottom edge",
        words="like this, {big} mm across",
        sized="across",
        elev=45,
        azim=-60,
        color="#7a5fa0",
        program=TRAY,
    ),
    Part(
        name="soap_dish",
        description="an oval soap dish with five drain slots through its floor",
        words="recreate this",
        sized="none",
        elev=50,
        azim=-40,
        color="#8fc9b9",
        program=SOAP_DISH,
    ),
    Part(
        name="coat_hook",
        description="a coat hook: a wall plate with two screw holes and an arm rising from it "
        "that ends in a ball",
        words="CadQuery for the part in the picture",
        sized="none",
        elev=15,
        azim=-45,
        color="#c9a227",
        program=COAT_HOOK,
    ),
    Part(
        name="bottle_cap",
        description="a bottle cap: a hollow cap with a ribbed grip around it and a bead inside",
        words="build this",
        sized="none",
        elev=30,
        azim=-60,
        color="#2e8b57",
        program=BOTTLE_CAP,
    ),
    Part(
        name="cookie_cutter",
        description="a five-pointed star cookie cutter: a thin wall with a flat lip along the top",
        words="the thing in the picture, please",
        sized="none",
        elev=50,
        azim=-80,
        color="#c0c6cc",
        program=COOKIE_CUTTER,
    ),
    Part(
        name="drawer_pull",
        description="a drawer pull handle: a rounded bar on two posts with screw holes",
        words="this part, {x} by {y} by {z} mm",
        sized="bbox",
        elev=30,
        azim=-65,
        color="#5a6770",
        program=DRAWER_PULL,
    ),
    Part(
        name="pencil_holder",
        description="a hexagonal pencil holder with rounded corners",
        words="model this part, {big} mm across",
        sized="across",
        elev=30,
        azim=-60,
        color="#e58fb0",
        program=PENCIL_HOLDER,
    ),
    Part(
        name="wall_plug",
        description="a wall plug: a barbed shank with a collar, a bore and a split tip",
        words="can you model this?",
        sized="none",
        elev=15,
        azim=-60,
        color="#9fb7d0",
        program=WALL_PLUG,
    ),
    Part(
        name="ruler",
        description="a 15 cm ruler with a bevelled edge, millimetre-scale marks and a hanging hole",
        words="make this, overall {x} x {y} x {z} mm",
        sized="bbox",
        elev=50,
        azim=70,
        color="#3fa7d6",
        program=RULER,
    ),
    Part(
        name="napkin_ring",
        description="a napkin ring with two grooves around it and rounded edges",
        words="this, in CAD",
        sized="none",
        elev=20,
        azim=-30,
        color="#b5651d",
        program=NAPKIN_RING,
    ),
    Part(
        name="spool",
        description="a thread spool: two chamfered flanges on a barrel, a bore and a notch in "
        "the top rim",
        words="recreate this, {big} mm across",
        sized="across",
        elev=25,
        azim=-60,
        color="#caa472",
        program=SPOOL,
    ),
]


def parameters(program: str) -> dict[str, Any]:
    """The program's named numbers: its top-level assignments of a number, in order."""
    found: dict[str, Any] = {}
    for node in ast.parse(program).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int | float)
        ):
            found[node.targets[0].id] = node.value.value
    return found


def mm(value: float) -> str:
    """A size as words write it: 12, 12.5 (one decimal at most)."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def light_direction(elev: float, azim: float) -> np.ndarray:
    """The light, above and to the right of the eye: a unit vector towards the light."""
    e, a = math.radians(min(elev + 35, 85)), math.radians(azim + 40)
    return np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])


def eye_direction(elev: float, azim: float) -> np.ndarray:
    """The unit vector from the part towards the eye, as matplotlib places it."""
    e, a = math.radians(elev), math.radians(azim)
    return np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])


def draw(parts: list[Any], part: Part, path: Path) -> None:
    """Draw the meshed parts, flat shaded, filling the frame (a trial drawing at zoom 1 measures
    how much room the part takes), and write a PNG with stable bytes."""
    vertices = np.concatenate([p.vertices.astype(np.float64) for p in parts])
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    triangles = np.concatenate([p.triangles + o for p, o in zip(parts, offsets, strict=True)])
    corners = vertices[triangles]  # (n, 3, 3)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    keep = lengths > 1e-12
    corners, normals = corners[keep], normals[keep] / lengths[keep, None]
    facing = normals @ eye_direction(part.elev, part.azim) > 0  # orthographic: exact culling
    corners, normals = corners[facing], normals[facing]
    light = light_direction(part.elev, part.azim)
    base = np.array(matplotlib.colors.to_rgb(part.color))
    shade = AMBIENT + (1 - AMBIENT) * np.clip(normals @ light, 0, None)
    colours = np.clip(base[None, :] * shade[:, None], 0, 1)
    low, high = vertices.min(axis=0), vertices.max(axis=0)
    # long triangles are split so that painting far to near by mean depth has little to get wrong
    points, faces, source = subdivide_to_size(
        corners.reshape(-1, 3),
        np.arange(3 * len(corners)).reshape(-1, 3),
        max_edge=float(np.linalg.norm(high - low)) / SPLIT,
        max_iter=12,
        return_index=True,
    )
    corners, colours = points[faces], colours[source]

    def figure_at(zoom: float) -> Any:
        figure = plt.figure(figsize=(SIZE_PX / DPI, SIZE_PX / DPI), dpi=DPI, facecolor=BACKGROUND)
        axes = figure.add_axes((0, 0, 1, 1), projection="3d", facecolor=BACKGROUND)
        axes.set_proj_type("ortho")
        axes.view_init(elev=part.elev, azim=part.azim)
        axes.set_xlim(low[0], high[0])
        axes.set_ylim(low[1], high[1])
        axes.set_zlim(low[2], high[2])
        axes.set_box_aspect(tuple(np.maximum(high - low, 1e-3)), zoom=zoom)  # equal aspect
        axes.add_collection3d(
            Poly3DCollection(
                corners, facecolors=colours, linewidths=0, antialiased=False, zsort="average"
            )
        )
        axes.set_axis_off()
        return figure

    trial = figure_at(1.0)  # how much of the frame the part takes at zoom 1
    trial.canvas.draw()
    zoom = FILL / reach(np.asarray(trial.canvas.buffer_rgba())[:, :, :3])
    plt.close(trial)
    figure = figure_at(zoom)
    figure.savefig(path, dpi=DPI, facecolor=BACKGROUND, metadata={"Software": None})
    plt.close(figure)


def reach(pixels: np.ndarray) -> float:
    """How far the drawn part reaches from the picture's centre, as a share of half its side."""
    background = np.array([round(255 * c) for c in matplotlib.colors.to_rgb(BACKGROUND)])
    rows, columns = np.nonzero(np.abs(pixels.astype(int) - background).sum(axis=2) > 6)
    half = (pixels.shape[0] - 1) / 2
    return max(np.abs(rows - half).max(), np.abs(columns - half).max()) / half


def look(part: Part) -> dict[str, Any]:
    """How the picture was drawn (the row's `look`)."""
    return {
        "renderer": "matplotlib",
        "projection": "ortho",
        "elev": part.elev,
        "azim": part.azim,
        "shading": "flat",
        "ambient": AMBIENT,
        "light": [round(float(v), 4) for v in light_direction(part.elev, part.azim)],
        "color": part.color,
        "background": BACKGROUND,
        "size": SIZE_PX,
        "fill": FILL,
    }


def row(part: Part, bbox: list[float]) -> dict[str, Any]:
    """The image task of a part, in the image corpus's row format."""
    from training.corpus.images import image_spec

    x, y, z = (mm(v) for v in bbox)
    words = part.words.format(big=mm(max(bbox)), x=x, y=y, z=z)
    return {
        "id": f"hand-{part.name}",
        "domain": "cad",
        "family": "by_hand",
        "split": "test",
        "prompt": words,
        "images": [f"{PICTURES}/{part.name}.png"],
        "look": look(part),
        "sized": part.sized,
        "reference": part.program,
        "params": parameters(part.program),
        "spec": image_spec({"bbox_mm": bbox, "solids": 1}, part.sized),
        "source_prompt": part.description,
        "image": True,
    }


def main() -> int:
    """Build every part in the sandbox, draw it and write the rows; 1 if a part fails."""
    from exporters.export import ExportError, script_parts
    from genservice.sandboxes import open_pool, sandbox_limits

    started = time.perf_counter()
    (HERE / PICTURES).mkdir(exist_ok=True)
    limits, _, isolation = sandbox_limits(30.0, 1)
    rows = []
    with open_pool(1, limits, isolation, "cad") as pool:
        for part in PARTS:
            try:
                parts, report = script_parts(part.program, pool, limits=limits)
            except ExportError as exc:
                print(f"{part.name}: {exc}", file=sys.stderr)
                return 1
            solids = report.metrics.get("solids")
            if not report.valid or solids != 1:
                why = report.error.message if report.error else f"{solids} solids"
                print(f"{part.name}: not one valid solid: {why}", file=sys.stderr)
                return 1
            bbox = [round(float(v), 2) for v in report.metrics["bbox_mm"]]
            draw(parts, part, HERE / PICTURES / f"{part.name}.png")
            rows.append(row(part, bbox))
            print(f"{part.name:14s} {' x '.join(mm(v) for v in bbox)} mm  {rows[-1]['prompt']!r}")
    counts = {s: sum(1 for r in rows if r["sized"] == s) for s in ("none", "across", "bbox")}
    if counts != {"none": 8, "across": 5, "bbox": 3}:
        print(f"the rows should be 8 unsized, 5 across, 3 bbox; they are {counts}", file=sys.stderr)
        return 1
    partial = OUTPUT.with_name(f".{OUTPUT.name}.partial")
    partial.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    partial.replace(OUTPUT)
    print(f"{len(rows)} rows -> {OUTPUT} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
