"""How a request's words tie each number it states to what it measures, and to whose size it is.

asked.py keeps a number as a size of the whole part only when this reading leaves no doubt. A
number's own words say what it measures: an axis word after it ("40 mm tall", "60 mm OD", "8
across flats") or before it ("height 40", "Ø25", "d=95", "thk 3"), or a noun ("65 mm centre
bore", "bore 35": a feature's size), or a chain "80 × 71 × 4 mm" (a box of sizes).

**Whose size it is.** Walking back from the number: the request's own thing ("a grip knob",
"It's a flange": the head of its first noun phrase, or of the phrase after "it's a") or "it"
makes it the whole's; any other noun ("the wall leg is 70 tall", "a flat plate 28 wide" in a
hinge leaf) makes it that noun's; "each", "per", "both" make it one of several. A comma or "and"
continues the list before it, from the last size there: "OD 80, 12 thk" is all the flange's,
but after a feature's size ("a 5 mm hole, 5 mm deep") the owner is in doubt, unless the
feature cannot have that size (a bore or a bolt circle has no thickness or height; a module or
a tooth count no size at all; what the part is for, "a nut for a 5.5 mm bolt", is not part of
it). A sentence starts with the whole, and so does a colon after the thing ("a pulley for a
round belt: 80 outside diameter"). Words after an axis word name the owner ("4.5 mm deep V
groove"). "overall", "outer size", "... on the outside" make a size the whole's.

**What may stick out.** `Reading.simple` says whether the request names nothing but its thing
and what is cut into it (holes, bores, slots, corners, what it holds, where things are): then
its sizes are the part's extents. Any other word may name a component that sticks out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from genservice.generation.stated import NUMBER_WORDS, UNITS, stated_numbers

# stated.py's tokens, with the marks that end a sentence or a clause: the numbers are the same.
_TOKEN = re.compile(
    r"M\d+(?:\.\d+)?\b|\d+x\b|\d+(?:\.\d+)?|[a-zø]+|[,;:()/&×?!—]|\.(?!\d)", re.IGNORECASE
)
_AFTER = {  # a word after a number (and its unit) that names the axis it measures
    "tall": "height", "high": "height", "height": "height",
    "long": "length", "length": "length",
    "wide": "width", "width": "width",
    "deep": "depth", "depth": "depth",
    "thick": "thickness", "thickness": "thickness", "thk": "thickness",
    "diameter": "diameter", "dia": "diameter", "od": "diameter",
    "across": "across", "af": "across", "hex": "across", "flat": "across",
    "square": "square", "sq": "square", "size": "across",  # "27 mm wrench size"
}  # fmt: skip
_BEFORE = {  # a word before a number that names the axis it measures ("height 40", "Ø25")
    "height": "height", "h": "height",
    "length": "length", "l": "length",
    "width": "width", "w": "width",
    "depth": "depth",
    "thickness": "thickness", "thk": "thickness", "t": "thickness",
    "diameter": "diameter", "dia": "diameter", "ø": "diameter", "d": "diameter", "od": "diameter",
    "af": "across", "hex": "across", "flats": "across",
}  # fmt: skip
_JOINS = {"of", "is", "to"}  # "diameter of 50", "the height is 40", "set the width to 30"
_LEADS_AXIS = {"in", "outside", "outer", "overall", "face", "total", "wrench"}
_ALONG = {"flats", "the", "outside", "to", "flat", "in"}  # "across the flats", "flat to flat"
_SENTENCE = {".", "?", "!"}
_CLAUSE = {",", ";", "&", "/", ")", "—", "and", "or", "but", "plus"}
_NUMBER_WORD_COMPOUND = re.compile(rf"\b({'|'.join(NUMBER_WORDS)})-([a-z])", re.IGNORECASE)
_THROUGH = {"(", ":"}  # "a pipe flange (130 OD", "Flange: Ø130": the owner is before them
_EACH = {"each", "every", "per", "both", "all", "apiece"}
_MARKERS = {"overall", "total", "external", "footprint"}  # the whole's size, whatever comes before
# Words that make a size the largest extent of the whole: "largest side 80", "max dimension 120",
# "80 mm at its widest", "30 mm in size" (and a lone "120 mm overall", asked.py).
_LARGEST = {"largest", "longest", "biggest", "greatest", "maximum", "max", "widest"}
_LARGEST_OF = {"side", "dimension", "extent", "size", "edge"}
_SKIP = {
    "a", "an", "the", "this", "that", "which", "its", "is", "are", "be", "being", "has", "have",
    "having", "with", "measuring", "measures", "sized", "size", "dimensions", "of", "to", "make",
    "create", "design", "model", "generate", "build", "draw", "print", "need", "want", "like",
    "would", "could", "can", "you", "please", "pls", "get", "just", "me", "should", "must",
    "also", "about", "approx", "approximately", "roughly", "exactly", "outer", "outside", "x",
    "×", "by", "cad", "s", "i", "d", "change", "set", "bump", "use", "adjust", "update",
    "increase", "reduce", "now", "them", "they", "there",
} | UNITS | _MARKERS  # fmt: skip
_PASSED = _SKIP | _THROUGH | {"for"}  # what the walk to a number's owner passes over
_LEAD = _SKIP | {"for", "one", "some", "my", "simple", "quick", "new", "another", "give"}
_PHRASE_END = {"with", "having", "that", "which", "to", "for", "in", "on", "at", "and", "from"}
_PHRASE_END |= {"measuring", "is", "it", "its", "s", "made", "whose", "where", "so", "pls"}
_PHRASE_END |= {"instead", "please", "now", "too", "then", "than", "as", "off", "up", "down"}
_PHRASE_END |= {"around", "along", "into", "onto", "over", "under", "underneath", "between"}
_PHRASE_END |= {"below", "above", "near", "beside", "behind", "against", "via", "like", "per"}

# What a request may name besides its thing and still describe a part whose extents are its
# sizes: what is cut into it, what it holds, where things are, how it is made.
_CUTS = {
    "hole", "holes", "bore", "bores", "slot", "slots", "groove", "grooves", "notch", "notches",
    "flute", "flutes", "scallop", "scallops", "pocket", "pockets", "recess", "chamfer",
    "chamfers", "chamfered", "fillet", "fillets", "filleted", "corner", "corners", "thread",
    "threaded", "tapped", "counterbore", "counterbored", "countersink", "countersunk", "cutout",
    "cutouts", "channel", "opening", "openings", "gap", "keyway", "vee", "flats", "id",
}  # fmt: skip
_GEARING = {"module", "mod", "m", "teeth", "tooth", "z", "pressure", "angle", "degree", "degrees"}
_LAYOUT = {  # numbers that lay features out: no part's size, but a pitch has a length
    "pitch", "pitched", "spacing", "spaced", "pcd", "circle", "centres", "centers", "apart",
    "radius", "radii", "r", "fillet", "fillets", "chamfer", "corner", "corners", "rounded",
    "grid", "rows", "columns",
}  # fmt: skip
_ABSTRACT = _GEARING | _LAYOUT
# Words that arrange features ("a row of holes"): the features belong to what the row is on.
_ARRANGEMENTS = {"row", "rows", "ring", "line", "pattern", "array", "series", "set", "circle"}
_ARRANGEMENTS |= {"grid", "cluster", "pair", "couple"}
# Words of a thing's shape or make between a size and its noun: "a 5 mm thick rectangular tab".
_SHAPED_AS = {"rectangular", "circular", "cylindrical", "hexagonal", "octagonal", "triangular"}
_SHAPED_AS |= {"oblong", "oval", "round", "solid", "plain", "wooden", "metal", "steel", "plastic"}
_ROUND = {"pulley", "sheave", "wheel", "washer", "flange", "disc", "disk", "knob", "cap", "ring"}
_ROUND |= {"gear", "spacer", "sleeve", "bushing", "cylinder", "tube", "pipe", "rod", "puck"}
_ROUND_STEMS = {w[:4] for w in _ROUND}
_NEUTRAL = {
    "bolt", "bolts", "screw", "screws", "clearance", "through", "thru", "blind", "shaft",
    "cable", "cables", "wire", "wires", "pcb", "v", "c",
    "side", "sides", "top", "bottom", "end", "ends", "edge", "edges", "middle",
    "centre", "center", "centred", "centered", "central", "rim", "face", "inside", "inner",
    "round", "flat", "plain", "simple", "small", "little", "solid", "hollow", "open", "closed",
    "evenly", "equally", "rounded", "mounting", "standard", "metric", "everywhere", "no",
    "without", "along", "around", "on", "in", "at", "for", "from", "up", "down", "into",
    "underneath", "below", "above", "cut", "add", "drill", "drilled", "put", "place", "leave",
    "keep", "pattern", "array", "row", "column", "pitch", "grip", "hexagon", "hexagonal",
    "cylindrical", "circular", "square", "oval", "equal", "even", "plus", "or", "and", "but",
    "both", "each", "every", "per", "all", "one", "two", "it", "its", "s", "i", "d",
    "diameter", "dia", "bore", "clear", "fit", "fits", "hold", "holds", "holding",
    "bent", "shaped", "clr", "centreline", "centerline", "bored", "turn", "quarter", "wrench",
    "needs", "fancy", "nothing", "push", "snaps", "desk", "belt", "electronics", "project",
    "ways", "deg", "picture", "pictured", "photo", "image", "drawing", "sketch", "shown",
    "screenshot", "render",
}  # fmt: skip
# A hollow thing's walls are its outside; anything else's may stand up from it.
_HOLLOW = {"box", "enclosure", "case", "housing", "cap", "cup", "sleeve", "clip", "tray", "bin"}
_HOLLOW |= {"container", "pot", "vase", "tube", "pipe", "bushing", "spacer", "bend", "elbow"}
_WALLS = {"wall", "walls", "shell", "tube", "pipe"}  # and what it is made of

WHOLE, EACH, DOUBT = "<whole>", "<each>", "<doubt>"  # owners that are no noun of the request


@dataclass
class Number:
    """One number of the request in its token stream, and what its words say it measures."""

    at: int  # token index
    value: float
    form: str  # stated.py's form: count, things, measure, number
    start: int  # first token of its phrase (a label before it)
    end: int  # token after its phrase (unit, axis word, the noun it measures)
    axis: str | None = None  # the axis word's meaning, when one labels it
    noun: str = ""  # the noun it measures instead ("bore" in "bore 35", "holes" in "12 M6 holes")
    whole: bool = False  # the words say it is the whole's ("overall", "7 mm thick spur gear")
    overall: bool = False  # its words say it is the whole's outer size, all that sticks out in
    outer: bool = False  # an outer diameter ("OD 50", "50 mm outside diameter"): no bore's
    chain: list[int] = field(default_factory=list)  # the numbers of "80 × 71 × 4" (token indices)


class Reading:
    """A request's tokens and numbers, and the owner of each number."""

    def __init__(self, text: str, edit: bool) -> None:
        text = re.sub(r"\s[-–]\s", " — ", text.replace("⌀", "ø"))  # "pipe flange - OD 60"
        text = _NUMBER_WORD_COMPOUND.sub(r"\1\2", text)  # "a six-sided pillar": no six things
        matches = list(_TOKEN.finditer(text))
        self.text = text
        self.spans = [m.span() for m in matches]
        self.words = [m.group().lower() for m in matches]
        self.edit = edit
        self.thing, self.named = (set(), set()) if edit else _thing(self.words)
        self.numbers: dict[int, Number] = {}
        self.phrase_of: dict[int, Number] = {}  # the words of each number's phrase, by token
        self.claimed: set[int] = set()  # words after a number that it took as its own
        self.gearing = bool({"teeth", "tooth", "gear", "module"} & set(self.words))
        # "w60 d95 t5.5" of a phone stand: d is a depth; "d=80 w=20" of a pulley: a diameter.
        self.single_d = "w" in self.words and not self.thing & _ROUND_STEMS
        positions = [i for i, w in enumerate(self.words) if _numeric(w)]
        stated = stated_numbers(text)
        if len(stated) != len(positions) or any(
            s.written.lower() != self.words[i] for s, i in zip(stated, positions, strict=True)
        ):
            return  # the two readings disagree: ask nothing
        for s, i in zip(stated, positions, strict=True):
            self.numbers[i] = self._read(i, s.value, s.form)
        self._chains()
        self.phrase_of = {
            k: self._first_of(n.at)
            for n in self.numbers.values()
            for k in range(n.start, n.end)
            if k not in self.numbers
        }

    # -- what each number measures ---------------------------------------------------------

    def _read(self, i: int, value: float, form: str) -> Number:
        """What the number at token i measures, from the words after it, then before it."""
        words = self.words
        number = Number(i, value, form, i, i + 1)
        if form in ("count", "things"):
            number.noun, number.end = counted(words, i + 1)  # "12 M6 holes": holes
            number.end = max(number.end, i + 1)
            return number
        if not words[i][:1].isdigit() and words[i] not in _WORDS:
            # An M-size is a bolt's hole, whatever follows; in a gear, "m1.5" is its module.
            number.noun = "module" if self.gearing else "hole"
        if word_at(words, i + 1) == "t" and value.is_integer():
            number.noun, number.end = "teeth", i + 2  # "32T"
            return number
        self._read_after(number)
        self._read_before(number)
        return number

    def _read_after(self, number: Number) -> None:
        """The words after a number: its unit, an axis word, the noun it measures."""
        words = self.words
        j = number.at + 1
        if word_at(words, j) in UNITS:
            j += 1
            number.end = j
        largest = _largest_after(words, j)
        if largest:  # "80 mm at its widest", "30 mm in size"
            number.axis, number.whole, number.overall = "largest", True, True
            number.end = j + largest
            self.claimed.update(range(number.at + 1, number.end))
            return
        axis = self._after_axis(j)
        if axis is not None:
            number.outer = word_at(words, j) in ("od", "outside", "outer")  # "60 mm OD"
            number.axis, j = axis
            number.end = j
            self.claimed.update(range(number.at + 1, j))  # "1 mm thickness 12 mm OD"
        if axis is None and word_at(words, j) in ("outside", "inside"):
            if words[j] == "inside":
                number.noun, number.end = "id", j + 1  # "8 mm inside": a bore
                return
            if word_at(words, j + 1) not in _AFTER and self.thing & _ROUND_STEMS:
                number.axis, number.outer, number.end = "diameter", True, j + 1  # "ring 20 outside"
                return
        head, k = _head(words, j)
        if head:
            number.end = k
            if self._is_thing(head):
                number.whole = True  # "7 mm thick spur gear", "a 60 mm flange"
                if head == "cube" and number.axis is None:
                    number.axis = "cube"  # "a 50 mm cube": its three extents
            else:
                number.noun = head  # "4.5 mm deep V groove", "65 mm centre bore"
        elif number.axis is not None and word_at(words, j) in _EACH | {"apart"}:
            number.noun = words[j]  # "20 high each", "30 wide apart"
        elif _marked(words, j):
            number.whole = number.overall = True  # "115 × 85 × 55 mm overall"

    def _read_before(self, number: Number) -> None:
        """The words before a number: an axis label ("height 40", "Ø25", "thk 3") or a noun
        ("bore 35", "Flat plate 80 × 71")."""
        words = self.words
        k = number.at - 1
        while word_at(words, k) in _JOINS:
            k -= 1
        if _marked(words, k, before=True):
            number.whole = number.overall = True  # "outer size 110x55x100", "footprint 80 by 75"
        if number.axis is None and not number.noun and _largest_before(words, k):
            number.axis, number.whole, number.overall = "largest", True, True
            number.start = k - 1  # "largest side 80 mm", "max dimension of 120"
            return
        label = None if k in self.claimed else self._before_axis(k)
        if label is not None:
            number.start = k
            outside = word_at(words, k) == "od" or word_at(words, k - 1) in ("outer", "outside")
            number.outer = number.outer or outside
            if number.axis is None and not number.noun:
                number.axis = label
            elif number.axis is not None and number.axis != label:
                number.axis, number.noun = None, number.noun or words[k]  # "hex 12 mm long"
            if _marked(words, k - 1, before=True):
                number.whole = number.overall = True  # "overall height 95"
        elif number.axis is None and not number.noun and word_at(words, k) in _ABSTRACT:
            number.noun, number.start = words[k], k  # "m1.5", "z=22", "R4"
        elif number.axis is None and not number.noun and _content(word_at(words, k)):
            if self._is_thing(words[k]):
                number.whole = True  # "Flat plate 80 × 71 × 4 mm"
            else:
                number.noun, number.start = words[k], k  # "bore 35", "wall 3"

    def _after_axis(self, j: int) -> tuple[str, int] | None:
        """The axis a word at j names (and where its words end), or None."""
        words = self.words
        led = words[j : j + 2] in (["in", "total"], ["in", "overall"])
        if led and word_at(words, j + 2) in _AFTER:
            j += 1  # "90 mm in total length"
        if j + 1 < len(words) and words[j] in _LEADS_AXIS and words[j + 1] in _AFTER:
            j += 1  # "40 mm in diameter", "80 outside diameter", "4 mm face width"
        if j >= len(words) or words[j] not in _AFTER:
            return None
        following = _past_joins(words, j + 1)
        if words[j] in _BEFORE and _numeric(word_at(words, following)):
            after = word_at(words, following + (2 if word_at(words, following + 1) in UNITS else 1))
            if after not in _AFTER and not _content(after):
                return None  # the next number's label: "ID 12.5 thk 3", "diameter of 15"
            # "80 diameter 25 thick", "12 mm OD 6 mm inner diameter": the next has its own words
        word, j = words[j], j + 1
        if word == "size" and words[j - 2] != "wrench":
            return None
        if word == "flat":  # "flat to flat"
            return ("across", j + 2) if words[j : j + 2] == ["to", "flat"] else None
        if word == "across" or word == "af":
            while j < len(words) and words[j] in _ALONG:
                j += 1
        if word == "hex" and j < len(words) and _content(words[j]):
            return None  # "6 hex standoffs"
        return _AFTER[word], j

    def _before_axis(self, k: int) -> str | None:
        """The axis a label at k names ("height 40", "Ø25", "d=95"), or None."""
        if k < 0:
            return None
        word = self.words[k]
        if word == "d" and self.single_d:
            return None
        if word == "flats" and not (k > 0 and self.words[k - 1] == "across"):
            return None
        return _BEFORE.get(word)

    def _chains(self) -> None:
        """Join "80 × 71 × 4 mm" (or "67 by 58") into one size of unlabelled numbers."""
        order = sorted(self.numbers)
        for first in order:
            number = self.numbers[first]
            if number.chain or number.form == "count":
                continue
            chain = [first]
            while True:
                last = self.numbers[chain[-1]]
                j = last.at + 1
                if j < len(self.words) and self.words[j] in UNITS:
                    j += 1
                joined = j < len(self.words) and self.words[j] in ("x", "×", "by")
                if joined and j + 1 in self.numbers:
                    chain.append(j + 1)
                    continue
                break
            if len(chain) < 2:
                continue
            members = [self.numbers[c] for c in chain]
            tail = members[-1]
            labelled = [m for m in members[:-1] if m.axis or m.noun]
            if labelled or tail.axis not in (None, "square"):
                if tail.noun:  # "Ø3 x 10 deep bore": all the bore's
                    for member in members:
                        member.noun = tail.noun
                continue  # "OD55 x 18 wide": each has its own axis
            number.chain = chain
            number.axis = "box" if not tail.noun else None
            number.noun = tail.noun
            number.whole = number.whole or tail.whole
            number.overall = number.overall or tail.overall
            number.end = tail.end
            for other in members[1:]:
                other.chain = [-1]  # a member: no item of its own

    def _is_thing(self, word: str) -> bool:
        return word == "it" or (bool(self.thing) and word[:4] in self.thing)

    # -- whose size it is ------------------------------------------------------------------

    def owner(self, number: Number, axis: str) -> str:
        """WHOLE, EACH, DOUBT or the noun that owns the number (see the module's rules)."""
        if number.whole:
            return WHOLE
        if number.noun and number.axis is not None:
            return number.noun  # "4.5 mm deep V groove"
        return self._walk(number.start - 1, axis)

    def _walk(self, i: int, axis: str) -> str:
        words = self.words
        while i >= 0:
            word = words[i]
            if word in _SENTENCE:
                return WHOLE
            if word in _CLAUSE:
                return self._clause_before(i, axis)
            if i in self.numbers:
                return self._inherit(self._first_of(i), axis)
            if i in self.phrase_of:  # "4.5 mm deep V groove 12 wide": the groove is 4.5's
                return self._inherit(self.phrase_of[i], axis)
            if word == ":" and self._names_thing(i):
                return WHOLE  # "I need a pulley for a round belt: 80 outside diameter"
            if word in _EACH:
                return EACH
            if self._is_thing(word):
                return WHOLE
            if word in _ARRANGEMENTS and word_at(words, i + 1) == "of":
                i -= 1  # "a row of five 6 mm holes": the holes are where the row is
                continue
            if word in _PASSED or word in _AFTER or word in _BEFORE:
                i -= 1
                continue
            if len(word) == 1:
                i -= 1
                continue
            return word
        return WHOLE

    def _held(self, number: Number) -> bool:
        """Whether the number measures what the part is for ("for a 16 mm cable")."""
        before = self.words[max(0, number.start - 2) : number.start]
        return "for" in before

    def _names_thing(self, colon: int) -> bool:
        """Whether the sentence before a colon names the request's thing."""
        i = colon - 1
        while i >= 0 and self.words[i] not in _SENTENCE:
            if self._is_thing(self.words[i]) and i not in self.phrase_of:
                return True
            i -= 1
        return False

    def _first_of(self, i: int) -> Number:
        """The number at token i, or the chain it is a member of."""
        for number in self.numbers.values():
            if i in number.chain and number.chain[0] == number.at:
                return number
        return self.numbers[i]

    def _clause_before(self, boundary: int, axis: str) -> str:
        """The owner a list item inherits from the clause before `boundary`."""
        i = boundary - 1
        start = i
        while start >= 0 and self.words[start] not in _CLAUSE | _SENTENCE:
            start -= 1
        inside = [n for n in range(start + 1, boundary) if n in self.numbers]
        if inside:  # the list goes on from the last size before it
            return self._inherit(self._first_of(inside[-1]), axis)
        named = self._names_thing_in(start + 1, boundary, axis)
        return named if named is not None else self._walk(i, axis)

    def _names_thing_in(self, start: int, end: int, axis: str) -> str | None:
        """The owner a list inherits from a clause without sizes that names the thing ("a base
        for a tablet stand, 150 mm wide"): the whole, unless the thing is "with" something the
        size may belong to ("a plate with a slot, 40 mm long"); None when it names no thing."""
        words = self.words[start:end]
        at = next((k for k, w in enumerate(words) if self._is_thing(w)), None)
        if at is None:
            return None
        after = words[at + 1 :]
        if "with" not in after and "having" not in after:
            return WHOLE  # nothing after it, or what it is for: "for a plant pot"
        nouns = [w for w in after if _content(w)]
        cut = bool(nouns) and nouns[-1] in _CUTS | _ABSTRACT
        return WHOLE if cut and axis in ("thickness", "height", "across") else DOUBT

    def _inherit(self, number: Number, axis: str) -> str:
        """The owner that a size after `number` (in its list) inherits."""
        owner = self.owner(number, axis)
        if owner != WHOLE:
            return owner if owner in (EACH, DOUBT) else DOUBT
        if (number.axis is not None and not number.noun) or number.whole:
            return WHOLE
        noun = number.noun
        no_cut_has_it = axis in ("thickness", "height", "across", "od")  # a hole has no flats
        if noun and self._held(number):
            return WHOLE  # "a nut for a 5.5 mm bolt, 27 mm wrench size": the bolt is not the part
        if noun in _GEARING or (noun in _LAYOUT | _CUTS and axis in ("thickness", "height")):
            return WHOLE  # "module 1, 4 wide"; "on 94 PCD, 15 thick"; "bore 35, 20 thick"
        if noun in _CUTS and no_cut_has_it:
            return WHOLE  # "a through hole for M3, 6 hex", "44mm ID and 50 mm OD"
        return DOUBT  # "a 5 mm hole, 5 mm deep": the hole's, maybe

    # -- what the request names ---------------------------------------------------------

    def phrase(self, start: int, end: int) -> str:
        """The request's words from token `start` to token `end` (exclusive)."""
        return self.text[self.spans[start][0] : self.spans[max(start, end - 1)][1]].strip()

    def simple(self) -> bool:
        """Whether the request names nothing but its thing and what is cut into it."""
        hollow = bool(self.thing & {w[:4] for w in _HOLLOW})
        return all(
            w in _KNOWN or w[:4] in self.named or not w.isalpha() or len(w) == 1
            or (hollow and w in _WALLS)
            for w in self.words
        )  # fmt: skip


