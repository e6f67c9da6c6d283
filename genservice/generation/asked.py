"""What a request asks that its part can be measured against: a conservative spec from its words.

"A part 40 mm tall" answered by a ring 4 mm thick is sound geometry and the wrong thing. The
request's own words are the only spec a served request has, so `asked_items` reads them (with
stated.py's numbers: units, centimetres, number words, M-sizes, grids) and keeps only what they
leave no doubt about; validators/cad/reading.py checks the items against the measured part.

**What is asked.** A size of the *whole* part, named by an axis word: tall/high/height (the
part's z extent), long/length, wide/width, deep/depth, across/AF/hex/flat to flat (some extent),
thick/thickness/thk/t (the thinnest extent, or z), diameter/dia/Ø/OD/d/"outside" (two
extents, round between them), "N mm square", "an N mm cube", and a size triple or pair
"80 × 71 × 4 mm" (the extents, in any order). Counts the measurements can show: holes ("six
M5 bolt holes", "a 4 x 4 grid of M8 holes": at least that
many round holes; of the size their words give beyond doubt, "four 5 mm holes", "4 holes dia 6",
an M-size from tapped to a coarse clearance), and in a scene the objects it is made of ("seven
blocks": at least that many solids); ways right through the part ("four through holes"); a bore
or a way through for a thing bored by what it is (a washer, a pipe, a sleeve, a nut, a ring: a
split collar's bore counts, and a pipe bend's passage); and that a thing that holds something by
what it is (a cup, a tray, a bin, a vase, an enclosure) is hollow; and that a thing called
round, circular or cylindrical ("a round lid") is round seen along some axis, and one called
hex or hexagonal ("a hex nut", "a hex standoff") a hexagon, one called rectangular or oblong a
rectangle and one called square a square (seen along its most telling axis). Nothing else:
teeth, notches, sizes of other features, "a 60 mm flange" (which size?).

**Whose size it is** is wording.py's reading: a number is the whole's only when its words give
it no other owner (a leg, a groove, each of several, a feature before it in a list). A scene's
sizes belong to one of its objects ("a table 60 mm high" with things on it), so a scene is
asked only its counts, unless its words name no object ("like this, 190 by 100 by 125 mm",
"this scene, 190 x 100 x 125"): then its sizes are all of it. Digits before "holes" or "legs"
may be their size ("5 holes (2 per side)"), so they count only with the holes' size after them
("4 holes dia 6"). Anything in doubt asks nothing.

**How closely.** `about` (within the check's tolerance) when the request names nothing but the
thing and what is cut into it: then its sizes are the part's extents. Any other component ("a
knuckle", "a tab", "legs") may stick out, so sizes are `at_least`: the extent is at least the
stated size. A thickness is `about` only for flat things (plates, washers, flanges, gears...), a
triple or pair only for box-like ones (plates, boxes, blocks...) and for a thing the words do
not make ("like this, 80 x 45 x 60 mm", "a part 40 x 20 x 10"). A size its words call the
outer size of all of it ("overall 258 x 96 x 8", "120 mm long overall", "footprint 80 by 75",
"140 mm on the outside") is `about` whatever else the words name: all that sticks out is inside
it. An edit ("make it 12 mm thick") is judged only on absolute sizes of the whole, `at_least`
unless its words say overall (the previous program's other features are unknown to its words),
never on counts ("add 2 holes") or heights (a program's "height" may lean, as a phone stand's
back does).

**Format** (plain JSON, a list; validators/cad/request.py checks it):
  {"what": "height", "value_mm": 40.0, "match": "about", "phrase": "40 mm tall"}
  {"what": "box", "values_mm": [80.0, 71.0, 4.0], "match": "about", "phrase": "80 × 71 × 4 mm"}
  {"what": "holes", "count": 6, "match": "at_least", "phrase": "six M5 bolt holes",
   "diameter_mm": 5.0, "diameter_max_mm": 6.25}
`what` is one of validators.cad.request's SIZES (value_mm, or values_mm for a box), COUNTS
(count) or SHAPES; `match` is "about" or "at_least"; `phrase` is the request's words it came
from.
"""

from __future__ import annotations

import re
from typing import Any

from genservice.generation.stated import UNITS, grid_counts
from genservice.generation.wording import WHOLE, Reading, counted, sized_after, word_at

