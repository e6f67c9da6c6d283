"""Names a model has never seen, for requests that must be read by their parts.

A grammar-drawn request names its thing ("a garden bench", "a curved tube") and then says its
parts. A model that learns the name as a template copies the template, and a request naming a
thing it was never taught ("a lectern: a 40 x 30 top at 110, four 4 mm legs, ...") then gets
whatever template its nearest name had. With `novel_names` > 0 (corpus build
`--novel-names SHARE`) that share of grammar-drawn requests calls the thing by a made-up word or
a plain noun instead ("a brindel", "a part"), so the only way to the right program is the parts
the words list. The row's parameters keep the drawn name, so its split and its id do not change.

The made-up words are pronounceable syllables, never a held-out name: they stand for the
names a user may use that no family, grammar or test split ever had.
"""

from __future__ import annotations

import random

# Plain nouns that say nothing of the shape.
PLAIN_NOUNS = (
    "part", "piece", "object", "thing", "item", "model", "design", "build", "unit", "gadget",
    "widget", "fixture", "prop", "component",
)  # fmt: skip
ONSETS = ("b", "br", "d", "dr", "f", "fl", "g", "gr", "k", "kl", "l", "m", "n", "p", "pl",
          "r", "s", "sk", "st", "t", "tr", "v", "w", "z")  # fmt: skip
VOWELS = ("a", "e", "i", "o", "u", "ai", "ee", "oo")
CODAS = ("", "", "", "n", "l", "r", "m", "t", "k", "x", "nd", "st")
# Words a made-up name must never be (the held-out families' and grammar's held-out nouns).
NEVER = frozenset(
    {"chair", "stand", "phone", "pipe", "elbow", "bend", "bushing", "puck", "cradle", "bin",
     "tube", "rod", "plate", "bench", "stool", "table", "seat"}
)  # fmt: skip


def made_up_word(rng: random.Random) -> str:
    """A pronounceable word of two or three syllables that is not a real part's name."""
    while True:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables))
        word += rng.choice(CODAS)
        if not word.startswith(tuple(NEVER)):
            return word


def novel_name(rng: random.Random) -> str:
    """A name for a thing that tells the model nothing: a made-up word or a plain noun."""
    if rng.random() < 0.6:
        return made_up_word(rng)
    return rng.choice(PLAIN_NOUNS)
