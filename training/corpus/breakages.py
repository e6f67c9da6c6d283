"""Ways models break CadQuery programs, applied to a working program to make a repair task.

Each breakage takes a working program (and its task row, for sizes) and returns the program
broken the way models really fail, or None when it does not apply: a wrong API name
(`.cube(...)`, `.counterboreHole(...)`), a wrong argument (`centred=`, `.circle(diameter=...)`,
arguments missing), an undefined name (a parameter dropped or misspelt, `import cadquery` with
no `as cq`), a fillet or chamfer larger than its edge, a zero thickness, a disjoint solid (an
addition floating off the part), a cut that removes everything, an out-of-range parameter (a
count of 0, a negative size), a program cut off part way, and a program that never assigns
`result`. Whether the broken program really fails is the validator's to say (repair.py); a
breakage that happens not to fail is discarded there.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from validators.cad.program import ProgramError, apply_parameters, find_parameters, parse

# Plausible wrong names for CadQuery Workplane methods (none of them exists on cq.Workplane).
WRONG_NAMES = {
    "box": ("cube", "cuboid", "rectangle"),
    "circle": ("circ", "disk"),
    "extrude": ("extrusion", "pad", "linearExtrude"),
    "hole": ("drill", "holes"),
    "cboreHole": ("counterboreHole", "cbore"),
    "cskHole": ("countersinkHole", "cskhole"),
    "fillet": ("round", "filletEdges", "fillet2D"),
    "chamfer": ("bevel", "chamferEdges"),
    "polarArray": ("circularArray", "polarPattern"),
    "rarray": ("rectArray", "gridArray", "array"),
    "slot2D": ("slot", "obround"),
    "polygon": ("regularPolygon", "ngon"),
    "cutBlind": ("pocket", "cutDepth"),
    "cutThruAll": ("cutThrough", "throughCut"),
    "shell": ("hollow", "shellFace"),
    "revolve": ("rotateExtrude", "revolution"),
    "loft": ("lofted", "blend"),
    "sweep": ("sweepAlong", "pipe"),
    "polyline": ("polygonLine", "lines"),
    "threePointArc": ("arc3Points", "threePointsArc"),
    "tangentArcPoint": ("tangentArc",),
    "mirror": ("mirrored", "reflect"),
    "union": ("fuse", "join"),
    "cut": ("subtract", "difference"),
    "translate": ("translated", "shift"),
    "workplane": ("plane", "workPlane"),
    "center": ("centre", "setCenter"),
    "close": ("closed", "closePath"),
    "pushPoints": ("points", "pushPoint"),
    "faces": ("face",),
    "edges": ("edge",),
}
# Wrong arguments: (pattern, replacement), each a mistake models make.
WRONG_ARGUMENTS = (
    (r"centered=\(", "centred=("),
    (r"both=True", "symmetric=True"),
    (r"circumscribed=True", "inscribed=True"),
    (r"\.circle\(([\w.]+) / 2\)", r".circle(diameter=\1)"),
    (r"\.polarArray\(([^,()]+), 0, 360, ([\w.]+)\)", r".polarArray(\1, \2)"),
    (r"\.rarray\(([^,()]+), ([^,()]+), ([^,()]+), ([^,()]+)\)", r".rarray((\1, \2), (\3, \4))"),
    (r"\.revolve\(360, \(0, 0, 0\), \(0, 1, 0\)\)", '.revolve(360, axis="Z")'),
    (r"\.extrude\(([\w.]+)\)", r".extrude(distance=\1)"),
    (r"\.fillet\(([\w.]+)\)", r'.fillet(\1, edges="|Z")'),
    (r"\.box\(([^()]+?), ([^()]+?), ([^(),]+?)([,)])", r".box((\1, \2, \3)\4"),
    (r"\.cboreHole\(([\w.]+), ([\w.]+), ([\w.]+)\)", r".cboreHole(\1, cboreDiameter=\2, depth=\3)"),
    (r'cq\.Workplane\("XZ"\)', 'cq.Workplane("XZY")'),
    (r"\.hole\(([\w.]+)\)", r".hole(diameter=\1, through=True)"),
)
MISSPELT = {  # what a parameter gets called when a model forgets its own name
    "thickness": ("thick", "t", "plate_thickness"),
    "length": ("len", "l"),
    "width": ("w", "wide"),
    "height": ("h", "tall"),
    "wall": ("wall_thickness", "wall_t"),
}
SIZE_WORDS = ("thick", "height", "wall", "_h", "_t")
CUT_WORDS = ("hole", "bore", "pocket", "slot", "flute", "screw", "axle", "cross")
ROUND_WORDS = ("fillet", "chamfer", "corner_r", "profile_r", "edge_")


def _body_start(program: str) -> int:
    """The index of the first line after the last parameter (where the construction starts)."""
    try:
        found = find_parameters(parse(program))
    except ProgramError:
        return 0
    return max((p.line for p in found.values()), default=0)


def _numbers(program: str) -> dict[str, tuple[str, float]]:
    """The program's numeric parameters: name -> (type, value)."""
    try:
        found = find_parameters(parse(program))
    except ProgramError:
        return {}
    return {
        name: (p.type, float(p.value))
        for name, p in found.items()
        if p.type in ("int", "float") and not isinstance(p.value, bool)
    }