# Things that are bored by what they are: a washer or a pipe without a bore or a way through it
# is no washer or pipe ("test tube" aside).
_BORED = {"washer", "pipe", "sleeve", "bushing", "collar", "grommet", "nut", "ring", "tube"}
_BORED |= {"eyelet", "ferrule", "bush", "elbow"}
_BORED_STEMS = {w[:4] for w in _BORED}
# Things that hold something by what they are: a cup or a tray that is a solid lump is not one.
_HOLDERS = {"cup", "mug", "tray", "bin", "bowl", "pot", "vase", "container", "canister", "jar"}
_HOLDERS |= {"bucket", "basin", "planter", "tub", "trough", "beaker", "enclosure"}
_HOLDER_STEMS = {w[:4] for w in _HOLDERS}
# Things whose thickness is their thinnest extent, and things whose size triple is their box.
_FLAT = {"plate", "washer", "shim", "flange", "disc", "disk", "gasket", "gear", "nut", "blank"}
_FLAT |= {"sheet", "panel", "tile", "coaster", "wheel", "pulley", "sheave", "spacer", "sleeve"}
_BOXY = {"plate", "box", "enclosure", "case", "housing", "block", "brick", "slab", "cube"}
_BOXY |= {"cuboid", "tray", "board", "panel", "tile", "sheet", "bar", "bracket"}
# Words for a thing that say nothing of its make ("like this", "this part", "the object"): with
# nothing else named, its size triple is its box too.
_GENERIC_STEMS = {w[:4] for w in ("part", "piece", "object", "thing", "shape", "item", "scene")}
_OBJECTS = {"blocks", "slabs", "layers", "tiers", "levels", "shelves", "boxes", "cubes"}
_OBJECTS |= {"objects", "items", "legs", "dividers", "cans", "books", "bricks", "posts"}
# Things called so are that shape seen along an axis: round, a hexagon (a hex nut, a hex
# standoff), a rectangle or a square; a hex key or wrench is bent or open, and a hex socket's
# hexagon is inside it.
_SHAPED = {
    "round": {"round", "circular", "cylindrical"},
    "hexagonal": {"hex", "hexagon", "hexagonal"},
    "rectangular": {"rectangular", "oblong"},
    "square": {"square"},
}
_NOT_PRISMS = {"key", "keys", "wrench", "wrenches", "socket", "sockets", "driver", "bit", "bits"}
_SIZED_BY_DIGITS = {"holes", "legs"}  # "5 holes", "8 legs" may be their size in millimetres
_NOT_ROUND = {"square", "hex", "hexagonal", "rectangular", "oblong", "slotted", "elongated"}
_NOT_ROUND |= {"oval", "triangular", "keyhole"}
_GRID_OF_HOLES = re.compile(
    r"\w+\s*(?:x|×|by)\s*\w+\s+(?:grid|array|pattern)\b(?:\W+\w+){0,4}?\W+holes\b", re.IGNORECASE
)


def asked_items(text: str, domain: str = "cad", edit: bool = False) -> list[dict[str, Any]]:
    """What a request asks that the part's measurements can show (the module's format); an
    edit's instruction with `edit`. Empty when its words leave any doubt, and for code."""
    if domain not in ("cad", "scene") or not text.strip():
        return []
    reading = Reading(text, edit)
    if not reading.numbers:
        return []
    # A scene's sizes belong to one of its objects ("a table 60 mm high" with things on it),
    # unless the words name none: "like this, 190 by 100 by 125 mm" is all of what is pictured.
    generic = reading.simple() and reading.thing <= _GENERIC_STEMS
    items = _sizes(reading) if domain == "cad" or generic else []
    if not edit:
        items += _counts(reading, text, domain)
        holder = _thing_named(reading, _HOLDER_STEMS)
        if holder and domain == "cad":
            items.append({"what": "hollow", "match": "about", "phrase": holder})
        shape = _shaped_thing(reading) if domain == "cad" else None
        if shape:
            items.append({"what": shape[0], "match": "about", "phrase": shape[1]})
    return items