@functools.lru_cache(maxsize=256)  # binding asks it once per candidate of one request
def owned_by_the_whole(text: str) -> tuple[bool, ...]:
    """For each number stated.stated_numbers finds in a new request, in order: whether its
    words make it a size of the whole part (an axis word labels it and its owner is the
    whole); all False when the two readings disagree."""
    reading = Reading(text, edit=False)
    count = len(stated_numbers(text))
    if len(reading.numbers) != count:
        return (False,) * count
    return tuple(
        number.axis is not None and reading.owner(number, number.axis) == WHOLE
        for _, number in sorted(reading.numbers.items())
    )


def sized_after(words: list[str], j: int) -> bool:
    """Whether the words at j give the counted things a size ("4 holes dia 6", "3 holes 4mm",
    "10 holes of 6.5mm diameter"), so that the digits before them count them."""
    for word in words[j : j + 3]:
        if word[:1].isdigit() or word[:1] == "ø":
            return True
        if word not in ("of", "dia", "diameter", "each", "ø", "with", "a"):
            return False
    return False


def counted(words: list[str], j: int) -> tuple[str, int]:
    """The plural noun a count counts, within the next four words ("six M5 bolt holes")."""
    for k in range(j, min(j + 5, len(words))):
        word = words[k]
        if word in _CLAUSE | _SENTENCE | _THROUGH:
            break
        if word.isalpha() and len(word) > 3 and word.endswith("s") and word not in _SKIP:
            return word, k + 1
    return "", j


