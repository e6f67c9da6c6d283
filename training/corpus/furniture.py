"""Furniture scenes composed from parts: a board on four legs, with a backrest and armrests.

A scene-level companion of the compositional grammar (compositional.py): one composition of a
small vocabulary of parts, each drawn or left out, each said in words: the board (its size,
thickness and the height of its top), four legs (square or round, flush with the board's edges
or set in from them), a backrest standing on the board's back edge (its height and thickness)
and a pair of armrests standing on its sides against the backrest. The name is a function of
the composition and its proportions (a bench, a stool, a side table, a settee, ...), drawn from
a stream seeded by the shape, so a shape has one name. Every part rests on the ground or on the
part below it, touching its neighbours without overlapping them (scenes.py says why).

The family is opt-in (`opt_in`): `genservice corpus build --families furniture` draws it, and
corpora built without it stay byte-for-byte what they were.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from training.corpus import phrasing
from training.corpus.base import Sample, params_key
from training.corpus.cad_parts_b import articles, program, step

FAMILY = "furniture"


def draw_params(rng: random.Random) -> dict[str, Any]:
    """The parts and their sizes (mm); keys present only for the parts drawn."""
    width = step(rng, 30, 200, 2)
    depth = step(rng, 30, min(100.0, max(40.0, width)), 2)
    board_t = step(rng, 2, 8)
    leg = step(rng, 3, max(3.0, min(12.0, min(width, depth) / 6)))
    p: dict[str, Any] = {
        "width": width,
        "depth": depth,
        "height": step(rng, max(25.0, 3 * board_t), 120, 5),
        "board_t": board_t,
        "leg": leg,
        "inset": 0.0 if rng.random() < 0.6 else step(rng, 1, max(1.0, min(width, depth) / 10)),
        "round_legs": rng.random() < 0.3,
    }
    if rng.random() < 0.6:
        back_t = step(rng, 2, 8)
        p["back_t"] = back_t
        p["back"] = step(rng, 15, max(15.0, min(10 * back_t, 1.5 * width, 100.0)), 5)
        if rng.random() < 0.35 and width >= 40:
            arm_t = step(rng, 2, min(8.0, width / 8))
            p["arm_t"] = arm_t
            p["arm"] = step(rng, 8, max(8.0, min(p["back"] - 2, 40.0)), 2)
    return p


def program_of(p: dict[str, Any]) -> str:
    """The reference: parameters at the top, then one `scene.add` per part."""
    params = {k: v for k, v in p.items() if k != "round_legs"}
    post = (
        "cq.Workplane().circle(leg / 2).extrude(height - board_t)"
        if p["round_legs"]
        else "cq.Workplane().box(leg, leg, height - board_t, centered=(True, True, False))"
    )
    lines = [
        "scene = cq.Assembly()",
        f"post = {post}",
        "for i, (x, y) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):",
        "    spot = cq.Location((x * (width / 2 - inset - leg / 2), "
        "y * (depth / 2 - inset - leg / 2), 0))",
        '    scene.add(post, name=f"leg_{i}", loc=spot, color=cq.Color("sienna"))',
        "board = cq.Workplane().box(width, depth, board_t, centered=(True, True, False))",
        f'scene.add(board, name="{"seat" if "back" in p else "top"}", '
        'loc=cq.Location((0, 0, height - board_t)), color=cq.Color("burlywood"))',
    ]
    if "back" in p:
        lines += [
            "rest = cq.Workplane().box(width, back_t, back, centered=(True, True, False))",
            "spot = cq.Location((0, (depth - back_t) / 2, height))",
            'scene.add(rest, name="backrest", loc=spot, color=cq.Color("burlywood"))',
        ]
    if "arm" in p:
        lines += [
            "arm = cq.Workplane().box(arm_t, depth - back_t, arm, centered=(True, True, False))",
            "for i, x in enumerate((1, -1)):",
            "    spot = cq.Location((x * (width - arm_t) / 2, -back_t / 2, height))",
            '    scene.add(arm, name=f"arm_{i}", loc=spot, color=cq.Color("burlywood"))',
        ]
    lines.append("result = scene")
    return program(params, "\n".join(lines))


def names_for(p: dict[str, Any]) -> list[str]:
    """Everyday names that fit the composition and its proportions."""
    w, d, h = p["width"], p["depth"], p["height"]
    if "arm" in p:
        return ["settee", "sofa", "loveseat", "throne"] if w >= 1.4 * d else ["throne", "settle"]
    if "back" in p:
        if w >= 1.8 * d:
            return ["bench with a backrest", "garden bench", "park bench", "pew", "settle"]
        return ["stool with a backrest", "seat with a backrest", "settle"]
    if w >= 2 * d and h <= 0.6 * w:
        return ["bench", "bench", "footbench"]
    if h >= 1.2 * max(w, d):
        return ["bar stool", "plant stand", "stool", "pedestal table"]
    if h <= 0.5 * w:
        return ["coffee table", "low table", "footstool", "stool"]
    return ["side table", "nightstand", "stool", "end table"]


def _parts(rng: random.Random, p: dict[str, Any], board: str) -> list[str]:
    size = phrasing.length
    n = phrasing.number
    w, d, t, h, leg = (p[k] for k in ("width", "depth", "board_t", "height", "leg"))
    shape = "round" if p["round_legs"] else phrasing.pick(rng, ["square", "sq", "square-section"])
    legs = phrasing.pick_more(
        rng,
        [
            f"four {size(rng, leg)} {shape} legs",
            f"legs {n(leg)} mm {shape}",
            f"4 {shape} legs, {size(rng, leg)} thick",
        ],
        lambda: [f"{size(rng, leg)} legs", f"legs {n(leg)}", f"{n(leg)} mm {shape} posts for legs"],
    )
    if p["inset"]:
        legs += phrasing.pick(
            rng,
            [f" set in {size(rng, p['inset'])} from the edges", f", inset {n(p['inset'])} mm"],
        )
    parts = [
        phrasing.pick_more(
            rng,
            [
                f"a {n(w)} x {n(d)} {board} {size(rng, t)} thick",
                f"{board} {size(rng, w)} wide and {size(rng, d)} deep, {n(t)} mm thick",
                f"{board} {n(w)}x{n(d)}x{n(t)}",
            ],
            lambda: [
                f"a {size(rng, t)} {board} board, {n(w)} by {n(d)}",
                f"{board} {n(w)} × {n(d)} ({n(t)} mm)",
                f"{n(w)} wide, {n(d)} deep {board}, {size(rng, t)} board",
            ],
        ),
        phrasing.pick_more(
            rng,
            [
                f"{board} height {size(rng, h)}",
                f"the top of the {board} {size(rng, h)} off the floor",
                f"{size(rng, h)} to the top of the {board}",
            ],
            lambda: [
                f"{board} at {n(h)}",
                f"{n(h)} mm {board} height",
                f"{board} {size(rng, h)} up",
            ],
        ),
        legs,
    ]
    if "back" in p:
        back, back_t = p["back"], p["back_t"]
        # The wider vocabulary may leave a backrest's thickness unsaid when it is the legs'.

        def unsaid() -> list[str]:
            return [f"a {size(rng, back)} backrest", f"back {n(back)} above the {board}"]

        if back_t == leg and phrasing.leaves_defaults_unsaid():
            parts.append(
                phrasing.pick(
                    rng,
                    [
                        *unsaid(),
                        f"{n(back)} mm back",
                        f"a backrest {size(rng, back)} tall",
                        f"a {size(rng, back)} high back",
                        f"backrest {n(back)}",
                    ],
                )
            )
        else:
            parts.append(
                phrasing.pick_more(
                    rng,
                    [
                        f"a backrest {size(rng, back)} high and {size(rng, back_t)} thick "
                        "on the back edge",
                        f"a {n(back)} mm back, {n(back_t)} mm thick, standing on the "
                        f"back of the {board}",
                        f"backrest {n(back)} tall ({n(back_t)} thick)",
                    ],
                    lambda: (
                        [f"a {n(back)} mm tall backrest as thick as the legs"]
                        + (unsaid() if back_t == leg else [])
                    ),
                )
            )
    if "arm" in p:
        parts.append(
            phrasing.pick(
                rng,
                [
                    f"armrests {size(rng, p['arm'])} high and {size(rng, p['arm_t'])} thick on "
                    "both sides",
                    f"two {n(p['arm_t'])} mm arms, {n(p['arm'])} mm tall, along the sides",
                ],
            )
        )
    return parts


def prompt_of(rng: random.Random, p: dict[str, Any], name: str, called: str | None = None) -> str:
    """A request for the composition: its name (or what it is `called` instead) and its parts
    in words, in any order."""
    board = "seat" if "back" in p or "stool" in name or "bench" in name else "top"
    parts = _parts(rng, p, board)
    rng.shuffle(parts)
    said = called or name
    thing = f"{'an' if said[0] in 'aeiou' else 'a'} {said}"
    if rng.random() < 0.2:
        thing = f"{thing} scene"
    return articles(phrasing.request(rng, thing, phrasing.dims(rng, parts, shuffle=False)))


def spec_of(p: dict[str, Any]) -> dict[str, Any]:
    """The scene's bounding box and its number of solids (one per part)."""
    above = max(p.get("back", 0.0), p.get("arm", 0.0))
    solids = 5 + ("back" in p) + 2 * ("arm" in p)
    box = [p["width"], p["depth"], p["height"] + above]
    return {"bbox_mm": [round(float(v), 3) for v in box], "solids": solids}


@dataclass
class Furniture:
    """Furniture scenes composed from parts; opt-in (see the module)."""

    name: str = FAMILY
    domain: str = "scene"
    held_out: bool = False
    opt_in: bool = True

    def sample(self, rng: random.Random, called: str | None = None) -> Sample:
        """Draw the parts, name the composition, and write its program, request and spec; the
        request calls it `called` when given (corpus build `--novel-names`)."""
        shape = draw_params(rng)
        # With the wider vocabulary, a backrest is as thick as the legs often enough that its
        # thickness can go unsaid.
        if (
            "back" in shape
            and phrasing.wider()
            and random.Random(params_key(FAMILY, shape) + ":back").random() < 0.4
        ):
            shape["back_t"] = shape["leg"]
        # A row that leaves defaults unsaid gives a backrest the legs' thickness and never says it.
        if "back" in shape and phrasing.leaves_defaults_unsaid():
            shape["back_t"] = shape["leg"]
        named = random.Random(params_key(FAMILY, shape))
        name = phrasing.pick(named, names_for(shape))
        request = prompt_of(rng, shape, name, called)
        return Sample(request, program_of(shape), shape, spec_of(shape))


FAMILIES = [Furniture()]