def _shaped_thing(reading: Reading) -> tuple[str, str] | None:
    """("round", "round lid") when the request's thing is called by a shape word ("a round
    lid", "a circular trivet", "a hex nut"), else None: the word must stand just before the
    thing's own noun, so "a block with a round pocket" or "a rounded box" asks nothing, and the
    request must name nothing that may stick out of it (a round plate with ears is not round)."""
    words = reading.words
    if not reading.simple():
        return None
    at = next((i for i, w in enumerate(words) if reading.thing and w[:4] in reading.thing), None)
    if at is None or words[at] in _NOT_PRISMS:
        return None
    before = range(max(0, at - 3), at)
    if any(words[k] in ("with", "and", ",", "of") for k in before):
        return None
    for k in before:
        shape = next((what for what, names in _SHAPED.items() if words[k] in names), None)
        hyphened = reading.text[reading.spans[k][1] : reading.spans[k][1] + 1] == "-"
        if shape and not hyphened:  # a round-ended strap is not round, nor a hex-head bolt
            return shape, f"{words[k]} {words[at]}"
    return None


def _thing_named(reading: Reading, kinds: set[str]) -> str:
    """The request's word for its thing when the thing is one of these kinds (stems), else ""."""
    stems = sorted(reading.thing & kinds)
    return next((w for w in reading.words if stems and w[:4] == stems[0]), "")


def task_items(task: dict[str, Any]) -> list[dict[str, Any]] | None:
    """What a task row asks in its own words: its prompt's items, or for an edit (a previous
    program and an instruction) its instruction's; None when nothing (code asks nothing)."""
    edit = bool(task.get("instruction")) and task.get("previous_program") is not None
    text = str((task.get("instruction") if edit else task.get("prompt")) or "")
    return asked_items(text, str(task.get("domain")), edit=edit) or None


def _sizes(reading: Reading) -> list[dict[str, Any]]:
    """The overall sizes the words ask: one item per axis and value, a box per size chain."""
    simple = reading.simple() and not reading.edit
    flat = bool(reading.thing & {w[:4] for w in _FLAT})
    boxy = bool(reading.thing & {w[:4] for w in _BOXY}) or reading.thing <= _GENERIC_STEMS
    items: list[dict[str, Any]] = []
    seen: set[tuple[str, float]] = set()
    boxes: set[tuple[float, ...]] = set()
    for at in sorted(reading.numbers):
        number = reading.numbers[at]
        measures = number.axis
        if measures is None and number.overall and not number.noun:
            measures = "largest"  # "about 120 mm overall": no axis, so its largest extent
        if number.chain == [-1] or number.form == "count" or measures is None:
            continue
        if reading.edit and measures == "height":
            continue  # a program's "height" may lean: "make it 60 mm tall" of a phone stand
        axis = "od" if measures == "diameter" and number.outer else measures
        if reading.owner(number, axis) != WHOLE:
            continue
        phrase = reading.phrase(number.start, number.end)
        if number.axis in ("box", "square", "cube"):
            # "80 × 71 × 4 mm", "40 mm square", "a 50 mm cube"
            chain = {"box": number.chain, "square": [at, at], "cube": [at, at, at]}[number.axis]
            values = [reading.numbers[c].value for c in chain]
            if len(values) <= 3 and tuple(sorted(values)) not in boxes:
                boxes.add(tuple(sorted(values)))
                match = "about" if (simple and boxy) or number.overall else "at_least"
                items.append({"what": "box", "values_mm": values, "match": match, "phrase": phrase})
            continue
        what = measures
        twin = {"across": "diameter", "diameter": "across"}.get(what, what)  # "OD 75, 75 across"
        if (what, number.value) in seen or (twin, number.value) in seen:
            continue
        seen.add((what, number.value))
        plain = simple and (what != "thickness" or flat)
        match = "about" if plain or number.overall else "at_least"
        items.append({"what": what, "value_mm": number.value, "match": match, "phrase": phrase})
    return items