def _marked(words: list[str], k: int, before: bool = False) -> bool:
    """Whether the words at k mark a size as the whole's: "overall", "on the outside", "in
    total" after it; "overall", "outer size", "footprint" before it."""
    if k < 0 or k >= len(words):
        return False
    if before:
        outer = k > 0 and words[k - 1] in ("outer", "outside", "overall", "external")
        return words[k] in _MARKERS or (words[k] in ("size", "dimensions") and outer)
    after = words[k : k + 3]
    outside = after[:1] == ["outside"] and word_at(words, k + 1) not in _AFTER  # not "outside Ø"
    return (
        outside  # "140 x 140 x 95 mm outside"
        or after[:1] in (["overall"], ["total"])
        or after == ["on", "the", "outside"]
        or after[:2] == ["in", "total"]
    )


def _largest_after(words: list[str], j: int) -> int:
    """How many words at j say the size before them is the largest extent ("at its widest",
    "at the longest", "in size"); 0 when they do not."""
    if words[j : j + 2] == ["in", "size"]:
        return 2
    if word_at(words, j) == "at" and word_at(words, j + 1) in ("its", "the"):
        return 3 if word_at(words, j + 2) in _LARGEST - {"max", "maximum"} else 0
    return 0


def _largest_before(words: list[str], k: int) -> bool:
    """Whether the words ending at k call the size after them the largest extent ("largest
    side", "max dimension", "longest edge")."""
    return word_at(words, k) in _LARGEST_OF and word_at(words, k - 1) in _LARGEST


