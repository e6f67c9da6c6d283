"""CAD part families, set B: gears, nuts, brackets, hinges, stands, pulleys, clips and caps.

Each family draws round parameter values from ranges in which every draw builds one valid solid,
writes a short parametric CadQuery program (the same names and construction for every draw), a
prompt that carries every number the program needs, and a spec whose bounding box is computed
from the same formulas the program uses. Bounding boxes are compared in any orientation, since
no prompt says which way a part should face.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from training.corpus import phrasing
from training.corpus.base import Family, Sample

Point = tuple[float, float]


@dataclass
class DrawnFamily:
    """A family whose sampler is a plain function of the seeded random source."""

    name: str
    domain: str
    held_out: bool
    draw: Callable[[random.Random], Sample]

    def sample(self, rng: random.Random) -> Sample:
        """Draw parameters and write the prompt, reference program and spec."""
        drawn = self.draw(rng)
        return replace(drawn, prompt=articles(drawn.prompt))


def articles(text: str) -> str:
    """'a' made 'an' before numbers read with a vowel sound: an 8 mm, an 11 mm, an M6."""
    return re.sub(r"\b([Aa]) (?=8|1[18](?![\d])|M\d)", r"\1n ", text)


def program(params: dict[str, Any], body: str, imports: str = "import cadquery as cq") -> str:
    """A reference program: imports, one parameter per line, the construction."""
    lines = "\n".join(f"{name} = {value!r}" for name, value in params.items())
    return f"{imports}\n\n{lines}\n\n{body.strip()}\n"


def step(rng: random.Random, low: float, high: float, grain: float = 1.0) -> float:
    """A round value in [low, high]: low plus a whole number of grains."""
    steps = max(0, math.floor((high - low) / grain + 1e-9))
    return float(round(low + grain * rng.randint(0, steps), 3))


def clearance(diameter: float) -> str | None:
    """'M5' when the diameter is the clearance hole (size + 0.5 mm) of a metric screw."""
    size = phrasing.metric_size(diameter)
    if size is None or diameter % 1 != 0.5 or float(size[1:]) + 0.5 != diameter:
        return None
    return size


def polygon_area(points: list[Point]) -> float:
    """Area of a simple polygon (shoelace), whatever its winding."""
    total = 0.0
    for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1], strict=True):
        total += x0 * y1 - x1 * y0
    return abs(total) / 2


def revolved_volume(points: list[Point]) -> float:
    """Volume of a polygon in the (r, z) half-plane revolved once round the z axis (Pappus)."""
    area = 0.0
    moment = 0.0  # integral of r over the area
    for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1], strict=True):
        cross = x0 * y1 - x1 * y0
        area += cross / 2
        moment += (x0 + x1) * cross / 6
    return abs(2 * math.pi * moment)


def _spec(bbox: list[float], holes: int, volume: float | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "bbox_mm": [round(v, 3) for v in bbox],
        "holes": holes,
        "solids": 1,
        "any_orientation": True,
    }
    if volume is not None:
        spec["volume_mm3"] = round(volume, 2)
    return spec


def _sizer(rng: random.Random) -> Callable[[float], str]:
    return functools.partial(phrasing.length, rng)


# --- spur gear -------------------------------------------------------------------------------

GEAR_BODY = """
rp = module * teeth / 2
rb = rp * math.cos(math.radians(20))
top = math.sqrt(((rp + module) / rb) ** 2 - 1)
half = math.pi / (2 * teeth) + math.tan(math.radians(20)) - math.radians(20)
flank = [(rp - 1.25 * module, half)]
for k in range(3):
    t = top * k / 2
    flank.append((rb * math.hypot(1, t), half - t + math.atan(t)))
pts = []
for i in range(teeth):
    c = 2 * math.pi * i / teeth
    for r, a in flank + [(r, -a) for r, a in reversed(flank)]:
        pts.append((r * math.cos(c - a), r * math.sin(c - a)))
