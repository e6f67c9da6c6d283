"""CAD part families, set A: plates, brackets, flanges, washers, standoffs, boxes, knobs, elbows.

Each family draws round dimensions that always build one valid solid, writes the reference as a
short parametric CadQuery script (one named parameter per line, the same construction for every
draw), a prompt in one of many phrasings, and a spec the validator checks: the bounding box, the
hole count as the validator counts holes (distinct concave cylinder axes), one solid, and the
volume where it has a closed form. Hole sizes written "M5" mean a 5.5 mm clearance hole.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from training.corpus.base import Family, Sample
from training.corpus.phrasing import (
    NUMBER_WORDS,
    article,
    count,
    dims,
    length,
    metric_size,
    number,
    pick,
    request,
)

HOLE_SIZES = (3.5, 4.5, 5.5, 6.5, 8.5)  # clearance holes for M3 .. M8


def an(phrase: str) -> str:
    """'a' or 'an' for a phrase, also before numbers and metric sizes ('an 8 mm', 'an M5')."""
    if re.match(r"(8|11\b|18\b|M\d|L\b|L-)", phrase):
        return "an"
    return article(phrase)


def a(phrase: str) -> str:
    """The phrase with its indefinite article: 'a 60 mm', 'an 80 mm', 'an M5'."""
    return f"{an(phrase)} {phrase}"


def program(params: dict[str, Any], body: list[str]) -> str:
    """A reference script: the import, one parameter per line, then the construction."""
    lines = ["import cadquery as cq", ""]
    lines += [f"{name} = {value!r}" for name, value in params.items()]
    return "\n".join([*lines, "", *body]) + "\n"


def clearance(diameter: float) -> str | None:
    """'M5' when the diameter is the clearance hole (size + 0.5 mm) of a metric bolt."""
    if diameter % 1 != 0.5:
        return None
    size = metric_size(diameter)
    return size if size is not None and float(size[1:]) + 0.5 == diameter else None


def hole_size(rng: random.Random, diameter: float) -> str:
    """A hole size as written before 'holes': 'M5', '5.5 mm', 'Ø5.5', '5.5 mm dia'."""
    options = [f"{length(rng, diameter, False)}", f"Ø{number(diameter)}", f"{number(diameter)} dia"]
    metric = clearance(diameter)
    if metric is not None:
        options += [metric, metric, f"{metric} clearance"]
    return pick(rng, options)


def holes(rng: random.Random, n: int, diameter: float) -> str:
    """A counted set of holes: 'four M5 holes', '4x Ø5.5 holes', '4 holes for M5 bolts'."""
    size = hole_size(rng, diameter)
    options = [
        f"{count_before(rng, n, size)} {size} holes",
        f"{n}x {size} holes",
        f"{count_before(rng, n, size)} {size} through holes",
        f"{count(rng, n)} holes of {length(rng, diameter, False)} diameter",
    ]
    metric = clearance(diameter)
    if metric is not None:
        options += [f"{count(rng, n)} holes for {metric} bolts", f"{count(rng, n)} {metric} holes"]
    return pick(rng, options)


def count_before(rng: random.Random, n: int, following: str) -> str:
    """A count that reads well before the next words: a word or '24x' before a number."""
    if not following[:1].isdigit():
        return count(rng, n)
    return NUMBER_WORDS.get(n, f"{n}x")


def diameter(rng: random.Random, value: float, which: str) -> str:
    """An outer or inner diameter: 'OD 60', '60 mm OD', 'outer diameter 60 mm', 'Ø60 outside'."""
    short = {"outer": "OD", "inner": "ID"}[which]
    side = {"outer": "outside", "inner": "inside"}[which]
    mm = length(rng, value)
    return pick(
        rng,
        [
            f"{short} {number(value)}",
            f"{mm} {short}",
            f"{which} diameter {mm}",
            f"{mm} {which} diameter",
            f"Ø{number(value)} {side}",
            f"{side} diameter of {mm}",
        ],
    )


def thick(rng: random.Random, value: float) -> str:
    """A thickness: '8 mm thick', '8 thk', 't = 8 mm', 'thickness 8'."""
    mm = length(rng, value)
    return pick(
        rng,
        [f"{mm} thick", f"{number(value)} thk", f"t = {mm}", f"thickness {mm}", f"{mm} thickness"],
    )


def fill(rng: random.Random, templates: list[str], pieces: dict[str, str]) -> str:
    """One of the templates filled in, with its first letter upper-cased."""
    text = pick(rng, templates).format(**pieces)
    return text[:1].upper() + text[1:]


@dataclass
class PlateHoles:
    """A rectangular plate with rounded corners and a grid of through holes."""

    name: str = "plate_holes"
    domain: str = "cad"
    held_out: bool = False

    def sample(self, rng: random.Random) -> Sample:
        """Draw a plate, its hole grid and corner radius."""
        cols, rows = rng.randint(2, 5), rng.randint(2, 4)
        hole_d = rng.choice(HOLE_SIZES)
        low = 5 * math.ceil((hole_d + 5) / 5)
        pitch_x, pitch_y = float(rng.randrange(low, 45, 5)), float(rng.randrange(low, 45, 5))
        corner_r = float(rng.choice([2, 3, 4, 5, 6]))
        edge = math.ceil(hole_d / 2 + corner_r + 2)
        edge_x, edge_y = rng.randint(edge, edge + 8), rng.randint(edge, edge + 8)
        if (rows - 1) * pitch_y + 2 * edge_y > (cols - 1) * pitch_x + 2 * edge_x:
            cols, rows, pitch_x, pitch_y = rows, cols, pitch_y, pitch_x
            edge_x, edge_y = edge_y, edge_x
        p: dict[str, Any] = {
            "length": float((cols - 1) * pitch_x + 2 * edge_x),
            "width": float((rows - 1) * pitch_y + 2 * edge_y),
            "thickness": float(rng.choice([3, 4, 5, 6, 8, 10, 12])),
            "hole_d": hole_d,
            "cols": cols,
            "rows": rows,
            "pitch_x": pitch_x,
            "pitch_y": pitch_y,
            "corner_r": corner_r,
        }
        body = [
            'plate = cq.Workplane("XY").box(length, width, thickness).edges("|Z").fillet(corner_r)',
            'result = plate.faces(">Z").workplane().rarray(pitch_x, pitch_y, cols, rows)'
            ".hole(hole_d)",
        ]
        area = p["length"] * p["width"] - (4 - math.pi) * corner_r**2
        area -= cols * rows * math.pi * hole_d**2 / 4
        spec = {
            "bbox_mm": [p["length"], p["width"], p["thickness"]],
            "volume_mm3": round(area * p["thickness"], 3),
            "holes": cols * rows,
            "solids": 1,
        }
        return Sample(self._prompt(rng, p), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any]) -> str:
        l_, w, t = number(p["length"]), number(p["width"]), number(p["thickness"])
        r, px, py = p["corner_r"], p["pitch_x"], p["pitch_y"]
        cols, rows = p["cols"], p["rows"]
        noun = pick(rng, ["plate", "mounting plate", "base plate", "flat plate", "adapter plate"])
        if px == py:
            pitch = pick(
                rng,
                [
                    f"on {a(length(rng, px))} square pitch",
                    f"{length(rng, px)} apart both ways",
                    f"at {length(rng, px)} spacing",
                ],
            )
        else:
            pitch = pick(
                rng,
                [
                    f"pitched {length(rng, px)} along the length and {length(rng, py)} across",
                    f"spaced {number(px)} x {number(py)} mm",
                    f"at {length(rng, px)} (X) and {length(rng, py)} (Y) spacing",
                    f"with {length(rng, px)} pitch in X and {length(rng, py)} in Y",
                ],
            )
        corner = pick(
            rng,
            [
                f"R{number(r)} corners",
                f"{length(rng, r)} corner radius",
                f"corners rounded to {length(rng, r)}",
                f"{length(rng, r)} corner fillets",
                f"rounded corners (r = {number(r)})",
            ],
        )
        size = pick(rng, [f"{l_} x {w} x {t} mm", f"{l_}x{w}x{t}", f"{l_} × {w} × {t} mm"])
        grid = pick(
            rng,
            [
                f"{cols} x {rows} grid",
                f"{count(rng, cols)} by {count(rng, rows)} grid",
                f"grid of {count(rng, cols)} columns and {count(rng, rows)} rows",
            ],
        )
        hole = hole_size(rng, p["hole_d"])
        labelled = [
            f"{length(rng, p['length'])} long",
            f"{length(rng, p['width'])} wide",
            thick(rng, p["thickness"]),
            f"a {grid} of {hole} holes {pitch}",
            corner,
        ]
        pieces = {
            "a_noun": f"{an(noun)} {noun}",
            "noun": noun,
            "size": size,
            "grid": grid,
            "hole": hole,
            "pitch": pitch,
            "corner": corner,
            "lw": f"{l_} by {w}",
            "thick": thick(rng, p["thickness"]),
            "rows_of": f"{count(rng, rows)} rows of {NUMBER_WORDS[cols]}",
            "n": NUMBER_WORDS.get(cols * rows, f"{cols * rows}x"),
            "request": request(rng, f"{an(noun)} {noun}", dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun}, {size}, with a {grid} of {hole} holes {pitch} and {corner}",
            "{size} {noun}, {corner}; drill {rows_of} {hole} holes {pitch}",
            "{noun} {size}, {grid} {hole} holes {pitch}, {corner}",
            "I'm after {a_noun} that's {lw} and {thick}. It needs {hole} holes in a {grid}, "
            "{pitch}, and {corner} please.",
            "Model {a_noun} ({size}) with {n} {hole} holes as a {grid}, {pitch}, and {corner}.",
            "{thick} {noun}, {lw}, {corner}, {rows_of} {hole} holes {pitch}",
        ]
        return fill(rng, templates, pieces)


@dataclass
class LBracket:
    """A right-angle bracket of two legs, with a row of holes across each leg."""

    name: str = "l_bracket"
    domain: str = "cad"
    held_out: bool = False

    def sample(self, rng: random.Random) -> Sample:
        """Draw the legs, width, thickness and the hole row."""
        thickness = float(rng.choice([3, 4, 5, 6, 8]))
        hole_d = rng.choice(HOLE_SIZES[:4])
        hole_count = rng.choice([2, 3])
        hole_spacing = float(rng.randrange(5 * math.ceil((hole_d + 5) / 5), 35, 5))
        edge = rng.randint(math.ceil(hole_d / 2 + 3), math.ceil(hole_d / 2) + 10)
        leg_low = math.ceil((thickness + hole_d + 8) / 5)
        p: dict[str, Any] = {
            "leg_a": float(5 * rng.randint(leg_low, 16)),
            "leg_b": float(5 * rng.randint(leg_low, 16)),
            "width": float((hole_count - 1) * hole_spacing + 2 * edge),
            "thickness": thickness,
            "hole_d": hole_d,
            "hole_count": hole_count,
            "hole_spacing": hole_spacing,
        }
        body = [
            'bracket = cq.Workplane("XY").box(leg_a, width, thickness, centered=False)',
            'upright = cq.Workplane("XY").box(thickness, width, leg_b, centered=False)',
            "bracket = bracket.union(upright)",
            'holes_a = cq.Workplane("XY").center((leg_a + thickness) / 2, width / 2)',
            "holes_a = holes_a.rarray(1, hole_spacing, 1, hole_count).circle(hole_d / 2)",
            'holes_b = cq.Workplane("YZ").center(width / 2, (leg_b + thickness) / 2)',
            "holes_b = holes_b.rarray(hole_spacing, 1, hole_count, 1).circle(hole_d / 2)",
            "result = bracket.cut(holes_a.extrude(thickness)).cut(holes_b.extrude(thickness))",
        ]
        section = (p["leg_a"] + p["leg_b"] - thickness) * thickness * p["width"]
        section -= 2 * hole_count * math.pi * hole_d**2 / 4 * thickness
        spec = {
            "bbox_mm": [p["leg_a"], p["width"], p["leg_b"]],
            "volume_mm3": round(section, 3),
            "holes": 2 * hole_count,
            "solids": 1,
        }
        return Sample(self._prompt(rng, p), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any]) -> str:
        a_, b, w = p["leg_a"], p["leg_b"], p["width"]
        noun = pick(
            rng,
            ["L bracket", "angle bracket", "L-bracket", "right-angle bracket", "corner bracket"],
        )
        n, d, s = p["hole_count"], p["hole_d"], p["hole_spacing"]
        spacing = pick(
            rng,
            [
                f"{length(rng, s)} apart",
                f"at {length(rng, s)} spacing",
                f"on {length(rng, s)} centres",
                f"{length(rng, s)} c/c",
            ],
        )
        each = pick(rng, ["in each leg", "per leg", "on both legs", "in both legs"])
        hole_row = f"{holes(rng, n, d)} {each}, {spacing}"
        legs = pick(
            rng,
            [
                f"{a(length(rng, a_))} base leg and {a(length(rng, b))} upright leg",
                f"legs {number(a_)} (base) and {number(b)} (upright) mm",
                f"horizontal leg {length(rng, a_)}, vertical leg {length(rng, b)}",
                f"{length(rng, a_)} along the base and {length(rng, b)} tall",
            ],
        )
        labelled = [legs, f"{length(rng, w)} wide", thick(rng, p["thickness"]), hole_row]
        pieces = {
            "a_noun": f"{an(noun)} {noun}",
            "noun": noun,
            "legs": legs,
            "width": f"{length(rng, w)} wide",
            "w": number(w),
            "thick": thick(rng, p["thickness"]),
            "t": number(p["thickness"]),
            "a": number(a_),
            "b": number(b),
            "holes": hole_row,
            "request": request(rng, f"{an(noun)} {noun}", dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun} with {legs}, {width}, {thick}, {holes}",
            "{noun} {a} x {b} x {w} mm, {t} mm material, {holes}",
            "Bend-style {noun}: {legs}; {width}; {thick}. Put {holes}.",
            "I need {a_noun} for mounting: {legs}, {width} and {thick}, with {holes}.",
            "{noun}, legs {a}/{b}, width {w}, {thick}; {holes}",
            "Make {a_noun} {width} and {thick} with {legs}. Add {holes}.",
        ]
        return fill(rng, templates, pieces)


@dataclass
class Flange:
    """A flat flange: a disc with a centre bore and a bolt circle of holes."""

    name: str = "flange"
    domain: str = "cad"
    held_out: bool = False
    DERIVED: ClassVar[dict[str, str]] = {
        "bore_d": "0.4 * outer_d",
        "bolt_circle_d": "(outer_d + bore_d) / 2",
    }

    def sample(self, rng: random.Random) -> Sample:
        """Draw the disc, bore, bolt circle and bolt holes (redrawing until they fit)."""
        while True:
            outer_d = 10 * rng.randint(5, 16)
            bore_d = 5 * rng.randint(math.ceil(outer_d * 0.2 / 5), outer_d // 10)
            bolt_d = rng.choice([4.5, 5.5, 6.5, 8.5, 10.5])
            low = math.ceil((bore_d + bolt_d + 6) / 2)
            high = math.floor((outer_d - bolt_d - 6) / 2)
            bolt_count = rng.choice([3, 4, 5, 6, 8, 10, 12])
            if low > high:
                continue
            bolt_circle_d = 2 * rng.randint(low, high)
            if _bolts_fit(bolt_circle_d, bolt_count, bolt_d):
                break
        p: dict[str, Any] = {
            "outer_d": float(outer_d),
            "bore_d": float(bore_d),
            "thickness": float(rng.choice([5, 6, 8, 10, 12, 15, 20])),
            "bolt_circle_d": float(bolt_circle_d),
            "bolt_count": bolt_count,
            "bolt_d": bolt_d,
        }
        reference, spec = self._reference(p)
        return Sample(self._prompt(rng, p), reference, p, spec)

    def sample_unstated(self, rng: random.Random) -> Sample:
        """A request that states no bore or no bolt circle (or neither), as people often write
        it ("a 60 mm flange with six M5 bolt holes, 8 mm thick"). The reference derives what is
        left out from what is stated, as a designer would (DERIVED: the bore 0.4 of the outside
        diameter, the bolt circle midway across the ring), so it stays parametric."""
        while True:
            outer_d = float(10 * rng.randint(5, 16))
            bolt_d = rng.choice([4.5, 5.5, 6.5, 8.5, 10.5])
            bolt_count = rng.choice([3, 4, 5, 6, 8, 10, 12])
            unstated = pick(rng, ["bore_d", "bolt_circle_d", "bore_d,bolt_circle_d"]).split(",")
            bore_d = 0.4 * outer_d
            if "bore_d" not in unstated:
                bore_d = float(5 * rng.randint(math.ceil(outer_d * 0.2 / 5), int(outer_d) // 10))
            bolt_circle_d = (outer_d + bore_d) / 2
            if "bolt_circle_d" not in unstated:
                low = math.ceil((bore_d + bolt_d + 6) / 2)
                high = math.floor((outer_d - bolt_d - 6) / 2)
                if low > high:
                    continue
                bolt_circle_d = float(2 * rng.randint(low, high))
            ring_fits = bore_d + bolt_d + 6 <= bolt_circle_d <= outer_d - bolt_d - 6
            if ring_fits and _bolts_fit(bolt_circle_d, bolt_count, bolt_d):
                break
        p: dict[str, Any] = {
            "outer_d": outer_d,
            "bore_d": bore_d,
            "thickness": float(rng.choice([5, 6, 8, 10, 12, 15, 20])),
            "bolt_circle_d": bolt_circle_d,
            "bolt_count": bolt_count,
            "bolt_d": bolt_d,
        }
        prompt = self._prompt(rng, p, unstated=set(unstated))
        stated = {k: v for k, v in p.items() if k not in unstated}
        derived = [f"{name} = {self.DERIVED[name]}" for name in self.DERIVED if name in unstated]
        reference, spec = self._reference(
            p, program(stated, []).rstrip("\n") + "\n" + "\n".join(derived)
        )
        return Sample(prompt, reference, {**p, "unstated": ",".join(unstated)}, spec)

    def _reference(self, p: dict[str, Any], head: str | None = None) -> tuple[str, dict[str, Any]]:
        """The program (its parameter block `head`, if given, else one constant per value) and
        the spec."""
        body = [
            'flange = cq.Workplane("XY").circle(outer_d / 2).circle(bore_d / 2).extrude(thickness)',
            'flange = flange.faces(">Z").workplane()'
            ".polarArray(bolt_circle_d / 2, 0, 360, bolt_count)",
            "result = flange.hole(bolt_d)",
        ]
        od, bore, count_, bolt = p["outer_d"], p["bore_d"], p["bolt_count"], p["bolt_d"]
        area = math.pi / 4 * (od**2 - bore**2 - count_ * bolt**2)
        spec = {
            "bbox_mm": [od, od, p["thickness"]],
            "volume_mm3": round(area * p["thickness"], 3),
            "holes": count_ + 1,
            "solids": 1,
        }
        if head is None:
            return program(p, body), spec
        return "\n".join([head, "", *body]) + "\n", spec

    def _prompt(
        self, rng: random.Random, p: dict[str, Any], unstated: set[str] | None = None
    ) -> str:
        od, bore, pcd = p["outer_d"], p["bore_d"], p["bolt_circle_d"]
        noun = pick(rng, ["flange", "pipe flange", "flat flange", "bolt flange", "mounting flange"])
        bolts = holes(rng, p["bolt_count"], p["bolt_d"])
        circle = pick(
            rng,
            [
                f"on {a(length(rng, pcd))} PCD",
                f"on {a(length(rng, pcd))} bolt circle",
                f"on {number(pcd)} PCD",
                f"equally spaced on {a(length(rng, pcd))} pitch circle",
                f"at PCD {number(pcd)}",
            ],
        )
        bore_text = pick(
            rng,
            [
                diameter(rng, bore, "inner"),
                f"{length(rng, bore)} centre bore",
                f"{a(length(rng, bore))} bore",
                f"bore {number(bore)}",
            ],
        )
        outer = diameter(rng, od, "outer")
        labelled = [outer, bore_text, thick(rng, p["thickness"]), f"{bolts} {circle}"]
        pieces = {
            "a_noun": f"{an(noun)} {noun}",
            "noun": noun,
            "a_od": a(number(od)),
            "outer": outer,
            "bore": bore_text,
            "thick": thick(rng, p["thickness"]),
            "bolts": bolts,
            "circle": circle,
            "request": request(rng, f"{an(noun)} {noun}", dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_od} mm {noun} with {bolts} {circle}, {thick}, {bore}",
            "{noun}: {outer}, {bore}, {thick}, {bolts} {circle}",
            "{noun} {outer} / {bore}, {thick}, {bolts} {circle}",
            "Could you make {a_noun}? {outer}, {thick}, with {bore} and {bolts} {circle}.",
            "{bolts} {circle} on {a_noun} ({outer}, {bore}, {thick})",
            "I need {a_noun}, {thick}, {outer} with {bore}. Bolt pattern: {bolts} {circle}.",
        ]
        if unstated:
            return self._unstated_prompt(rng, p, pieces, unstated)
        return fill(rng, templates, pieces)

    def _unstated_prompt(
        self, rng: random.Random, p: dict[str, Any], pieces: dict[str, str], unstated: set[str]
    ) -> str:
        """The request without the unstated bore and/or bolt circle."""
        bolts = pieces["bolts"]
        metric = clearance(p["bolt_d"])
        if metric is not None and rng.random() < 0.5:
            bolts = f"{count(rng, p['bolt_count'])} {metric} bolt holes"
        if "bolt_circle_d" not in unstated:
            bolts = f"{bolts} {pieces['circle']}"
        bore = "" if "bore_d" in unstated else pieces["bore"]
        stated = [pieces["outer"], pieces["thick"], bolts] + ([bore] if bore else [])
        thing = pieces["a_noun"]
        pieces = {
            **pieces,
            "bolts": bolts,
            "request": request(rng, thing, dims(rng, stated)),
            "tail": f", {bore}" if bore else "",
            "with_bore": f" and {bore}" if bore else "",
        }
        templates = [
            "{request}",
            "{request}",
            "{a_od} mm {noun} with {bolts}, {thick}{tail}",
            "{a_od} mm {noun}, {thick}, with {bolts}{tail}",
            "{noun}: {outer}, {thick}, {bolts}{tail}",
            "Could you make {a_noun}? {outer}, {thick}, with {bolts}{with_bore}.",
            "{bolts} on {a_noun} ({outer}, {thick}{tail})",
        ]
        return fill(rng, templates, pieces)


@dataclass
class WasherSpacer:
    """A flat washer or a tubular spacer: outer and inner diameter, thickness."""

    name: str = "washer_spacer"
    domain: str = "cad"
    held_out: bool = False

    def sample(self, rng: random.Random) -> Sample:
        """Draw a thin washer or a tall spacer."""
        washer = rng.random() < 0.5
        inner_d = rng.choice([3.5, 4.5, 5.5, 6.5, 8.5, 10.5, 12.5, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0])
        outer_d = float(rng.randint(math.ceil(inner_d) + 3, math.ceil(2 * inner_d) + 6))
        thickness = rng.choice(
            [1.0, 1.5, 2.0, 2.5, 3.0] if washer else [4, 5, 6, 8, 10, 15, 20, 25]
        )
        p: dict[str, Any] = {"outer_d": outer_d, "inner_d": inner_d, "thickness": float(thickness)}
        body = [
            'result = cq.Workplane("XY").circle(outer_d / 2).circle(inner_d / 2).extrude(thickness)'
        ]
        volume = math.pi / 4 * (outer_d**2 - inner_d**2) * thickness
        spec = {
            "bbox_mm": [outer_d, outer_d, float(thickness)],
            "volume_mm3": round(volume, 3),
            "holes": 1,
            "solids": 1,
        }
        return Sample(self._prompt(rng, p, washer), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any], washer: bool) -> str:
        od, id_, t = p["outer_d"], p["inner_d"], p["thickness"]
        if washer:
            noun = pick(rng, ["washer", "flat washer", "plain washer", "shim washer"])
        else:
            noun = pick(rng, ["spacer", "round spacer", "spacer sleeve", "bushing", "spacer tube"])
        metric = clearance(id_)
        inners = [diameter(rng, id_, "inner"), diameter(rng, id_, "inner")]
        if metric:
            inners += [f"a hole for {an(metric)} {metric} bolt", f"{metric} clearance hole"]
        inner = pick(rng, inners)
        size = f"{metric} " if metric and rng.random() < 0.3 else ""
        height = thick(rng, t) if washer else pick(rng, [thick(rng, t), f"{length(rng, t)} long"])
        outer = diameter(rng, od, "outer")
        labelled = [outer, inner, height]
        pieces = {
            "a_noun": f"{an(size + noun)} {size}{noun}",
            "noun": noun,
            "outer": outer,
            "inner": inner,
            "height": height,
            "od": number(od),
            "id": number(id_),
            "t": number(t),
            "request": request(rng, f"{an(size + noun)} {size}{noun}", dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun}: {outer}, {inner}, {height}",
            "{noun} {od} x {id} x {t}",
            "{noun} OD {od} ID {id} thk {t}",
            "Just {a_noun}, {outer} and {inner}, {height}.",
            "{height} {noun} with {outer} and {inner}",
            "I need {a_noun} — {outer}, {inner}, {height} — nothing fancy.",
        ]
        return fill(rng, templates, pieces)


@dataclass
class Standoff:
    """A hex standoff with a through hole along its axis."""

    name: str = "standoff"
    domain: str = "cad"
    held_out: bool = False

    def sample(self, rng: random.Random) -> Sample:
        """Draw the hex size, length and hole."""
        hole_d = rng.choice([3.0, 3.5, 4.5, 5.5])
        sizes = [af for af in (5.0, 5.5, 6.0, 7.0, 8.0, 10.0, 12.0) if af >= hole_d + 2.5]
        p: dict[str, Any] = {
            "across_flats": rng.choice(sizes),
            "length": float(rng.choice([5, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 50])),
            "hole_d": hole_d,
        }
        body = [
            'standoff = cq.Workplane("XY").polygon(6, across_flats, circumscribed=True)',
            'result = standoff.extrude(length).faces(">Z").workplane().hole(hole_d)',
        ]
        af = p["across_flats"]
        area = math.sqrt(3) / 2 * af**2 - math.pi * hole_d**2 / 4
        spec = {
            "bbox_mm": [af, round(af * 2 / math.sqrt(3), 4), p["length"]],
            "volume_mm3": round(area * p["length"], 3),
            "holes": 1,
            "solids": 1,
        }
        return Sample(self._prompt(rng, p), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any]) -> str:
        af, long, d = p["across_flats"], p["length"], p["hole_d"]
        noun = pick(rng, ["hex standoff", "hex spacer", "hexagonal standoff", "PCB standoff"])
        metric = clearance(d)
        flats = pick(
            rng,
            [
                f"{length(rng, af)} across flats",
                f"{number(af)} AF",
                f"AF {length(rng, af)}",
                f"{length(rng, af)} hex",
            ],
        )
        holes_ = [
            f"{a(length(rng, d, False))} through hole",
            f"Ø{number(d)} thru hole",
            f"{a(length(rng, d, False))} bore",
        ]
        if metric:
            holes_ += [f"an {metric} clearance hole", f"a through hole for {metric}"]
        hole = pick(rng, holes_)
        tall = pick(rng, [f"{length(rng, long)} long", f"length {length(rng, long)}"])
        labelled = [flats, tall, hole]
        prefix = f"{metric} " if metric and rng.random() < 0.3 and "M" not in hole else ""
        pieces = {
            "a_noun": f"{an(prefix + noun)} {prefix}{noun}",
            "noun": noun,
            "flats": flats,
            "tall": tall,
            "hole": hole,
            "l": number(long),
            "request": request(rng, f"{an(prefix + noun)} {prefix}{noun}", dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun}, {flats}, {tall}, with {hole}",
            "{l} mm long {noun}, {flats}, {hole}",
            "{noun} {flats} x {l}, {hole}",
            "I'd like {a_noun} that is {tall} and {flats}, with {hole} down the middle.",
            "Make {a_noun}: {tall}; {flats}; {hole}.",
            "{noun} with {hole}, {flats} and {tall}",
        ]
        return fill(rng, templates, pieces)


@dataclass
class EnclosureBox:
    """An open-top box shelled to a wall thickness (outside dimensions given)."""

    name: str = "enclosure_box"
    domain: str = "cad"
    held_out: bool = False

    def sample(self, rng: random.Random) -> Sample:
        """Draw outside dimensions and the wall."""
        long = 5 * rng.randint(8, 40)
        p: dict[str, Any] = {
            "length": float(long),
            "width": float(5 * rng.randint(6, long // 5)),
            "height": float(5 * rng.randint(4, 20)),
            "wall": rng.choice([1.5, 2.0, 2.5, 3.0, 4.0]),
        }
        body = ['result = cq.Workplane("XY").box(length, width, height).faces(">Z").shell(-wall)']
        l_, w, h, t = p["length"], p["width"], p["height"], p["wall"]
        volume = l_ * w * h - (l_ - 2 * t) * (w - 2 * t) * (h - t)
        spec = {"bbox_mm": [l_, w, h], "volume_mm3": round(volume, 3), "solids": 1}
        return Sample(self._prompt(rng, p), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any]) -> str:
        l_, w, h = (number(p[k]) for k in ("length", "width", "height"))
        noun = pick(
            rng,
            ["open-top box", "enclosure", "project box", "electronics enclosure", "open box"],
        )
        open_ = (
            "" if "open" in noun else pick(rng, [" with an open top", " (no lid)", ", open top"])
        )
        walls = pick(
            rng,
            [
                f"{length(rng, p['wall'])} walls",
                f"wall thickness {length(rng, p['wall'])}",
                f"{length(rng, p['wall'])} wall",
                f"walls {number(p['wall'])} thick",
            ],
        )
        size = pick(rng, [f"{l_} x {w} x {h} mm", f"{l_}x{w}x{h}", f"{l_} × {w} × {h} mm"])
        labelled = [
            f"{length(rng, p['length'])} long",
            f"{length(rng, p['width'])} wide",
            f"{length(rng, p['height'])} high",
            walls,
        ]
        thing = f"{an(noun)} {noun}"
        pieces = {
            "a_noun": thing,
            "noun": noun,
            "open": open_,
            "size": size,
            "walls": walls,
            "request": request(rng, thing + open_, dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun}{open}, {size} outside, {walls}",
            "{noun} {size}, {walls}{open}",
            "Shell {a_noun}{open}: outer size {size}, {walls}.",
            "I need {a_noun} to hold a PCB — {size} overall{open}, {walls}.",
            "{walls}, {size}: {a_noun}{open}",
            "Please model {a_noun} measuring {size} on the outside with {walls}{open}.",
        ]
        return fill(rng, templates, pieces)


@dataclass
class Knob:
    """A cylindrical knob with round grip notches around the rim and a blind shaft hole."""

    name: str = "knob"
    domain: str = "cad"
    held_out: bool = False

    def sample(self, rng: random.Random) -> Sample:
        """Draw the knob, its notches (never touching each other) and the shaft hole."""
        knob_d = float(5 * rng.randint(4, 12))
        notch_d = float(rng.choice([n for n in (2, 3, 4, 5, 6) if n <= 0.15 * knob_d]))
        counts = [n for n in (6, 8, 10, 12, 15, 16, 18, 20, 24) if _notch_gap(knob_d, notch_d, n)]
        knob_h = float(rng.randint(10, 30))
        shaft_d = float(rng.choice([s for s in (3, 4, 5, 6, 8, 10) if s <= knob_d / 3]))
        p: dict[str, Any] = {
            "knob_d": knob_d,
            "knob_h": knob_h,
            "grip_count": rng.choice(counts),
            "notch_d": notch_d,
            "shaft_d": shaft_d,
            "shaft_depth": float(rng.randint(5, int(knob_h) - 3)),
        }
        body = [
            'knob = cq.Workplane("XY").circle(knob_d / 2).extrude(knob_h)',
            'notches = cq.Workplane("XY").polarArray(knob_d / 2, 0, 360, grip_count)',
            "knob = knob.cut(notches.circle(notch_d / 2).extrude(knob_h))",
            'result = knob.faces("<Z").workplane().hole(shaft_d, shaft_depth)',
        ]
        spec = {
            "bbox_mm": [*_knob_extents(knob_d, notch_d, p["grip_count"]), knob_h],
            "volume_mm3": round(_knob_volume(p), 3),
            "holes": 1,  # the shaft hole; grip notches are not holes
            "solids": 1,
        }
        return Sample(self._prompt(rng, p), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any]) -> str:
        d, h, n = p["knob_d"], p["knob_h"], p["grip_count"]
        noun = pick(rng, ["knob", "control knob", "round knob", "grip knob", "dial knob"])
        cuts = pick(rng, ["notches", "round notches", "flutes", "scallops", "grip notches"])
        notch = pick(
            rng,
            [
                f"{NUMBER_WORDS.get(n, f'{n}x')} {length(rng, p['notch_d'], False)} {cuts}",
                f"{count(rng, n)} {cuts} of {length(rng, p['notch_d'])} diameter",
                f"{n}x Ø{number(p['notch_d'])} {cuts}",
            ],
        )
        shaft = pick(
            rng,
            [
                f"{a(length(rng, p['shaft_d'], False))} shaft hole "
                f"{length(rng, p['shaft_depth'])} deep",
                f"a Ø{number(p['shaft_d'])} x {number(p['shaft_depth'])} deep bore underneath",
                f"a blind {length(rng, p['shaft_d'], False)} hole for the shaft, "
                f"{length(rng, p['shaft_depth'])} deep",
                f"shaft bore {number(p['shaft_d'])} dia, depth {number(p['shaft_depth'])}",
            ],
        )
        size = pick(
            rng,
            [
                f"{length(rng, d)} diameter",
                f"Ø{number(d)}",
                f"{length(rng, d)} across",
                f"dia {number(d)}",
            ],
        )
        tall = pick(
            rng, [f"{length(rng, h)} tall", f"{length(rng, h)} high", f"height {number(h)}"]
        )
        labelled = [size, tall, f"{notch} around the rim", shaft]
        thing = f"{an(noun)} {noun}"
        pieces = {
            "a_noun": thing,
            "noun": noun,
            "size": size,
            "tall": tall,
            "notch": notch,
            "shaft": shaft,
            "d": number(d),
            "h": number(h),
            "request": request(rng, thing, dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun}, {size}, {tall}, with {notch} around the edge and {shaft}",
            "{d} x {h} mm {noun}, {notch} on the rim, {shaft}",
            "{noun} Ø{d} h{h}: {notch}, {shaft}",
            "Can you make {a_noun} {size} and {tall}? Cut {notch} into the side and add {shaft}.",
            "{notch} around {a_noun} ({size}, {tall}); {shaft}",
            "Model {a_noun}: {size}, {tall}, {notch} for grip, {shaft}.",
        ]
        return fill(rng, templates, pieces)


def _notch_gap(knob_d: float, notch_d: float, n: int) -> bool:
    """Neighbouring notches leave at least 2 mm of rim between them."""
    return knob_d * math.sin(math.pi / n) >= notch_d + 2


def _knob_extents(knob_d: float, notch_d: float, n: int) -> list[float]:
    """X and Y extents of a disc with n notches centred on its rim, the first at angle 0."""
    radius = knob_d / 2
    half = 2 * math.asin(notch_d / (2 * knob_d))  # half the arc of rim a notch removes
    reach = []
    for direction in (0.0, math.pi / 2, math.pi, 3 * math.pi / 2):
        nearest = min(
            abs((2 * math.pi * k / n - direction + math.pi) % (2 * math.pi) - math.pi)
            for k in range(n)
        )
        reach.append(radius if nearest >= half else radius * math.cos(half - nearest))
    return [round(reach[0] + reach[2], 4), round(reach[1] + reach[3], 4)]


def _bolts_fit(bolt_circle_d: float, bolt_count: int, bolt_d: float) -> bool:
    """Whether neighbouring bolt holes on the circle keep 3 mm of material between them."""
    return bolt_circle_d * math.sin(math.pi / bolt_count) >= bolt_d + 3


def _knob_volume(p: dict[str, Any]) -> float:
    """Disc minus the notch lenses, times the height, minus the shaft bore."""
    big, small = p["knob_d"] / 2, p["notch_d"] / 2
    dist = big  # notch centres sit on the rim
    lens = (
        small**2 * math.acos((dist**2 + small**2 - big**2) / (2 * dist * small))
        + big**2 * math.acos((dist**2 + big**2 - small**2) / (2 * dist * big))
        - 0.5
        * math.sqrt(
            (-dist + small + big)
            * (dist + small - big)
            * (dist - small + big)
            * (dist + small + big)
        )
    )
    section = math.pi * big**2 - p["grip_count"] * lens
    return section * p["knob_h"] - math.pi * p["shaft_d"] ** 2 / 4 * p["shaft_depth"]


@dataclass
class PipeElbow:
    """A 90° pipe elbow: an annulus swept along a quarter circle (held out of training)."""

    name: str = "pipe_elbow"
    domain: str = "cad"
    held_out: bool = True

    def sample(self, rng: random.Random) -> Sample:
        """Draw the pipe size, wall and centreline bend radius."""
        pipe_od = float(rng.choice([10, 12, 16, 20, 25, 32, 40, 50]))
        wall = rng.choice([w for w in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0) if w <= pipe_od / 5])
        p: dict[str, Any] = {
            "pipe_od": pipe_od,
            "pipe_id": pipe_od - 2 * wall,
            "bend_r": float(5 * rng.randint(math.ceil(pipe_od / 5), math.ceil(3 * pipe_od / 5))),
        }
        body = [
            'path = cq.Workplane("XZ").radiusArc((bend_r, bend_r), bend_r)',
            'result = cq.Workplane("XY").circle(pipe_od / 2).circle(pipe_id / 2).sweep(path)',
        ]
        reach = p["bend_r"] + pipe_od / 2
        area = math.pi / 4 * (pipe_od**2 - p["pipe_id"] ** 2)
        spec = {
            "bbox_mm": [reach, pipe_od, reach],
            "volume_mm3": round(area * math.pi * p["bend_r"] / 2, 3),
            "solids": 1,
            "any_orientation": True,
        }
        return Sample(self._prompt(rng, p), program(p, body), p, spec)

    def _prompt(self, rng: random.Random, p: dict[str, Any]) -> str:
        od, id_, r = p["pipe_od"], p["pipe_id"], p["bend_r"]
        noun = pick(rng, ["90° elbow", "pipe elbow", "90 degree pipe bend", "elbow", "tube bend"])
        outer, inner = diameter(rng, od, "outer"), diameter(rng, id_, "inner")
        bend = pick(
            rng,
            [
                f"bend radius {length(rng, r)}",
                f"{length(rng, r)} bend radius",
                f"centreline radius {length(rng, r)}",
                f"CLR {number(r)}",
                f"bent on {a(length(rng, r))} radius",
            ],
        )
        labelled = [outer, inner, bend]
        thing = f"{an(noun)} {noun}"
        pieces = {
            "a_noun": thing,
            "noun": noun,
            "outer": outer,
            "inner": inner,
            "bend": bend,
            "od": number(od),
            "id": number(id_),
            "request": request(rng, thing, dims(rng, labelled)),
        }
        templates = [
            "{request}",
            "{request}",
            "{a_noun} for {od} mm tube, {inner}, {bend}",
            "{noun}: {outer}, {inner}, {bend}",
            "Sweep a {od}/{id} mm tube through a quarter turn, {bend}.",
            "{noun} {outer} {inner}, {bend}",
            "I need {a_noun} — {outer} and {inner} — {bend}.",
            "Model {a_noun} ({bend}) in pipe with {outer} and {inner}.",
        ]
        return fill(rng, templates, pieces)


FAMILIES: list[Family] = [
    PlateHoles(),
    LBracket(),
    Flange(),
    WasherSpacer(),
    Standoff(),
    EnclosureBox(),
    Knob(),
    PipeElbow(),
]