def _numeric(word: str) -> bool:
    return word[:1].isdigit() or (word[:1] == "m" and word[1:2].isdigit()) or word in _WORDS


_WORDS = set(NUMBER_WORDS)
_KNOWN = _CUTS | _ABSTRACT | _NEUTRAL | _SKIP | _LEAD | set(_AFTER) | set(_BEFORE) | _WORDS
_KNOWN |= _PHRASE_END | _JOINS | _EACH | _CLAUSE | _MARKERS | _LARGEST | _LARGEST_OF


def _content(word: str) -> bool:
    """A word that may name something (not a function word, unit, label or mark)."""
    if not word.isalpha() or len(word) == 1:
        return False
    return word not in _SKIP | _LEAD | _CLAUSE | _EACH | _JOINS | _PHRASE_END | _WORDS


def _head(words: list[str], j: int) -> tuple[str, int]:
    """The noun a phrase starting at j ends in ("centre bore", "V groove"), and where it ends;
    ("", j) when no noun starts there."""
    head, k = "", j
    while k < len(words) and k < j + 4:
        word = words[k]
        if not word.isalpha() or word in _PHRASE_END or word in _CLAUSE or word in _EACH:
            break
        if _labels_next(words, k):
            break  # the next number's label: "12 mm wide OD 90", "h12 wall 1"
        if word in UNITS or word in ("overall", "outside", "everywhere", "total"):
            break
        if word in _AFTER or word in _BEFORE:
            break  # "10 mm inner diameter bend": an ID, not a 10 mm bend
        if len(word) > 1 and word not in _SKIP | _SHAPED_AS:
            head = word  # "5 mm thick rectangular tab": the tab's, not a "rectangular"'s
        k += 1
        if word in _ABSTRACT:
            break  # "20 degree pressure angle": the number is the degrees
    return head, (k if head else j)