result = cq.Workplane("XY").polyline(pts).close().circle(bore / 2).extrude(thickness)
"""


def gear_outline(module: float, teeth: int) -> list[Point]:
    """The gear's outline as the reference program builds it (involute flanks as polylines)."""
    rp = module * teeth / 2
    rb = rp * math.cos(math.radians(20))
    top = math.sqrt(((rp + module) / rb) ** 2 - 1)
    half = math.pi / (2 * teeth) + math.tan(math.radians(20)) - math.radians(20)
    flank = [(rp - 1.25 * module, half)]
    for k in range(3):
        t = top * k / 2
        flank.append((rb * math.hypot(1, t), half - t + math.atan(t)))
    points = []
    for i in range(teeth):
        c = 2 * math.pi * i / teeth
        for r, a in flank + [(r, -a) for r, a in reversed(flank)]:
            points.append((r * math.cos(c - a), r * math.sin(c - a)))
    return points


def spur_gear(rng: random.Random) -> Sample:
    """An involute spur gear: module, teeth, thickness and a bore."""
    module = rng.choice([1.0, 1.5, 2.0, 2.5, 3.0])
    teeth = rng.randint(12, 32)
    thickness = step(rng, 3, 20)
    root = module * (teeth / 2 - 1.25)
    bore = step(rng, 3, min(25, math.floor(root)))
    params: dict[str, Any] = {
        "module": module,
        "teeth": teeth,
        "thickness": thickness,
        "bore": bore,
    }
    outline = gear_outline(module, teeth)
    xs, ys = [p[0] for p in outline], [p[1] for p in outline]
    volume = (polygon_area(outline) - math.pi * bore**2 / 4) * thickness
    spec = _spec([max(xs) - min(xs), max(ys) - min(ys), thickness], 1, volume)
    return Sample(_gear_prompt(rng, params), program(params, GEAR_BODY, GEAR_IMPORTS), params, spec)


GEAR_IMPORTS = "import math\n\nimport cadquery as cq"


def _gear_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    m, z, t, b = phrasing.number(p["module"]), p["teeth"], p["thickness"], p["bore"]
    pitch = phrasing.number(p["module"] * z)
    style = rng.randrange(8)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"module {m}",
                f"{phrasing.count(rng, z)} teeth",
                f"{size(t)} thick",
                f"{size(b)} bore",
            ],
        )
        return phrasing.request(rng, phrasing.pick(rng, ["a spur gear", "a gear"]), details)
    if style == 1:
        return f"{z}-tooth spur gear, m{m}, {size(t)} face width, {size(b)} bore"
    if style == 2:
        return (
            f"Involute spur gear: {z} teeth, module {m} mm, thickness {size(t)}, "
            f"centre hole {size(b)}. 20° pressure angle."
        )
    if style == 3:
        return f"gear z={z} m={m} t={phrasing.number(t)} bore={phrasing.number(b)}"
    if style == 4:
        return (
            f"I need a gear with {phrasing.count(rng, z)} teeth at module {m}. Make it {size(t)} "
            f"thick with a {size(b)} hole for the shaft."
        )
    if style == 5:
        return f"Spur gear, {z}T, mod {m}, {size(t)} wide, dia {size(b)} bore (pitch dia {pitch})"
    if style == 6:
        return (
            f"Model a {phrasing.number(t)} mm thick spur gear (module {m}, {z} teeth) with a "
            f"{phrasing.number(b)} mm bore; pitch diameter {pitch} mm."
        )
    return (
        f"20 degree pressure angle spur gear — {z} teeth, module {m}, {size(t)} thick, "
        f"bore ⌀{phrasing.number(b)}"
    )


# --- hex nut ---------------------------------------------------------------------------------

NUT_BODY = """
hexagon = cq.Workplane("XY").polygon(6, across_flats * 2 / 3**0.5).extrude(thickness)
result = hexagon.faces(">Z").workplane().hole(bore)
"""
# ISO metric nuts: nominal size -> (across flats, thickness), thickness rounded to 0.5 mm.
METRIC_NUTS = {
    3.0: (5.5, 2.5),
    4.0: (7.0, 3.0),
    5.0: (8.0, 4.0),
    6.0: (10.0, 5.0),
    8.0: (13.0, 6.5),
    10.0: (16.0, 8.0),
    12.0: (18.0, 10.0),
    16.0: (24.0, 13.0),
    20.0: (30.0, 16.0),
}


