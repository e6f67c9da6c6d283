"""Scene families: assemblies of named, coloured parts that stand on the ground (z = 0).

Every part is a box or a cylinder (convex, so the drop test needs no decomposition) resting on
the ground or exactly on the part below it, touching its neighbours without overlapping them.
Ranges keep every draw stable under the validator's drop test and nudge: free-standing boards
are at least a tenth as thick as they are tall, towers at most a few times as tall as they are
deep. The spec is the scene's bounding box and its number of solids (one per part).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from typing import Any

from training.corpus import phrasing
from training.corpus.base import Family, Sample
from training.corpus.cad_parts_b import DrawnFamily, program, step


def _spec(bbox: list[float], solids: int) -> dict[str, Any]:
    return {"bbox_mm": [round(v, 3) for v in bbox], "solids": solids}


def _sizer(rng: random.Random) -> Callable[[float], str]:
    return functools.partial(phrasing.length, rng)


# --- table with objects ----------------------------------------------------------------------

TABLE_BODY = """
scene = cq.Assembly()
board = cq.Workplane().box(width, depth, top, centered=(True, True, False))
scene.add(board, name="top", loc=cq.Location((0, 0, height - top)), color=cq.Color("burlywood"))
post = cq.Workplane().box(leg, leg, height - top, centered=(True, True, False))
for i, (x, y) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
    corner = cq.Location((x * (width - leg) / 2, y * (depth - leg) / 2, 0))
    scene.add(post, name=f"leg_{i}", loc=corner, color=cq.Color("saddlebrown"))
cube = cq.Workplane().box(item, item, item, centered=(True, True, False))
can = cq.Workplane().circle(item / 2).extrude(item)
for i in range(items):
    spot = cq.Location(((i + 1) * width / (items + 1) - width / 2, 0, height))
    scene.add(can if i % 2 else cube, name=f"item_{i}", loc=spot, color=cq.Color("steelblue"))
result = scene
"""


def table_with_objects(rng: random.Random) -> Sample:
    """A table (top on four legs) with a row of cubes and cans, alternating, on it."""
    width = step(rng, 80, 200, 10)
    depth = step(rng, 50, min(100, width), 5)
    items = rng.randint(1, 4)
    params: dict[str, Any] = {
        "width": width,
        "depth": depth,
        "height": step(rng, 50, 100, 5),
        "top": step(rng, 3, 8),
        "leg": step(rng, 4, 10),
        "items": items,
        "item": step(rng, 10, min(40, width / (items + 1) - 5, depth - 10)),
    }
    spec = _spec([width, depth, params["height"] + params["item"]], 5 + items)
    return Sample(_table_prompt(rng, params), program(params, TABLE_BODY), params, spec)


def _table_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    w, d, h, top, leg, item = (p[k] for k in ("width", "depth", "height", "top", "leg", "item"))
    count = phrasing.count(rng, p["items"])
    if p["items"] == 1:
        things = f"one {size(item)} cube"
    else:
        things = f"{count} {size(item)} objects in a row, alternating cubes and round cans"
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"a {size(w)} x {size(d)} top {size(top)} thick",
                f"{size(h)} tall",
                f"{size(leg)} square legs",
                f"{things} on top",
            ],
        )
        return phrasing.request(rng, "a table", details)
    if style == 1:
        return (
            f"table {n(w)}x{n(d)}, height {n(h)}, top thickness {n(top)}, legs {n(leg)}x{n(leg)}; "
            f"on top: {things}"
        )
    if style == 2:
        return (
            f"A little scene: a table {size(h)} high with a {size(w)} by {size(d)} tabletop "
            f"({size(top)} thick) on four {size(leg)} legs at the corners, and {things} "
            "standing on it along the middle."
        )
    if style == 3:
        return (
            f"Make a table scene. Tabletop {n(w)} × {n(d)} × {n(top)} mm, overall height "
            f"{n(h)} mm, {n(leg)} mm legs. Objects: {things}."
        )
    if style == 4:
        return (
            f"Can you build {things} sitting on a {n(h)} mm tall table? The table is {n(w)} mm "
            f"long, {n(d)} mm deep, top {n(top)} mm, legs {n(leg)} mm square."
        )
    if style == 5:
        return phrasing.request(
            rng,
            "a desk with some objects on it",
            f"width {size(w)}, depth {size(d)}, height {size(h)}, {size(top)} top, "
            f"{size(leg)} legs; {things}",
        )
    return (
        f"{things[:1].upper() + things[1:]} on a table: top {size(w)} by {size(d)}, "
        f"{size(top)} thick, {size(h)} from the floor, legs {size(leg)} wide."
    )


# --- shelf with boxes ------------------------------------------------------------------------

SHELF_BODY = """
scene = cq.Assembly()
side = cq.Workplane().box(board, depth, gap, centered=(True, True, False))
shelf = cq.Workplane().box(width, depth, board, centered=(True, True, False))
box = cq.Workplane().box(box_size, box_size, box_size, centered=(True, True, False))
for i in range(levels):
    z = i * (gap + board)
    for j, x in enumerate([(board - width) / 2, (width - board) / 2]):
        spot = cq.Location((x, 0, z))
        scene.add(side, name=f"side_{i}_{j}", loc=spot, color=cq.Color("tan"))
    scene.add(shelf, name=f"shelf_{i}", loc=cq.Location((0, 0, z + gap)), color=cq.Color("peru"))
    spot = cq.Location((0, 0, z + gap + board))
    scene.add(box, name=f"box_{i}", loc=spot, color=cq.Color("tomato"))