def _labels_next(words: list[str], k: int) -> bool:
    """Whether the word at k labels the number after it: an axis word ("OD 90"), or a noun
    whose number has no noun of its own ("h12 wall 1", "13 high bore 8.5 mm 16 mm"), unlike
    "5.5 mm deep V groove 9 mm bore"."""
    n = k + 2 if word_at(words, k + 1) == "ø" else _past_joins(words, k + 1)
    if not word_at(words, n)[:1].isdigit():
        return False
    if words[k] in _BEFORE:
        return True
    after = n + 2 if word_at(words, n + 1) in UNITS else n + 1
    # "V groove 26 mm wide": the groove is both's; "OD 24 ID 12.5 thk 2.5": ID is 12.5's.
    return not _content(word_at(words, after)) or _labels_next(words, after)


def _past_joins(words: list[str], k: int) -> int:
    while word_at(words, k) in _JOINS:
        k += 1
    return k


def word_at(words: list[str], k: int) -> str:
    """The word at k, or "" outside the words."""
    return words[k] if 0 <= k < len(words) else ""


def _thing(words: list[str]) -> tuple[set[str], set[str]]:
    """The stems of the nouns that name what the request asks for, and of all the words that
    name it: the head of the phrase after "it's a" when it has one ("... It's a cable clip."),
    else of its first noun phrase ("a grip knob", "one leaf of a butt hinge": leaf and hinge)."""
    start = 0
    for k in range(len(words) - 2):
        if words[k : k + 2] in (["it", "s"], ["it", "is"], ["this", "is"]):
            start = k + 2
            break
    heads, named = _phrase_heads(words, start)
    if any(h in _CUTS for h in heads):
        return set(), set()  # "a 5 mm hole, 5 mm deep, in a block": a part is no hole
    return {h[:4] for h in heads}, {w[:4] for w in named}