def hex_nut(rng: random.Random) -> Sample:
    """A hexagon nut blank: a hex prism with a plain bore (standard M sizes or custom)."""
    if rng.random() < 0.4:
        bore = rng.choice(list(METRIC_NUTS))
        across_flats, thickness = METRIC_NUTS[bore]
    else:
        across_flats = step(rng, 6, 40)
        bore = step(rng, 2, across_flats * 0.6, 0.5)
        thickness = step(rng, 2, min(20, across_flats), 0.5)
    params: dict[str, Any] = {"across_flats": across_flats, "thickness": thickness, "bore": bore}
    volume = (3**0.5 / 2 * across_flats**2 - math.pi * bore**2 / 4) * thickness
    spec = _spec([across_flats * 2 / 3**0.5, across_flats, thickness], 1, volume)
    return Sample(_nut_prompt(rng, params), program(params, NUT_BODY), params, spec)


def _nut_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    af, t, b = p["across_flats"], p["thickness"], p["bore"]
    metric = f"M{phrasing.number(b)}" if b in METRIC_NUTS else None
    hole = f"an {metric} hole" if metric and rng.random() < 0.5 else f"a {size(b)} bore"
    style = rng.randrange(8)
    if style == 0 and metric:
        return f"{metric} nut, {size(af)} across flats, {size(t)} thick"
    if style == 1 and metric:
        return phrasing.request(
            rng, f"an {metric} hex nut", phrasing.dims(rng, [f"AF {size(af)}", f"height {size(t)}"])
        )
    if style == 2:
        return (
            f"hexagon nut for a {phrasing.number(b)} mm bolt, {size(af)} wrench size, "
            f"{size(t)} tall"
        )
    if style == 3:
        return f"nut, hex {phrasing.number(af)} AF x {phrasing.number(t)} thick, {size(b)} bore"
    if style == 4:
        return (
            f"Please model a hex nut (no thread): {phrasing.number(af)} mm across the flats, "
            f"{phrasing.number(t)} mm thick, {phrasing.number(b)} mm through-hole."
        )
    if style == 5:
        return f"hex nut {phrasing.number(af)}AF {phrasing.number(t)}mm, {hole}"
    if style == 6:
        return (
            f"Make a {size(t)} thick hexagonal nut with {hole}; the hex is {size(af)} across flats."
        )
    details = phrasing.dims(rng, [f"{size(af)} flat to flat", f"{size(t)} high", f"bore {size(b)}"])
    return phrasing.request(rng, phrasing.pick(rng, ["a plain nut blank", "a hex nut"]), details)


# --- shelf bracket ---------------------------------------------------------------------------

BRACKET_BODY = """
arms = [(0, 0), (length, 0), (length, thickness), (thickness, thickness)]
arms += [(thickness, height), (0, height)]
web = [(thickness, thickness), (length - thickness, thickness), (thickness, height - thickness)]
bracket = cq.Workplane("XZ").polyline(arms).close().extrude(width / 2, both=True)
bracket = bracket.union(cq.Workplane("XZ").polyline(web).close().extrude(thickness / 2, both=True))
bracket = bracket.faces("<Z").workplane().center((length + thickness) / 2, 0)
bracket = bracket.rarray(1, width / 2, 1, 2).hole(hole)
bracket = bracket.faces("<X").workplane().center(0, (height + thickness) / 2)
result = bracket.rarray(width / 2, 1, 2, 1).hole(hole)
"""
CLEARANCE_HOLES = [3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 8.0, 8.5]


