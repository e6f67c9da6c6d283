"""What a request states: its numbers, the words around each, and which parameter names match.

Read from the request's text alone (never a reference): the reranker counts how many stated
numbers a candidate takes and where (rerank.py), and binding writes a stated number into the
parameter its words name (binding.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from validators.cad.program import find_parameters, parse

NUMBER_WORDS: tuple[str, ...] = ("zero", "one", "two", "three", "four", "five", "six", "seven")
NUMBER_WORDS += ("eight", "nine", "ten", "eleven", "twelve")
_WORDS = {word: number for number, word in enumerate(NUMBER_WORDS)}

# Words that name what a number measures, as a parameter name would: their stems (the first
# four letters), with the abbreviations and adjectives people write spelled out as the nouns a
# parameter is named by ("8 mm thick" is `thickness`, "40 wide" is `width`).
_SPELLED = {
    "od": "outer diameter",
    "id": "inner diameter",
    "pcd": "bolt circle",
    "clr": "bend radius",  # a pipe bend's centreline radius
    "thk": "thickness",
    "thick": "thickness",
    "t": "thickness",
    "dia": "diameter",
    "ø": "diameter",
    "d": "diameter",
    "r": "radius",
    "h": "height",
    "tall": "height",
    "high": "height",
    "w": "width",
    "wide": "width",
    "l": "length",
    "long": "length",
    "deep": "depth",
    "apart": "spacing",
    "hole": "hole bolt",
    "holes": "holes bolt",
    "between": "spacing gap",
    "columns": "cols columns",
    "centres": "spacing pitch",
    "centers": "spacing pitch",
    "inside": "inner",
    "outside": "outer",
}
_CENTIMETRES = {"cm", "centimetres", "centimeters", "centimetre", "centimeter"}
UNITS = {"mm", "millimetres", "millimeters", "millimetre", "millimeter"} | _CENTIMETRES
_FILLER = UNITS | {"a", "an", "the", "of", "with", "and", "on", "at", "it", "is", "each", "for"}
_FILLER |= {"to", "make", "set", "by", "in", "x"}
_TIMES = {"x", "×", "by"}
_DEGREES = {"°", "deg", "degree", "degrees"}
# Words that say what kind of thing is counted ("4 square legs"), never what a size measures.
_KINDS = {"square", "sq", "round", "section", "tapered", "turned", "straight", "cylindrical"}
_KINDS |= {"rectangular", "wooden", "metal", "steel", "identical", "equal", "matching", "plain"}
_TOKEN = re.compile(
    r"M\d+(?:\.\d+)?\b|\d+x\b|\d+(?:\.\d+)?|[a-zø]+|[,;:()/&×°—–]|\.(?!\d)", re.IGNORECASE
)


@dataclass(frozen=True)
class StatedNumber:
    """A number the request states, as written, the stems of the words after and before it,
    and its form: "count" (a number word, "8x", or a number before a measured one: "six
    holes", "4 11mm objects"), "things" (digits before a plural noun: "4 holes"), "measure" (a
    unit, a decimal or an M-size), "angle" (degrees: "45°", "a 90 degree bend") or "number"
    (bare digits, either a count or a measure)."""

    value: float
    after: frozenset[str]
    before: frozenset[str]
    form: str
    written: str = ""
    counted: str = ""  # for a count, the plural noun after it ("holes" in "3 Ø6.5 holes")
    head: frozenset[str] = frozenset()  # the stem of the noun the words after it end in
    # The stems of the words right before and right after it (past a unit): "thickness 5",
    # "35 wide", "six millimetres thick".
    beside: frozenset[str] = frozenset()

    @property
    def stems(self) -> frozenset[str]:
        """The stems on both sides."""
        return self.after | self.before


def stated_numbers(text: str) -> list[StatedNumber]:
    """Each number the request states, with up to three words after it and two before, within
    its clause ("six M5 bolt holes" gives 6 with {bolt, hole} after it). An M-size is its
    clearance hole ("M5" is a 5.5 mm hole, the corpus's and the usual convention)."""
    tokens = _TOKEN.findall(text)
    found = []
    for i, token in enumerate(tokens):
        extra: list[str] = []
        following = [t.lower() for t in tokens[i + 1 : i + 3]]
        if _is_size(token):
            value, form = float(token[1:]) + 0.5, "measure"
            extra = ["bolt", "hole", "diameter"]
        elif token[0].isdigit() and token[-1] in "xX":  # "8x holes": a count
            value, form = float(token[:-1]), "count"
        elif token[0].isdigit() and following[:1] and following[0] in _DEGREES:
            value, form = float(token), "angle"
            extra = ["angle"]
        elif token[0].isdigit():
            unit = following[0] if following else ""
            # Parameters are in millimetres.
            value = float(token) * (10 if unit in _CENTIMETRES else 1)
            form = _form(tokens, i)
        elif token.lower() in _WORDS:
            unit = following[0] if following else ""
            # "six millimetres thick" is a size written out; "six holes" a count.
            value = float(_WORDS[token.lower()]) * (10 if unit in _CENTIMETRES else 1)
            form = "measure" if unit in UNITS else "count"
        else:
            continue
        # In "50 x 24 mm grip knob" (or "50mm x 24mm") the words after the sizes name the
        # whole, not one size.
        previous = tokens[i - 1].lower() if i > 0 else ""
        degrees = following[:1] and following[0] in _DEGREES
        rest = tokens[i + 2 :] if degrees else tokens[i + 1 :]  # the words after "°"
        then = following[1:2] if following[:1] and following[0] in UNITS else rest[:1]
        reach = 0 if then and then[0].lower() in _TIMES else 1 if previous in _TIMES else 3
        if reach == 0 and _angle_next(rest[1:]):  # "a 2 x 45° chamfer": 2 is the chamfer's
            rest, reach = rest[3:], 3
        after = stems([*_clause(rest, reach), *extra], letters=False)
        # Nor do the words before them: "top 150 mm by 80 mm" is the top's length and width.
        chained = reach < 3
        before = frozenset() if chained else stems(_clause(tokens[:i][::-1], 2))
        counted = next((w.lower() for w in _clause(rest, 4) if _plural(w.lower())), "")
        head = stems([_head(rest, reach)], letters=False)
        beside = stems([w for w in (previous, *then[:1]) if w.isalpha()], letters=False)
        found.append(StatedNumber(value, after, before, form, token, counted, head, beside))
    return found


def _angle_next(tokens: Sequence[str]) -> bool:
    """Whether the tokens start with an angle ("45 °", "45 degrees")."""
    return len(tokens) > 1 and tokens[0][:1].isdigit() and tokens[1].lower() in _DEGREES


def _is_size(token: str) -> bool:
    return token[:1] in ("M", "m") and token[1:2].isdigit()


def _form(tokens: list[str], i: int) -> str:
    """The form of the number written in digits at tokens[i], from the tokens around it."""
    around = [t.lower() for t in tokens[i + 1 : i + 6]]
    nxt = around[0] if around else ""
    previous = tokens[i - 1].lower() if i > 0 else ""
    labelled = previous in ("ø", "dia") or (len(previous) == 1 and previous in _SPELLED)
    if nxt in UNITS or "." in tokens[i] or labelled:  # "12 mm", "8.5", "Ø20", "R6 corners"
        return "measure"
    if nxt in _TIMES:  # "50 x 24 mm", "2 by 2 grid": one of a set of sizes or counts
        return "number"
    # "4 11mm objects", "6 Ø4.5 holes", "3 M5 holes": how many of the measured things.
    measure = 1 if nxt == "ø" else 0
    size = around[measure] if len(around) > measure else ""
    unit = 1 if around[measure + 1 : measure + 2] in ([u] for u in UNITS) else 0
    sized = _is_size(size) or (size[:1].isdigit() and ("." in size or unit == 1))
    named = around[measure + 1 + unit : measure + 3 + unit]  # the measured thing's words
    if sized and any(_plural(word) for word in named):
        return "count"
    if _plural(nxt):
        return "things"  # "4 holes dia 6": how many holes, not a size
    # "4 sq legs", "4 square-section legs, 6 mm thick": words of what kind between the count
    # and its things. Not after a number word ("four 3 square legs" are 3 mm legs), and only words
    # that say what kind: "30 across flats" is a size.
    counted = previous in _WORDS
    for gap in (1, 2):
        kinds = around[:gap]
        described = len(kinds) == gap and all(w in _KINDS for w in kinds)
        if described and not counted and len(around) > gap and _plural(around[gap]):
            return "things"
    return "number"


def _plural(word: str) -> bool:
    # "holes", "objects"; not "across", "this", "radius", "axis".
    singular = word.endswith(("ss", "us", "is")) or word in _FILLER
    return word.isalpha() and len(word) > 3 and word.endswith("s") and not singular


_GRID = re.compile(
    r"\b(\d+|[a-z]+)\s*(?:x|×|by)\s*(\d+|[a-z]+)\s+(?:grid|array|pattern)\b", re.IGNORECASE
)


def grid_counts(text: str) -> tuple[float, float] | None:
    """The columns and rows of "a 4 x 3 grid" / "four by three array" (columns first, as
    people write a grid), or None."""
    match = _GRID.search(text)
    if match is None:
        return None
    counts = [_count(word) for word in match.groups()]
    if counts[0] is None or counts[1] is None:
        return None
    return counts[0], counts[1]


def chained_sizes(text: str) -> list[list[float]]:
    """Each run of sizes joined by x, × or by ("a 40 x 38 seat", "seat 40x38x3", "120 mm by 60
    mm"), in millimetres, as written; a grid ("2 by 2 grid", "2x2 holes") counts, not sizes."""
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    runs: list[list[float]] = []
    i = 0
    while i < len(tokens):
        run: list[float] = []
        j = i
        while j < len(tokens) and re.fullmatch(r"\d+(?:\.\d+)?", tokens[j]):
            unit = tokens[j + 1] if j + 1 < len(tokens) else ""
            run.append(float(tokens[j]) * (10 if unit in _CENTIMETRES else 1))
            j += 2 if unit in UNITS else 1
            if j < len(tokens) - 1 and tokens[j] in _TIMES and tokens[j + 1][:1].isdigit():
                j += 1
            else:
                break
        after = tokens[j] if j < len(tokens) else ""
        counted = after in ("grid", "array", "pattern") or _plural(after)  # "2x2 holes"
        angled = after in _DEGREES  # "a 2 x 45° chamfer": a size and an angle
        if len(run) > 1 and not counted and not angled:
            runs.append(run)
        i = max(j, i + 1)
    return runs


def _count(word: str) -> float | None:
    if word.isdigit():
        return float(word)
    return float(_WORDS[word.lower()]) if word.lower() in _WORDS else None


def asked_numbers(text: str) -> set[float]:
    """The numbers a request states: digits (centimetres in millimetres), number words, and
    M-sizes as clearance holes."""
    return {stated.value for stated in stated_numbers(text)}


def asked_labels(text: str) -> list[tuple[float, set[str]]]:
    """Each number the request states with the stems of the words around it."""
    return [(s.value, set(s.stems)) for s in stated_numbers(text)]


def stems(words: Sequence[str], letters: bool = True) -> frozenset[str]:
    """Four-letter stems of the words (abbreviations spelled out, filler dropped). Without
    `letters`, one-letter abbreviations are dropped: they name the number after them ("t = 3",
    "R6"), and one after a number is a unit of its own ("24T" is 24 teeth)."""
    found = set()
    for word in words:
        if not letters and len(word) == 1:
            continue
        for part in _SPELLED.get(word.lower(), word.lower()).split():
            if part not in _FILLER and len(part) >= 3:
                found.add(part[:4])
    return frozenset(found)


def name_stems(name: str) -> frozenset[str]:
    """The stems of a parameter name's parts (`bolt_circle_d` gives {bolt, circ, diam})."""
    return stems(name.split("_"))


def shared(words: frozenset[str], name: frozenset[str]) -> int:
    """How many of the words' stems the name has; "leg" matches "legs" (one starts the other)."""
    return sum(1 for w in words if any(w.startswith(n) or n.startswith(w) for n in name))


def named_numbers(source: str) -> dict[str, float]:
    """The program's numeric top-level parameters by name (ProgramError if it does not parse)."""
    return {
        name: float(p.value)
        for name, p in find_parameters(parse(source)).items()
        if isinstance(p.value, int | float) and not isinstance(p.value, bool)
    }


_PREPOSITIONS = {"on", "with", "of", "for", "at", "in", "and", "to", "from", "around", "per"}


def _head(tokens: Sequence[str], size: int) -> str:
    """The last word of the phrase after a number, before a preposition: "tab" in "23 mm screw
    tab with a hole", "holes" in "M5 holes on a 40 PCD", "teeth" in "24 teeth 11 mm bore"."""
    head = ""
    for token in tokens[:size]:
        if not token.isalpha() or token.lower() in _PREPOSITIONS:
            break  # punctuation, the next number or a preposition ends the phrase
        if token.lower() not in _FILLER | _KINDS:  # "5 mm thick rectangular tab": thick
            head = token
    return head


def _clause(tokens: Sequence[str], size: int) -> list[str]:
    """Up to `size` words of `tokens`, stopping at punctuation, and at a number once a word
    has come ("M5 holes on 102 PCD": the PCD is 102's; "six M5 bolt holes": the holes are
    six's too)."""
    words: list[str] = []
    for token in tokens:
        if token in ",;.:()/&—–" or len(words) == size:  # "×" is passed over, as "x" is
            break
        if token.isalpha():
            words.append(token)
        elif token[:1].isdigit() and any(w.lower() not in _FILLER | {"ø"} for w in words):
            break
    return words