def _phrase_heads(words: list[str], i: int) -> tuple[list[str], list[str]]:
    """The heads of the noun phrase at i, after the words that lead into it and a size before
    it ("a 95 mm hinge leaf", "141x74x10 mounting plate", "a 6 cm tall vase")."""
    while i < len(words) and words[i] in _LEAD:
        i += 1
    while i < len(words) and (_numeric(words[i]) or words[i] in UNITS | {"x", "×", "by"}):
        i += 1
        if i < len(words) and words[i] in _AFTER:
            i += 1
    heads: list[str] = []
    named: list[str] = []
    last = ""
    while i < len(words):
        word = words[i]
        if word == "of" and last:
            heads.append(last)
            last = ""
            i += 1
            while i < len(words) and words[i] in _LEAD:
                i += 1
            continue
        if word == "/" and last and word_at(words, i + 1).isalpha():
            heads.append(last)  # "lid/cap"
            i += 1
            continue
        if not word.isalpha() or word in _PHRASE_END or word in _CLAUSE or word in _MARKERS:
            break
        if word.endswith("ed") and last and word_at(words, i + 1) in _PHRASE_END:
            break  # "a hollow cylinder closed at the top"
        labels = word in _BEFORE or word in _AFTER
        if labels and i + 1 < len(words) and (_numeric(words[i + 1]) or words[i + 1] == "ø"):
            break  # "cap d16", "washer OD 9", "flange outer diameter 160"
        if len(word) > 1 and word not in _SKIP:
            last = word
            named.append(word)
        i += 1
    if last:
        heads.append(last)
    return heads, named