def shelf_bracket(rng: random.Random) -> Sample:
    """An L bracket with a triangular gusset and two screw holes in each arm."""
    length = step(rng, 40, 150, 5)
    height = step(rng, 40, 150, 5)
    thickness = step(rng, 3, 8, 0.5)
    width = step(rng, max(20, 2 * thickness + 12), 60, 2)
    hole = rng.choice([d for d in CLEARANCE_HOLES if d / 2 <= width / 4 - thickness / 2 - 1])
    params: dict[str, Any] = {
        "length": length,
        "height": height,
        "width": width,
        "thickness": thickness,
        "hole": hole,
    }
    arms = (length + height - thickness) * thickness * width
    web = (length - 2 * thickness) * (height - 2 * thickness) / 2 * thickness
    volume = arms + web - 4 * math.pi * hole**2 / 4 * thickness
    spec = _spec([length, width, height], 4, volume)
    return Sample(_bracket_prompt(rng, params), program(params, BRACKET_BODY), params, spec)


def _bracket_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    ln, h, w, t, d = p["length"], p["height"], p["width"], p["thickness"], p["hole"]
    metric = clearance(d)
    holes = f"{size(d)} holes" + (
        f" (for {metric} screws)" if metric and rng.random() < 0.5 else ""
    )
    style = rng.randrange(8)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"{size(ln)} horizontal arm",
                f"{size(h)} vertical arm",
                f"{size(w)} wide",
                f"{size(t)} thick",
                f"two {holes} per arm",
            ],
        )
        return phrasing.request(rng, "a shelf bracket with a gusset", details)
    if style == 1:
        return (
            f"L-shaped shelf bracket, {n(ln)} x {n(h)} mm arms, {n(w)} mm wide, {n(t)} mm "
            f"plate, triangular web in the middle, 2 x {n(d)} mm holes in each leg"
        )
    if style == 2:
        return (
            f"I need a wall bracket to hold a shelf: the wall leg is {size(h)} tall, the shelf leg "
            f"{size(ln)} long, both {size(w)} wide and {size(t)} thick, braced by a gusset. "
            f"Put two {holes} in each leg."
        )
    if style == 3:
        return f"gusseted angle bracket {n(ln)}x{n(h)}x{n(w)}, t={n(t)}, 4 holes dia {n(d)}"
    if style == 4:
        return (
            f"Model a right-angle bracket with a triangular stiffener. Arms: {size(ln)} and "
            f"{size(h)}. Width {size(w)}, thickness {size(t)}, and {phrasing.count(rng, 4)} "
            f"⌀{n(d)} mounting holes, two per arm."
        )
    if style == 5:
        return (
            f"shelf support bracket — base {size(ln)}, upright {size(h)}, {size(w)} across, "
            f"{size(t)} stock, centre gusset, {holes} (2 per side)"
        )
    if style == 6:
        return phrasing.request(
            rng,
            "a corner brace",
            f"{n(ln)} by {n(h)} by {n(w)} mm with {n(t)} mm walls, a diagonal web and "
            f"two {n(d)} mm holes in each flange",
        )
    return (
        f"Bracket for a shelf. Horizontal {size(ln)}, vertical {size(h)}, width {size(w)}, "
        f"material {size(t)}. Gusset between the arms; two {holes} in each arm."
    )


# --- hinge leaf ------------------------------------------------------------------------------

HINGE_BODY = """
leaf = cq.Workplane("XY").box(width, length, thickness, centered=(False, True, False))
leaf = leaf.faces(">Z").workplane().center(width / 2 + knuckle / 4, 0)
leaf = leaf.rarray(1, length / screws, 1, screws).hole(screw)
barrel = cq.Workplane("XZ").center(0, knuckle / 2).circle(knuckle / 2).circle(pin / 2)
result = leaf.union(barrel.extrude(length / 2, both=True))
"""


def hinge_leaf(rng: random.Random) -> Sample:
    """A flat hinge leaf: a knuckle with a pin hole along one edge, screw holes in a row."""
    thickness = step(rng, 1.5, 4, 0.5)
    pin = step(rng, 2, 5, 0.5)
    knuckle = step(rng, 2 * thickness + pin + 2, 2 * thickness + pin + 5, 0.5)
    width = step(rng, max(15, math.ceil(knuckle / 2) + 8), 40)
    screws = rng.randint(2, 4)
    length = step(rng, max(30, screws * 10), 100, 5)
    fits = [d for d in (3.0, 3.5, 4.0, 4.5, 5.0) if d <= width - knuckle / 2 - 3]
    screw = rng.choice([d for d in fits if d <= length / screws - 4])
    params: dict[str, Any] = {
        "length": length,
        "width": width,
        "thickness": thickness,
        "knuckle": knuckle,
        "pin": pin,
        "screw": screw,
        "screws": screws,
    }
    spec = _spec([width + knuckle / 2, length, knuckle], screws + 1)
    return Sample(_hinge_prompt(rng, params), program(params, HINGE_BODY), params, spec)