result = scene
"""


def shelf_with_boxes(rng: random.Random) -> Sample:
    """A stacked shelf unit: per level two side boards and a shelf, with a box on each shelf."""
    width = step(rng, 60, 120, 5)
    depth = step(rng, 25, 50, 5)
    board = step(rng, 4, 8)
    levels = rng.randint(2, max(2, min(4, math.floor(4.5 * depth / (30 + board)))))
    gap = step(rng, 30, min(80, 4.5 * depth / levels - board))
    box_size = step(rng, 10, min(gap - 5, width - 2 * board - 10, depth))
    params: dict[str, Any] = {
        "width": width,
        "depth": depth,
        "gap": gap,
        "board": board,
        "levels": levels,
        "box_size": box_size,
    }
    spec = _spec([width, depth, levels * (gap + board) + box_size], 4 * levels)
    return Sample(_shelf_prompt(rng, params), program(params, SHELF_BODY), params, spec)


def _shelf_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    w, d, gap, board, box = (p[k] for k in ("width", "depth", "gap", "board", "box_size"))
    levels = phrasing.count(rng, p["levels"])
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"{levels} shelves",
                f"{size(w)} wide",
                f"{size(d)} deep",
                f"{size(gap)} between shelves",
                f"{size(board)} boards",
                f"a {size(box)} box on each shelf",
            ],
        )
        return phrasing.request(rng, "a shelf unit", details)
    if style == 1:
        return (
            f"shelf: {p['levels']} levels, {n(w)} w x {n(d)} d, {n(gap)} clearance, "
            f"{n(board)} thick boards; one {n(box)} cube per shelf"
        )
    if style == 2:
        return (
            f"Build a small bookcase scene: {levels} shelves, each {size(w)} wide and {size(d)} "
            f"deep, made of {size(board)} boards, with {size(gap)} side panels between them. "
            f"Put a {size(box)} box in the middle of every shelf."
        )
    if style == 3:
        return (
            f"Stacked shelving, {levels} tiers: boards {n(board)} mm, width {n(w)} mm, depth "
            f"{n(d)} mm, {n(gap)} mm gap per tier, {n(box)} mm boxes on the shelves."
        )
    if style == 4:
        return phrasing.request(
            rng,
            "a shelf with boxes",
            f"{levels} levels of {size(gap)}, {size(w)} x {size(d)}, {size(board)} board "
            f"thickness and a {size(box)} cube on each level",
        )
    if style == 5:
        return (
            f"I want {levels} {n(box)}mm boxes on a shelf unit ({levels} shelves, "
            f"{n(w)}x{n(d)}mm, {n(gap)}mm apart, {n(board)}mm material)."
        )
    return (
        f"A {size(w)} wide, {size(d)} deep shelf, {levels} shelves high: sides {size(gap)} "
        f"tall and {size(board)} thick under each shelf, one {size(box)} box per shelf."
    )


# --- stacked blocks --------------------------------------------------------------------------

BLOCKS_BODY = """
scene = cq.Assembly()
for i in range(blocks):
    side = size - i * shrink
    block = cq.Workplane().box(side, side, height, centered=(True, True, False))
    spot = cq.Location((0, 0, i * height))
    scene.add(block, name=f"block_{i}", loc=spot, color=cq.Color("orange" if i % 2 else "teal"))
