"""Edit tasks: "make it 12 mm thick" applied to a program, so the model learns iterative editing.

An edit row takes a CAD or scene task's reference (the *previous program*), changes one or two
of its top-level parameters by a plausible amount, and asks for that change in words a person
would type. The edited program is the reference. Edit rows keep their source task's family and
split; they carry no spec (the dimensions changed) and are marked `"edit": true`.
"""

from __future__ import annotations

import random
from typing import Any

from validators.cad.program import apply_parameters, find_parameters, parse

WORDS = {
    "outer_d": "outer diameter",
    "inner_d": "inner diameter",
    "bore_d": "bore diameter",
    "bore": "bore",
    "bolt_d": "bolt hole diameter",
    "bolt_circle_d": "bolt circle diameter",
    "bolt_count": "number of bolt holes",
    "hole_d": "hole diameter",
    "hole_count": "number of holes",
    "hole_spacing": "hole spacing",
    "shaft_d": "shaft diameter",
    "knob_d": "knob diameter",
    "knob_h": "knob height",
    "notch_d": "notch diameter",
    "pipe_od": "pipe OD",
    "pipe_id": "pipe ID",
    "bend_r": "bend radius",
    "corner_r": "corner radius",
    "grip_count": "number of grips",
    "teeth": "number of teeth",
    "across_flats": "size across flats",
    "wall": "wall thickness",
    "pitch_x": "hole pitch in x",
    "pitch_y": "hole pitch in y",
    "leg_a": "first leg",
    "leg_b": "second leg",
    "tab_length": "tab length",
    "wall_height": "wall height",
    "box_size": "box size",
    "shaft_depth": "shaft depth",
}
ADJECTIVES = {
    "thickness": "thick",
    "height": "tall",
    "width": "wide",
    "length": "long",
    "depth": "deep",
}
FLOAT_TEMPLATES = (
    "change the {words} to {v} mm",
    "set the {words} to {v} mm",
    "make the {words} {v} mm",
    "{words} {v} mm please",
    "can you make the {words} {v}mm",
    "{words} -> {v}",
    "I need the {words} at {v} mm",
    "bump the {words} to {v} mm",
)
ADJECTIVE_TEMPLATES = (
    "make it {v} mm {adj}",
    "{v} mm {adj} instead",
    "make it {v}mm {adj}",
    "change the {words} to {v} mm",
    "should be {v} mm {adj}",
)
INT_TEMPLATES = (
    "set the {words} to {v}",
    "change the {words} to {v}",
    "make the {words} {v}",
    "{words}: {v}",
    "use {v} instead ({words})",
)
EDIT_PROMPTS = ("instruction", "original")


def _words(name: str) -> str:
    return WORDS.get(name, name.replace("_", " "))


def _new_value(value: float | int, kind: str, rng: random.Random) -> float | int | None:
    """A plausible new value: a few more or fewer for counts, 60-160 % for sizes."""
    if kind == "int":
        step = rng.choice((-2, -1, 1, 2, 3))
        new = int(value) + step
        return new if new >= 2 and new != value else None
    factor = rng.choice((0.6, 0.7, 0.75, 0.8, 0.9, 1.1, 1.2, 1.25, 1.3, 1.5, 1.6))
    new_value = round(float(value) * factor, 1)
    return new_value if new_value > 0 and abs(new_value - float(value)) >= 0.1 else None


def _number(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    return f"{value:g}" if value != int(value) else str(int(value))


def _phrase(name: str, kind: str, value: float | int, rng: random.Random) -> str:
    words, shown = _words(name), _number(value)
    if kind == "int":
        return rng.choice(INT_TEMPLATES).format(words=words, v=shown)
    if name in ADJECTIVES:
        template = rng.choice(ADJECTIVE_TEMPLATES)
        return template.format(words=words, v=shown, adj=ADJECTIVES[name])
    return rng.choice(FLOAT_TEMPLATES).format(words=words, v=shown)


def edit_row(row: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """An edit task made from a CAD or scene task row, or None if it has nothing to change."""
    if row.get("domain") not in ("cad", "scene"):
        return None
    parameters = [
        p
        for p in find_parameters(parse(row["reference"])).values()
        if p.type in ("int", "float") and not isinstance(p.value, bool)
    ]
    if not parameters:
        return None
    changes = 2 if len(parameters) > 2 and rng.random() < 0.25 else 1
    program, phrases, changed = row["reference"], [], {}
    for parameter in rng.sample(parameters, changes):
        new = _new_value(parameter.value, parameter.type, rng)  # type: ignore[arg-type]
        if new is None:
            continue
        program = apply_parameters(program, {parameter.name: new})
        phrases.append(_phrase(parameter.name, parameter.type, new, rng))
        changed[parameter.name] = new
    if not changed or program == row["reference"]:
        return None
    instruction = " and ".join(phrases)
    prompt = instruction if rng.choice(EDIT_PROMPTS) == "instruction" else row["prompt"]
    return {
        "id": f"{row['id']}-edit-{'-'.join(sorted(changed))}",
        "domain": row["domain"],
        "family": row["family"],
        "split": row["split"],
        "prompt": prompt,
        "previous_program": row["reference"],
        "instruction": instruction,
        "reference": program,
        "params": {**row.get("params", {}), **{f"edit.{k}": v for k, v in changed.items()}},
        "edit": True,
    }


def with_edits(rows: Any, seed: int | str, share: float) -> Any:
    """The rows, each CAD/scene row followed by an edit of it with probability `share`."""
    if not 0 <= share <= 1:
        raise ValueError(f"the share of edit tasks must be in [0, 1], got {share}")
    for row in rows:
        yield row
        rng = random.Random(f"{seed}:edit:{row['id']}")
        if share and rng.random() < share:
            edited = edit_row(row, rng)
            if edited is not None:
                yield edited