def _hinge_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    ln, w, t, k, pin, s = (
        p[key] for key in ("length", "width", "thickness", "knuckle", "pin", "screw")
    )
    count = phrasing.count(rng, p["screws"])
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"{size(ln)} long",
                f"leaf {size(w)} wide and {size(t)} thick",
                f"a {size(k)} knuckle with a {size(pin)} pin hole",
                f"{count} {size(s)} screw holes",
            ],
        )
        return phrasing.request(rng, "a hinge leaf", details)
    if style == 1:
        return (
            f"hinge leaf {n(ln)} x {n(w)} x {n(t)} mm, knuckle OD {n(k)}, pin {n(pin)}, "
            f"{p['screws']} x ⌀{n(s)} screw holes"
        )
    if style == 2:
        return (
            f"Make one leaf of a butt hinge: a flat plate {size(w)} wide, {size(ln)} long and "
            f"{size(t)} thick, rolled into a {size(k)} diameter barrel along one long edge with a "
            f"{size(pin)} hole for the pin. Add {count} {size(s)} screw holes in a row."
        )
    if style == 3:
        return (
            f"hinge half: L={n(ln)} W={n(w)} T={n(t)}, barrel dia {n(k)}, pin hole {n(pin)}, "
            f"{p['screws']} holes {n(s)}mm"
        )
    if style == 4:
        return (
            f"I need a {n(ln)} mm hinge leaf with a {n(k)} mm knuckle (pin ⌀{n(pin)}). Leaf: "
            f"{n(w)} mm wide, {n(t)} mm thick, {count} screw holes of {n(s)} mm."
        )
    if style == 5:
        return phrasing.request(
            rng,
            "a hinge plate",
            f"{size(w)} by {size(ln)}, {size(t)} thick, with a knuckle of {size(k)} OD and "
            f"{size(pin)} ID along the edge and {count} mounting holes ({size(s)})",
        )
    return (
        f"Design a hinge leaf. Pin hole {size(pin)} in a {size(k)} knuckle; plate "
        f"{size(ln)} x {size(w)}, thickness {size(t)}; {count} plain {size(s)} screw holes."
    )


# --- phone stand -----------------------------------------------------------------------------

STAND_BODY = """
a = math.radians(angle)
x = depth / 3
top = (x + height * math.cos(a), thickness + height * math.sin(a))
back = (top[0] + thickness * math.sin(a), top[1] - thickness * math.cos(a))
pts = [(0, 0), (depth, 0), (depth, thickness), (x + thickness / math.sin(a), thickness), back, top]
pts += [(x, thickness), (thickness, thickness), (thickness, thickness + lip), (0, thickness + lip)]
result = cq.Workplane("XZ").polyline(pts).close().extrude(width / 2, both=True)
"""


def stand_outline(p: dict[str, Any]) -> list[Point]:
    """The stand's side profile (x forward to back, z up) as the reference program builds it."""
    a = math.radians(p["angle"])
    depth, thickness, height, lip = p["depth"], p["thickness"], p["height"], p["lip"]
    x = depth / 3
    top = (x + height * math.cos(a), thickness + height * math.sin(a))
    back = (top[0] + thickness * math.sin(a), top[1] - thickness * math.cos(a))
    return [
        (0, 0),
        (depth, 0),
        (depth, thickness),
        (x + thickness / math.sin(a), thickness),
        back,
        top,
        (x, thickness),
        (thickness, thickness),
        (thickness, thickness + lip),
        (0, thickness + lip),
    ]