result = scene
"""


def stacked_blocks(rng: random.Random) -> Sample:
    """A centred tower of square blocks, each the same or smaller than the one below."""
    blocks = rng.randint(2, 8)
    size = step(rng, 20, 80, 5)
    shrink = 0.0 if rng.random() < 0.3 else step(rng, 1, min(10, (size - 10) / (blocks - 1)))
    height = step(rng, 5, min(30, 4 * size / blocks))
    params: dict[str, Any] = {"blocks": blocks, "size": size, "height": height, "shrink": shrink}
    spec = _spec([size, size, blocks * height], blocks)
    return Sample(_blocks_prompt(rng, params), program(params, BLOCKS_BODY), params, spec)


def _blocks_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    count = phrasing.count(rng, p["blocks"])
    side, h, shrink = p["size"], p["height"], p["shrink"]
    if shrink:
        taper = phrasing.pick(
            rng,
            [
                f"each block {size(shrink)} narrower than the one below",
                f"shrinking by {size(shrink)} per level",
                f"every layer {n(shrink)} mm smaller",
            ],
        )
    else:
        taper = phrasing.pick(rng, ["all the same size", "no taper (shrink 0)", "equal blocks"])
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [f"{count} blocks", f"the bottom one {size(side)} square", f"{size(h)} thick", taper],
        )
        return phrasing.request(rng, "a stack of blocks", details)
    if style == 1:
        return f"tower of {p['blocks']} blocks, base {n(side)}x{n(side)}, {n(h)} high each, {taper}"
    if style == 2:
        return (
            f"Stack {count} square blocks into a centred tower. The bottom block is {size(side)} "
            f"on a side and every block is {size(h)} tall; {taper}."
        )
    if style == 3:
        return f"{count} stacked slabs, {n(side)} mm base, {n(h)} mm each, {taper}"
    if style == 4:
        return phrasing.request(
            rng,
            "a block tower",
            f"{count} layers of {size(h)}, starting at {size(side)} square, {taper}",
        )
    if style == 5:
        return (
            f"Can you pile up {count} blocks, centred on each other? Base {n(side)} mm square, "
            f"height {n(h)} mm per block, {taper}."
        )
    return (
        f"Block stack: {count} blocks, each {size(h)} tall, {size(side)} wide at the bottom, "
        f"{taper}."
    )


# --- chair -----------------------------------------------------------------------------------

CHAIR_BODY = """
scene = cq.Assembly()
post = cq.Workplane().box(leg, leg, height - seat, centered=(True, True, False))
for i, (x, y) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
    corner = cq.Location((x * (width - leg) / 2, y * (depth - leg) / 2, 0))
    scene.add(post, name=f"leg_{i}", loc=corner, color=cq.Color("sienna"))
board = cq.Workplane().box(width, depth, seat, centered=(True, True, False))
scene.add(board, name="seat", loc=cq.Location((0, 0, height - seat)), color=cq.Color("burlywood"))
rest = cq.Workplane().box(width, leg, back, centered=(True, True, False))
spot = cq.Location((0, (depth - leg) / 2, height))
scene.add(rest, name="backrest", loc=spot, color=cq.Color("burlywood"))
result = scene
"""


def chair(rng: random.Random) -> Sample:
    """A chair: a seat on four legs and a backrest standing on the back of the seat."""
    width = step(rng, 30, 60, 2)
    leg = step(rng, 3, 8)
    params: dict[str, Any] = {
        "width": width,
        "depth": step(rng, 30, 60, 2),
        "height": step(rng, 30, 60, 5),
        "seat": step(rng, 3, 6),
        "leg": leg,
        "back": step(rng, 20, min(60, 10 * leg), 5),
    }
    spec = _spec([width, params["depth"], params["height"] + params["back"]], 6)
    return Sample(_chair_prompt(rng, params), program(params, CHAIR_BODY), params, spec)


def _chair_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    w, d, h, seat, leg, back = (p[k] for k in ("width", "depth", "height", "seat", "leg", "back"))
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"a {size(w)} x {size(d)} seat {size(seat)} thick",
                f"seat height {size(h)}",
                f"{size(leg)} legs",
                f"a {size(back)} backrest",
            ],
        )
        return phrasing.request(rng, "a chair", details)
    if style == 1:
        return (
            f"chair: seat {n(w)}x{n(d)}x{n(seat)}, seat top at {n(h)}, legs {n(leg)} sq, "
            f"backrest {n(back)} tall ({n(leg)} thick)"
        )
    if style == 2:
        return (
            f"Model a simple chair. The seat is {size(w)} wide, {size(d)} deep and {size(seat)} "
            f"thick, its top {size(h)} off the floor on four {size(leg)} square legs. A "
            f"{size(back)} high backrest, as thick as the legs, stands on the back edge."
        )
    if style == 3:
        return (
            f"dollhouse chair — {n(h)} mm seat height, {n(w)} × {n(d)} mm seat ({n(seat)} mm), "
            f"{n(leg)} mm legs, {n(back)} mm back"
        )
    if style == 4:
        return phrasing.request(
            rng,
            "a chair scene",
            f"four {size(leg)} legs, a {size(seat)} seat board {size(w)} by {size(d)} at "
            f"{size(h)}, and a backrest {size(back)} high",
        )
    if style == 5:
        return (
            f"I need a chair: {n(h)} high to the seat, seat {n(w)} wide by {n(d)} deep, "
            f"{n(seat)} mm seat board, {n(leg)} mm legs and a {n(back)} mm tall back."
        )
    return (
        f"Chair with backrest. Seat {size(w)} x {size(d)}, thickness {size(seat)}, height "
        f"{size(h)}; legs {size(leg)}; back {size(back)} above the seat."
    )


# --- desk organiser --------------------------------------------------------------------------

ORGANISER_BODY = """
scene = cq.Assembly()
plate = cq.Workplane().box(width, depth, base, centered=(True, True, False))
scene.add(plate, name="base", color=cq.Color("slategray"))
long_side = cq.Workplane().box(width, wall, wall_height, centered=(True, True, False))
short_side = cq.Workplane().box(wall, depth - 2 * wall, wall_height, centered=(True, True, False))
for i, s in enumerate([1, -1]):
    spot = cq.Location((0, s * (depth - wall) / 2, base))
    scene.add(long_side, name=f"side_{i}", loc=spot, color=cq.Color("lightgray"))
    spot = cq.Location((s * (width - wall) / 2, 0, base))
    scene.add(short_side, name=f"end_{i}", loc=spot, color=cq.Color("lightgray"))