def _largest(row: dict[str, Any], program: str) -> float:
    """The part's largest size: the spec's box, else its largest parameter."""
    box = (row.get("spec") or {}).get("bbox_mm")
    if box:
        return float(max(box))
    values = [v for _, v in _numbers(program).values()]
    return max(values, default=50.0)


def api_name(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A Workplane method called by a name it does not have: `.cube(`, `.counterboreHole(`."""
    del row
    start = _offset(program, _body_start(program))
    found = [
        m for m in re.finditer(r"\.(\w+)\(", program) if m.start() >= start and m[1] in WRONG_NAMES
    ]
    if not found:
        return None
    match = rng.choice(found)
    wrong = rng.choice(WRONG_NAMES[match[1]])
    return f"{program[: match.start(1)]}{wrong}{program[match.end(1) :]}"


def api_argument(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A call with a wrong keyword or a wrong number of arguments."""
    del row
    start = _offset(program, _body_start(program))
    body = program[start:]
    options = [(p, r) for p, r in WRONG_ARGUMENTS if re.search(p, body)]
    if not options:
        return None
    pattern, replacement = rng.choice(options)
    matches = list(re.finditer(pattern, body))
    chosen = rng.choice(matches)
    broken = body[: chosen.start()] + chosen.expand(replacement) + body[chosen.end() :]
    return program[:start] + broken


def undefined_name(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A name the program never defines: a parameter dropped or misspelt, or `cq` not imported."""
    del row
    lines = program.splitlines(keepends=True)
    numbers = _numbers(program)
    start = _body_start(program)
    body = "".join(lines[start:])
    used = [name for name in numbers if re.search(rf"\b{name}\b", body)]
    way = rng.choice(["drop", "misspell", "import"])
    if way == "import" and lines and lines[0].strip() == "import cadquery as cq":
        return "import cadquery\n" + "".join(lines[1:])
    if not used:
        return None
    name = rng.choice(used)
    if way == "drop":
        kept = [line for line in lines[:start] if line.split("=", 1)[0].strip() != name]
        return "".join(kept + lines[start:])
    wrong = rng.choice(MISSPELT.get(name, (name.replace("_", ""), f"{name}_mm")))
    if wrong in numbers:
        return None
    uses = list(re.finditer(rf"\b{name}\b", body))
    hit = rng.choice(uses)
    broken = body[: hit.start()] + wrong + body[hit.end() :]
    return "".join(lines[:start]) + broken


def fillet_too_big(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A fillet or chamfer as large as the part: larger than the edges it rounds."""
    names = [n for n, (kind, _) in _numbers(program).items() if kind == "float"]
    rounds = [n for n in names if any(word in n for word in ROUND_WORDS)]
    if not rounds:
        return None
    name = rng.choice(rounds)
    return apply_parameters(program, {name: round(_largest(row, program), 1)})


def zero_thickness(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A thickness, height or wall of zero."""
    del row
    sizes = [
        n
        for n, (kind, _) in _numbers(program).items()
        if kind == "float" and any(word in n for word in SIZE_WORDS)
    ]
    if not sizes:
        return None
    return apply_parameters(program, {rng.choice(sizes): 0.0})


def disjoint(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """An addition placed off the part: a boss on a workplane offset once too often, or a
    unioned solid moved away, so that the result is two solids."""
    if row.get("domain") != "cad":
        return None
    lines = program.splitlines(keepends=True)
    start = _body_start(program)
    numbers = _numbers(program)
    offset = next((n for n in ("thickness", "height") if n in numbers), None)
    raised = [
        i
        for i in range(start, len(lines))
        if ".workplane()" in lines[i] and ".extrude(" in lines[i] and offset
    ]
    joined = [i for i in range(start, len(lines)) if re.search(r"\.union\((\w+)\)", lines[i])]
    if not raised and not joined:
        return None
    i = rng.choice(raised + joined)
    if i in raised:
        lines[i] = lines[i].replace(".workplane()", f".workplane(offset={offset})", 1)
    else:
        away = round(2 * _largest(row, program) + 10)
        lines[i] = re.sub(
            r"\.union\((\w+)\)", rf".union(\1.translate(({away}, 0, 0)))", lines[i], count=1
        )
    return "".join(lines)


def oversized_cut(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A hole, bore or pocket larger than the part: the cut removes all or splits it."""
    cuts = [
        n
        for n, (kind, _) in _numbers(program).items()
        if kind == "float" and any(word in n for word in CUT_WORDS)
    ]
    if not cuts:
        return None
    return apply_parameters(program, {rng.choice(cuts): round(1.5 * _largest(row, program), 1)})


def out_of_range(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """A parameter out of its range: a count of zero or a negative size."""
    del row
    numbers = _numbers(program)
    if not numbers:
        return None
    name = rng.choice(sorted(numbers))
    kind, value = numbers[name]
    if kind == "int":
        return apply_parameters(program, {name: rng.choice([0, -int(value)])})
    return apply_parameters(program, {name: -value})


def truncated(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """The program cut off part way through its construction, as a reply that ran out of room."""
    del row
    start = _offset(program, _body_start(program))
    body = program.rstrip()
    if len(body) - start < 20:
        return None
    cut = rng.randint(start + 10, len(body) - 5)
    return body[:cut]


def no_result(program: str, row: dict[str, Any], rng: random.Random) -> str | None:
    """The shape built under another name: nothing assigns `result`."""
    del row
    if not re.search(r"^result = ", program, re.MULTILINE) or "show_object" in program:
        return None
    return re.sub(r"\bresult\b", rng.choice(["part", "shape", "model", "body"]), program)


def _offset(program: str, line: int) -> int:
    """The character offset where a line starts."""
    return sum(len(text) for text in program.splitlines(keepends=True)[:line])


Breakage = Callable[[str, dict[str, Any], random.Random], "str | None"]
BREAKAGES: dict[str, Breakage] = {
    "api_name": api_name,
    "api_argument": api_argument,
    "undefined_name": undefined_name,
    "fillet_too_big": fillet_too_big,
    "zero_thickness": zero_thickness,
    "disjoint": disjoint,
    "oversized_cut": oversized_cut,
    "out_of_range": out_of_range,
    "truncated": truncated,
    "no_result": no_result,
}


def candidates(row: dict[str, Any], rng: random.Random, tries: int) -> list[tuple[str, str]]:
    """Up to `tries` broken versions of the row's program, each by another kind of breakage,
    in a seeded order: (kind, broken program); none that equals the original."""
    program = str(row["reference"])
    kinds = list(BREAKAGES)
    rng.shuffle(kinds)
    found: list[tuple[str, str]] = []
    for kind in kinds:
        broken = BREAKAGES[kind](program, row, rng)
        if broken is not None and broken.strip() != program.strip():
            found.append((kind, broken))
        if len(found) == tries:
            break
    return found