def phone_stand(rng: random.Random) -> Sample:
    """A phone stand in one piece: a base with a front lip and a back plate leaning back."""
    params: dict[str, Any] = {
        "width": step(rng, 50, 100, 5),
        "depth": step(rng, 60, 110, 5),
        "thickness": step(rng, 3, 6, 0.5),
        "height": step(rng, 60, 140, 5),
        "angle": step(rng, 55, 80, 5),
        "lip": step(rng, 5, 15),
    }
    outline = stand_outline(params)
    xs, zs = [q[0] for q in outline], [q[1] for q in outline]
    volume = polygon_area(outline) * params["width"]
    spec = _spec([max(xs) - min(xs), params["width"], max(zs) - min(zs)], 0, volume)
    reference = program(params, STAND_BODY, "import math\n\nimport cadquery as cq")
    return Sample(_stand_prompt(rng, params), reference, params, spec)


def _stand_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    w, d, t, h, a, lip = (p[k] for k in ("width", "depth", "thickness", "height", "angle", "lip"))
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"{size(w)} wide",
                f"a {size(d)} deep base",
                f"a {size(h)} back leaning at {n(a)}°",
                f"{size(t)} thick",
                f"a {size(lip)} lip at the front",
            ],
        )
        return phrasing.request(rng, "a phone stand", details)
    if style == 1:
        return (
            f"phone stand: base {n(d)} deep, {n(w)} wide, {n(t)} mm plate; back rest {n(h)} long "
            f"at {n(a)} deg from horizontal; front lip {n(lip)} high"
        )
    if style == 2:
        return (
            f"I'd like a desk stand for my phone. It should be {size(w)} wide with a {size(d)} "
            f"base, a back plate {size(h)} long tilted {n(a)} degrees from the desk, and a "
            f"{size(lip)} lip to stop the phone sliding off. Wall thickness {size(t)}."
        )
    if style == 3:
        return (
            f"phone holder, one piece, w{n(w)} d{n(d)} t{n(t)}, backrest {n(h)} @ {n(a)}°, "
            f"lip {n(lip)}"
        )
    if style == 4:
        return (
            f"Model an angled stand for a smartphone: {size(t)} thick plates, base {size(d)} "
            f"by {size(w)}, support {size(h)} at {n(a)}°, front ledge {size(lip)} tall."
        )
    if style == 5:
        return phrasing.request(
            rng,
            "a tablet/phone stand",
            f"back plate {size(h)} at an angle of {n(a)} degrees, base depth {size(d)}, "
            f"width {size(w)}, thickness {size(t)} and a {size(lip)} retaining lip",
        )
    return (
        f"Stand to prop a phone up at {n(a)}°. {size(w)} across, {size(d)} footprint depth, "
        f"{size(h)} back, {size(lip)} lip, {size(t)} material."
    )


# --- V-groove pulley -------------------------------------------------------------------------

PULLEY_BODY = """
r = diameter / 2
pts = [(bore / 2, 0), (r, 0), (r, width / 4), (r - groove, width / 2), (r, width * 3 / 4)]
pts += [(r, width), (bore / 2, width)]
result = cq.Workplane("XZ").polyline(pts).close().revolve(360, (0, 0, 0), (0, 1, 0))
"""


def pulley(rng: random.Random) -> Sample:
    """A V-groove pulley, revolved: outside diameter, width, groove depth and bore."""
    diameter = step(rng, 30, 120, 5)
    width = step(rng, 8, 30, 2)
    bore = step(rng, 4, diameter / 4)
    groove = step(rng, 2, min(width / 2, diameter / 2 - bore / 2 - 4), 0.5)
    params: dict[str, Any] = {"diameter": diameter, "width": width, "groove": groove, "bore": bore}
    r = diameter / 2
    profile = [
        (bore / 2, 0),
        (r, 0),
        (r, width / 4),
        (r - groove, width / 2),
        (r, width * 3 / 4),
        (r, width),
        (bore / 2, width),
    ]
    spec = _spec([diameter, diameter, width], 1, revolved_volume(profile))
    return Sample(_pulley_prompt(rng, params), program(params, PULLEY_BODY), params, spec)