for i in range(dividers):
    spot = cq.Location(((i + 1) * width / (dividers + 1) - width / 2, 0, base))
    scene.add(short_side, name=f"divider_{i}", loc=spot, color=cq.Color("goldenrod"))
result = scene
"""


def desk_organiser(rng: random.Random) -> Sample:
    """A desk organiser: a base plate, four walls standing on it and dividers between them."""
    width = step(rng, 80, 200, 10)
    wall = step(rng, 2, 5, 0.5)
    params: dict[str, Any] = {
        "width": width,
        "depth": step(rng, 40, 100, 5),
        "base": step(rng, 3, 8),
        "wall": wall,
        "wall_height": step(rng, 15, min(50, 10 * wall), 5),
        "dividers": rng.randint(0, min(4, math.floor(width / (wall + 15)) - 1)),
    }
    spec = _spec(
        [width, params["depth"], params["base"] + params["wall_height"]], 5 + params["dividers"]
    )
    return Sample(_organiser_prompt(rng, params), program(params, ORGANISER_BODY), params, spec)


def _organiser_prompt(rng: random.Random, p: dict[str, Any]) -> str:
    size = _sizer(rng)
    n = phrasing.number
    w, d, base, wall, h = (p[k] for k in ("width", "depth", "base", "wall", "wall_height"))
    dividers = p["dividers"]
    plural = "s" if dividers > 1 else ""
    if dividers:
        split = phrasing.pick(
            rng,
            [
                f"{phrasing.count(rng, dividers)} evenly spaced divider{plural}",
                f"{dividers + 1} compartments ({dividers} divider{plural})",
            ],
        )
    else:
        split = phrasing.pick(rng, ["no dividers", "one open compartment (0 dividers)"])
    style = rng.randrange(7)
    if style == 0:
        details = phrasing.dims(
            rng,
            [
                f"a {size(w)} x {size(d)} base {size(base)} thick",
                f"{size(h)} walls {size(wall)} thick",
                split,
            ],
        )
        return phrasing.request(rng, "a desk organiser", details)
    if style == 1:
        return (
            f"desk organizer tray {n(w)}x{n(d)}, base {n(base)}, walls {n(wall)} thick x {n(h)} "
            f"high, {split}"
        )
    if style == 2:
        return (
            f"I'd like a tidy tray for my desk: a {size(base)} base plate {size(w)} long and "
            f"{size(d)} deep, with {size(wall)} thick walls {size(h)} tall standing on it all "
            f"round, and {split} across it."
        )
    if style == 3:
        return (
            f"Organiser: base plate {n(w)} × {n(d)} × {n(base)} mm; rim boards {n(wall)} mm "
            f"thick, {n(h)} mm high; {split}."
        )
    if style == 4:
        return phrasing.request(
            rng,
            "a stationery tray",
            f"footprint {size(w)} by {size(d)}, floor {size(base)}, wall height {size(h)}, "
            f"wall thickness {size(wall)}, {split}",
        )
    if style == 5:
        return (
            f"Make a pen and clip organiser with {split}: {n(w)}mm wide, {n(d)}mm deep, "
            f"{n(base)}mm base, {n(wall)}mm walls {n(h)}mm tall."
        )
    return (
        f"Desk tidy — {size(w)} x {size(d)}, walls {size(h)} high and {size(wall)} thick on a "
        f"{size(base)} base, {split}."
    )


FAMILIES: list[Family] = [
    DrawnFamily("table_with_objects", "scene", False, table_with_objects),
    DrawnFamily("shelf_with_boxes", "scene", False, shelf_with_boxes),
    DrawnFamily("stacked_blocks", "scene", False, stacked_blocks),
    DrawnFamily("chair", "scene", True, chair),
    DrawnFamily("desk_organiser", "scene", False, desk_organiser),
]
