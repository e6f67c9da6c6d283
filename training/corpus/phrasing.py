"""Ways people write requests: units, number words, abbreviations, word order, terse or chatty.

Every family builds its prompt from these helpers so that the corpus reads like people write and
a model meets many phrasings of the same request. All choices come from the caller's seeded
`random.Random`, so a corpus is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

NUMBER_WORDS = {
    1: "one",
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
    10: "ten",
    11: "eleven",
    12: "twelve",
}


def pick(rng: random.Random, options: Sequence[str]) -> str:
    """One of the options."""
    return options[rng.randrange(len(options))]


# Whether the row being drawn may use the wider vocabulary (corpus build `--more-words`). Off,
# `pick_more` draws exactly as `pick` does, so corpora built without it stay what they were.
_MORE_WORDS: ContextVar[bool] = ContextVar("more_words", default=False)
# Whether the row being drawn leaves a conventional default unsaid where its part has one (corpus
# build `--unsaid-defaults`): a bend through a right angle said by its radius alone, a backrest
# as thick as the legs. Off, nothing is drawn differently.
_DEFAULTS_UNSAID: ContextVar[bool] = ContextVar("defaults_unsaid", default=False)


@contextmanager
def _switched(var: ContextVar[bool], on: bool) -> Iterator[None]:
    token = var.set(on)
    try:
        yield
    finally:
        var.reset(token)


def more_words(on: bool = True) -> AbstractContextManager[None]:
    """Within the block, `pick_more` may also choose its extra phrasings."""
    return _switched(_MORE_WORDS, on)


def wider() -> bool:
    """Whether the row being drawn uses the wider vocabulary."""
    return _MORE_WORDS.get()


def defaults_unsaid(on: bool = True) -> AbstractContextManager[None]:
    """Within the block, parts with a conventional default draw it and leave it unsaid."""
    return _switched(_DEFAULTS_UNSAID, on)


def leaves_defaults_unsaid() -> bool:
    """Whether the row being drawn leaves its conventional defaults unsaid."""
    return _DEFAULTS_UNSAID.get()


def pick_more(
    rng: random.Random, options: Sequence[str], extra: Callable[[], Sequence[str]]
) -> str:
    """One of the options, or of the `extra()` ones too when the wider vocabulary is on (extra
    is called only then, so that off, the draw uses the same randomness as `pick`)."""
    return pick(rng, [*options, *extra()] if _MORE_WORDS.get() else options)


def number(value: float) -> str:
    """A number as people write it: 60, 2.5 (never 60.0)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def length(rng: random.Random, mm: float, unitless_ok: bool = True) -> str:
    """A length in one of many spellings: '60 mm', '60mm', '60 millimetres', '6 cm', '60'."""
    options = [
        f"{number(mm)} mm",
        f"{number(mm)}mm",
        f"{number(mm)} millimetres",
        f"{number(mm)} millimeters",
        f"{number(mm)} mm",
    ]
    if unitless_ok:
        options.append(number(mm))
    if mm >= 10 and float(mm / 10).is_integer():
        options.append(f"{number(mm / 10)} cm")
    return pick(rng, options)


def count(rng: random.Random, n: int) -> str:
    """A small count as a digit or a word."""
    if n in NUMBER_WORDS and rng.random() < 0.4:
        return NUMBER_WORDS[n]
    return str(n)


def metric_size(diameter: float) -> str | None:
    """'M5' for a 5 mm bolt (or a 5.5 mm clearance hole), None if it is no standard size."""
    for size in (2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20):
        if abs(diameter - size) < 1e-6 or abs(diameter - (size + 0.5)) < 1e-6:
            return f"M{number(size)}"
    return None


def dims(rng: random.Random, phrases: list[str], shuffle: bool = True) -> str:
    """Dimension phrases joined as a person lists them, in a random order."""
    items = list(phrases)
    if shuffle:
        rng.shuffle(items)
    if len(items) == 1:
        return items[0]
    joiner = pick(rng, [", ", ", ", "; ", " "])
    last = pick(rng, [" and ", ", ", " & ", ", and "])
    if joiner == " ":
        return " ".join(items)
    return joiner.join(items[:-1]) + last + items[-1]


def article(noun: str) -> str:
    """'a' or 'an' for a noun phrase."""
    return "an" if noun[:1].lower() in "aeiou" else "a"


def request(rng: random.Random, thing: str, details: str) -> str:
    """A whole request in a terse, plain or chatty style: thing is 'a flange', details the dims."""
    bare = thing.removeprefix("a ").removeprefix("an ")
    templates = [
        "{thing}, {details}",
        "{thing} {details}",
        "{Thing} with {details}",
        "{bare}: {details}",
        "{bare} {details}",
        "make {thing}, {details}",
        "Make {thing} with {details}.",
        "Create {thing}: {details}.",
        "I need {thing} with {details}.",
        "Could you model {thing}? {Details}.",
        "Please design {thing} — {details}.",
        "Model {thing}. {Details}.",
        "need {thing}, {details} pls",
        "Can I get {thing} with {details}?",
        "Generate {thing} ({details})",
        "{Details}. It's {thing}.",
        "Design {thing} having {details}",
        "cad for {thing}: {details}",
    ]
    template = pick(rng, templates)
    text = template.format(
        thing=thing,
        Thing=thing[:1].upper() + thing[1:],
        bare=bare,
        details=details,
        Details=details[:1].upper() + details[1:],
    )
    if rng.random() < 0.1:
        text = text.lower()
    return text