def _pulley_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    d, w, g, b = p["diameter"], p["width"], p["groove"], p["bore"]
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [f"OD {size(d)}", f"{size(w)} wide", f"a {size(g)} deep V groove", f"{size(b)} bore"],
        )
        return phrasing.request(rng, "a V-belt pulley", details)
    if style == 1:
        return f"V pulley OD{n(d)} x {n(w)} wide, groove depth {n(g)}, bore {n(b)}"
    if style == 2:
        return (
            f"I need a pulley for a round belt: {size(d)} outside diameter, {size(w)} thick, "
            f"with a V-shaped groove {size(g)} deep around the middle and a {size(b)} shaft hole."
        )
    if style == 3:
        return f"pulley d={n(d)} w={n(w)} v-groove {n(g)} deep, ID {n(b)}"
    if style == 4:
        return (
            f"Model a grooved pulley wheel ({n(d)} mm dia, {n(w)} mm wide). The V groove is "
            f"{n(g)} mm deep and the bore ⌀{n(b)} mm."
        )
    if style == 5:
        return phrasing.request(
            rng,
            "a sheave",
            f"diameter {size(d)}, face width {size(w)}, V groove depth {size(g)}, "
            f"bore dia {size(b)}",
        )
    return (
        f"Make a {n(d)}mm pulley with a {n(g)}mm deep vee groove centred on its {n(w)}mm rim, "
        f"bored {n(b)}mm."
    )


# --- cable clip ------------------------------------------------------------------------------

CLIP_BODY = """
r = cable / 2 + wall
ring = cq.Workplane("XZ").center(0, r).circle(r).extrude(width / 2, both=True)
tab = cq.Workplane("XY").box(r + tab_length, width, wall, centered=(False, True, False))
tab = tab.faces(">Z").workplane().center(r + tab_length / 2, 0).hole(screw)
bore = cq.Workplane("XZ").center(0, r).circle(cable / 2).extrude(width / 2, both=True)
gap = cq.Workplane("XY").box(opening, width, r, centered=(True, True, False)).translate((0, 0, r))
result = ring.union(tab).cut(bore).cut(gap)
"""


def cable_clip(rng: random.Random) -> Sample:
    """A C-shaped cable clip open at the top, with a flat screw tab."""
    cable = step(rng, 4, 16, 0.5)
    wall = step(rng, 1.5, 4, 0.5)
    width = step(rng, 6, 20)
    screw = rng.choice([d for d in (3.0, 3.5, 4.0, 4.5, 5.0) if d <= width - 3])
    tab_length = step(rng, max(8, screw + 4), 25)
    opening = step(rng, math.ceil(cable) / 2, cable * 0.8, 0.5)
    params: dict[str, Any] = {
        "cable": cable,
        "wall": wall,
        "width": width,
        "tab_length": tab_length,
        "screw": screw,
        "opening": opening,
    }
    r = cable / 2 + wall
    spec = _spec([2 * r + tab_length, width, r + math.sqrt(r**2 - opening**2 / 4)], 2)
    return Sample(_clip_prompt(rng, params), program(params, CLIP_BODY), params, spec)