def _counts(reading: Reading, text: str, domain: str) -> list[dict[str, Any]]:
    """The counts the words ask: the most holes any phrase or grid asks, the most objects."""
    holes: list[tuple[int, str, dict[str, float]]] = []
    objects: list[tuple[int, str, dict[str, float]]] = []
    through: list[tuple[int, str, dict[str, float]]] = []
    bored: list[tuple[int, str, dict[str, float]]] = []
    thing = _thing_named(reading, _BORED_STEMS)
    if thing and domain == "cad" and "test" not in reading.named:
        bored.append((1, thing, {}))
    for number in reading.numbers.values():
        if number.form not in ("count", "things") or not number.value.is_integer():
            continue
        if number.at - 1 in reading.numbers:
            continue  # "two 3 holes": 3 is a size
        noun, end = counted(reading.words, number.at + 1)
        sized = sized_after(reading.words, end)
        if number.form == "things" and not sized and noun in _SIZED_BY_DIGITS:
            continue  # "5 holes (2 per side)", "& 8 legs": five millimetre holes, maybe
        count = int(number.value)
        if count < 1 or not noun:
            continue
        between = set(reading.words[number.at + 1 : end])
        phrase = reading.phrase(number.at, end)
        if noun[:4] == "hole" and not between & _NOT_ROUND:
            size, stop = _hole_size(reading, number.at, end)
            holes.append((count, reading.phrase(number.at, stop), size))
            if between & {"through", "thru"}:  # "four through holes": each goes right through
                through.append((count, phrase, {}))
        elif domain == "scene" and noun in _OBJECTS:
            objects.append((count, phrase, {}))
    grid = grid_counts(text)
    found = _GRID_OF_HOLES.search(text)
    if grid is not None and found:  # "a 4 x 4 grid of M8 holes"
        holes.append((int(grid[0] * grid[1]), found.group(0), {}))
    items = []
    asks = (("holes", holes), ("objects", objects), ("through_holes", through), ("bored", bored))
    for what, found_counts in asks:
        if found_counts:
            count, phrase, size = max(found_counts, key=lambda c: (c[0], len(c[2])))
            item = {"what": what, "count": count, "match": "at_least", "phrase": phrase}
            items.append(item | size)
    return items


# Words after a size that make it some other size than the holes' diameter: "four 6 mm deep
# holes", "holes 20 apart"; after the holes, also what lays them out ("holes 60 PCD").
_NOT_A_DIAMETER = {"deep", "depth", "apart", "pitch", "pitched", "spacing", "spaced", "long"}
_NOT_A_DIAMETER |= {"centres", "centers", "x", "×", "by", "thick", "wide", "tall", "high"}
_NOT_A_DIAMETER |= {"across", "radius", "r"}
_LAYOUT_AFTER = {"from", "in", "off", "between", "pcd", "bolt", "circle", "on", "to", "square"}
_BEFORE_A_DIAMETER = ("of", "dia", "diameter", "ø", "each", "a")


def _hole_size(reading: Reading, at: int, end: int) -> tuple[dict[str, float], int]:
    """The diameter of the counted holes when their words give one beyond doubt, and where
    their phrase ends: the only size between the count and "holes" ("six M5 bolt holes", "four
    5 mm holes", "3 Ø6.5 holes") or the size right after ("4 holes dia 6", "10 holes of 6.5mm
    diameter"); none for anything else ("4 holes 6 mm deep", "holes 20 apart"). An M-size is a
    bolt's hole, from tapped to a coarse clearance (M5: 5 to 6.25)."""
    words = reading.words
    inside = [k for k in reading.numbers if at < k < end]
    if len(inside) > 1:
        return {}, end
    k = inside[0] if inside else end
    while not inside and k < min(end + 3, len(words)) and words[k] in _BEFORE_A_DIAMETER:
        k += 1
    if k not in reading.numbers:
        return {}, end
    after = k + 1 + (word_at(words, k + 1) in UNITS)
    if word_at(words, after) in _NOT_A_DIAMETER | (set() if inside else _LAYOUT_AFTER):
        return {}, end
    stop = end if inside else after + (word_at(words, after) in ("diameter", "dia"))
    if words[k][:1] == "m" and words[k][1:].replace(".", "", 1).isdigit() and not reading.gearing:
        bolt = float(words[k][1:])
        return {"diameter_mm": bolt, "diameter_max_mm": round(1.25 * bolt, 3)}, stop
    measured = reading.numbers[k].form == "measure" or words[k - 1] in ("ø", "dia", "diameter")
    if inside and not measured:  # "two 3 holes": bare digits before the holes may be a count
        return {}, end
    return {"diameter_mm": reading.numbers[k].value}, stop