def _clip_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    c, wall, w, tab, s, o = (
        p[k] for k in ("cable", "wall", "width", "tab_length", "screw", "opening")
    )
    metric = clearance(s)
    hole = f"a {phrasing.length(rng, s, False)} hole" + (
        f" for an {metric} screw" if metric and rng.random() < 0.4 else ""
    )
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"for a {size(c)} cable",
                f"{size(wall)} wall",
                f"{size(w)} wide",
                f"a {size(o)} opening on top",
                f"a {size(tab)} screw tab with {hole}",
            ],
        )
        return phrasing.request(rng, "a cable clip", details)
    if style == 1:
        return (
            f"cable clip, ID {n(c)}, wall {n(wall)}, width {n(w)}, snap gap {n(o)}, "
            f"tab {n(tab)} long with ⌀{n(s)} screw hole"
        )
    if style == 2:
        return (
            f"I need a clip to hold a {size(c)} cable against a desk: a C-shaped ring, "
            f"{size(wall)} thick and {size(w)} wide, open {size(o)} at the top so the cable snaps "
            f"in, and a {size(tab)} tab on one side with {hole}."
        )
    if style == 3:
        return (
            f"C clip for {n(c)}mm wire, {n(wall)}mm wall, {n(w)}mm wide, opening {n(o)}mm, "
            f"{n(tab)}mm tab, {n(s)}mm hole"
        )
    if style == 4:
        return (
            f"Model a screw-down cable clip. Inner diameter {size(c)}; ring wall {size(wall)}; "
            f"slot {size(o)} wide at the top; the base tab sticks out {size(tab)} and has "
            f"{hole}. Clip width {size(w)}."
        )
    if style == 5:
        return phrasing.request(
            rng,
            "a wire holder clip",
            f"a {n(c)} mm bore, {n(wall)} mm walls, {n(o)} mm snap-in opening, {n(w)} mm "
            f"long, and a {n(tab)} mm mounting tab with a {n(s)} mm hole",
        )
    return (
        f"Snap-in clip for cables up to {size(c)}: wall {size(wall)}, depth {size(w)}, "
        f"opening {size(o)}, tab {size(tab)} with {hole}."
    )


# --- cylinder cap ----------------------------------------------------------------------------

CAP_BODY = """
result = cq.Workplane("XY").circle(diameter / 2).extrude(height).faces("<Z").shell(-wall)
"""


def cylinder_cap(rng: random.Random) -> Sample:
    """A round cap: a cylinder shelled inward and open at the bottom."""
    diameter = step(rng, 10, 80)
    height = step(rng, 5, 60)
    wall = step(rng, 1, min(4, diameter / 4, height / 2), 0.5)
    params: dict[str, Any] = {"diameter": diameter, "height": height, "wall": wall}
    inner = diameter / 2 - wall
    volume = math.pi * (diameter**2 / 4 * height - inner**2 * (height - wall))
    spec = _spec([diameter, diameter, height], 1, volume)
    return Sample(_cap_prompt(rng, params), program(params, CAP_BODY), params, spec)


def _cap_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    d, h, w = p["diameter"], p["height"], p["wall"]
    inner = n(d - 2 * w)
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng, [f"{size(d)} outside diameter", f"{size(h)} tall", f"{size(w)} wall"]
        )
        return phrasing.request(
            rng, phrasing.pick(rng, ["a round cap", "a cylindrical cap"]), details
        )
    if style == 1:
        return f"end cap OD {n(d)}, height {n(h)}, wall {n(w)} (ID {inner}), open at the bottom"
    if style == 2:
        return (
            f"I need a cap to push over a {inner} mm tube: {n(d)} mm across the outside, "
            f"{n(h)} mm tall, {n(w)} mm walls and top, open underneath."
        )
    if style == 3:
        return f"cap d{n(d)} h{n(h)} wall {n(w)}"
    if style == 4:
        return (
            f"Model a hollow cylinder closed at the top and open at the bottom: diameter "
            f"{size(d)}, height {size(h)}, shell thickness {size(w)}."
        )
    if style == 5:
        return phrasing.request(
            rng,
            "a protective cap",
            f"⌀{n(d)} x {n(h)} mm with a {n(w)} mm shell, open end down",
        )
    return (
        f"Round lid/cap, {size(d)} dia, {size(h)} high, {size(w)} thick everywhere, "
        "hollow with the bottom open."
    )


FAMILIES: list[Family] = [
    DrawnFamily("spur_gear", "cad", False, spur_gear),
    DrawnFamily("hex_nut", "cad", False, hex_nut),
    DrawnFamily("shelf_bracket", "cad", False, shelf_bracket),
    DrawnFamily("hinge_leaf", "cad", False, hinge_leaf),
    DrawnFamily("phone_stand", "cad", True, phone_stand),
    DrawnFamily("pulley", "cad", False, pulley),
    DrawnFamily("cable_clip", "cad", False, cable_clip),
    DrawnFamily("cylinder_cap", "cad", False, cylinder_cap),
]
