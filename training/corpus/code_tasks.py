"""Code task families: a short Python function to write, with a reference and hidden tests.

Each family draws what the function does (a shift, a window, a separator, a modulus, a mode)
and how it is named (function and argument names), writes a short idiomatic reference, and
words the request many ways: terse, plain, chatty, docstring-like, with or without an example.
The prompt always names the function and its parameters.

The hidden tests are a `check(candidate)` function with one assertion per case. The inputs come
from a generator seeded by the task's parameters, so a task (one id) always has the same tests;
the expected values come from running the reference on the host (trusted code). Every test set
is checked here to defeat the trivial programs of the task audit (a constant, an echo).
"""

from __future__ import annotations

import copy
import json
import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from training.corpus.base import Family, Sample, params_key
from training.corpus.phrasing import count, pick

Case = tuple[Any, ...]

WORDS = (
    "apple", "river", "stone", "cloud", "quick", "brown", "fox", "jumps", "lazy", "dog", "hello",
    "world", "python", "code", "green", "light", "night", "sky", "bright", "tree", "ocean",
    "zebra", "jazz", "mix", "echo", "yellow", "rhythm", "crypt", "gym", "paper", "table", "bird",
)  # fmt: skip

# Values a trivial program returns (genservice.task_audit.trivial_programs); each must fail.
TRIVIAL_RESULTS: tuple[Any, ...] = (None, 0, "", [], True, {})


@dataclass
class Spec:
    """What a family drew: the function, its arguments, the wording, reference and cases."""

    function: str
    args: list[tuple[str, str]]  # (name, how to describe it: "a list", "an int")
    what: str  # noun phrase after "returns": "the words of `text` in reverse order"
    rules: list[str]  # whole sentences that pin the behaviour down
    reference: str
    params: dict[str, Any]
    cases: Callable[[random.Random], list[Case]]


@dataclass
class CodeFamily:
    """A code task family: draws a Spec, then writes the prompt, reference and hidden tests."""

    name: str
    draw: Callable[[random.Random], Spec]
    held_out: bool = False
    domain: str = "code"

    def sample(self, rng: random.Random) -> Sample:
        """Draw a task: parameters, prompt, reference, hidden tests and entry point."""
        spec = self.draw(rng)
        params = {"function": spec.function, "args": [a for a, _ in spec.args], **spec.params}
        function = load_function(spec.reference, spec.function)
        cases = spec.cases(random.Random(params_key(self.name, params)))
        expected = [function(*copy.deepcopy(case)) for case in cases]
        _check_strength(self.name, cases, expected)
        example = _example(rng, spec, function)
        return Sample(
            prompt=_compose(rng, spec, example),
            reference=spec.reference,
            params=params,
            tests=write_tests(cases, expected),
            entry_point=spec.function,
        )


def load_function(source: str, name: str) -> Callable[..., Any]:
    """The function `name` defined by a (trusted) reference program."""
    namespace: dict[str, Any] = {"__name__": "reference"}
    exec(compile(source, f"<reference {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def write_tests(cases: list[Case], expected: list[Any]) -> str:
    """A `check(candidate)` function with one assertion per case."""
    lines = ["def check(candidate):"]
    for case, value in zip(cases, expected, strict=True):
        call = f"candidate({', '.join(repr(arg) for arg in case)})"
        if isinstance(value, bool):
            lines.append(f"    assert {call} is {value!r}")
        else:
            lines.append(f"    assert {call} == {value!r}")
    return "\n".join(lines) + "\n"


def _same(result: Any, expected: Any) -> bool:
    """Whether an assertion of write_tests would pass for `result`."""
    if isinstance(expected, bool):
        return result is expected
    return bool(result == expected)


def _check_strength(family: str, cases: list[Case], expected: list[Any]) -> None:
    """Every trivial result and the echo of the first argument must fail at least one case."""
    if len(cases) < 5:
        raise AssertionError(f"{family}: only {len(cases)} test cases")
    for trivial in TRIVIAL_RESULTS:
        if all(_same(trivial, value) for value in expected):
            raise AssertionError(f"{family}: returning {trivial!r} passes every test")
    if all(_same(case[0], value) for case, value in zip(cases, expected, strict=True) if case):
        raise AssertionError(f"{family}: echoing the input passes every test")


def _example(rng: random.Random, spec: Spec, function: Callable[..., Any]) -> str | None:
    """'f(x)' and its result for the prompt (from a fresh draw of cases), or None."""
    if rng.random() < 0.45:
        return None
    cases = spec.cases(random.Random(rng.getrandbits(32)))
    rng.shuffle(cases)
    for case in cases:
        result = function(*copy.deepcopy(case))
        call = f"{spec.function}({', '.join(repr(arg) for arg in case)})"
        if result in ((), [], {}, "", 0, None, case[0]) or len(call) + len(repr(result)) > 70:
            continue
        return pick(
            rng,
            [
                f"For example, `{call}` returns `{result!r}`.",
                f"Example: {call} -> {result!r}",
                f"e.g. {call} == {result!r}",
                f"\n\n>>> {call}\n{result!r}",
                f"So `{call}` should give `{result!r}`.",
            ],
        )
    return None


def _join(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


PROMPTS = (
    "Write a Python function `{sig}` that returns {what}. {rules}",
    "Implement `{sig}` in Python: it returns {what}. {rules}",
    "Write `{sig}`, returning {what}. {rules}",
    "I need a Python function called `{name}` that takes {argp} and returns {what}. {rules}",
    "Could you write a function `{sig}`? It should return {what}. {rules} Thanks!",
    "python function {sig} -> {what}. {rules}",
    "def {sig}: return {what}. {rules}",
    "Please implement {sig} so that it returns {what}. {rules}",
    "Task: write `{sig}`.\nReturn {what}. {rules}",
    "Define `{name}`, a function of {argp}, that gives back {what}. {rules}",
    "Hi! Can you code up `{sig}` for me? I want it to return {what}. {rules}",
    "{sig}: return {what}. {rules}",
    "Need a helper `{sig}` returning {what}. {rules}",
    "Create a Python function named {name} with {parameters} {argnames}. It must return {what}. "
    "{rules}",
    "Write {name}({argnames}) in Python. Given {argp}, it computes {what}. {rules}",
)


def _compose(rng: random.Random, spec: Spec, example: str | None) -> str:
    """The request, in one of many styles; it always names the function and its parameters."""
    names = [a for a, _ in spec.args]
    sig = f"{spec.function}({', '.join(names)})"
    text = pick(rng, PROMPTS).format(
        sig=sig,
        name=spec.function,
        argp=_join([f"{desc} `{a}`" for a, desc in spec.args]),
        argnames=", ".join(names),
        parameters="parameter" if len(names) == 1 else "parameters",
        what=spec.what,
        rules=" ".join(spec.rules),
    )
    text = " ".join(part for part in text.split(" ") if part).replace(" \n", "\n")
    if example:
        text = text.rstrip() + ("" if example.startswith("\n") else " ") + example
    return text.strip()


def _ref(source: str) -> str:
    return textwrap.dedent(source).strip() + "\n"


def _q(value: str) -> str:
    """A string literal in double quotes, as the references write them."""
    return json.dumps(value)


def _sentence(rng: random.Random, n: int, pool: tuple[str, ...] = WORDS) -> str:
    words = [rng.choice(pool) for _ in range(n)]
    words = [w.capitalize() if rng.random() < 0.3 else w for w in words]
    text = " ".join(words)
    return text + rng.choice(["", ".", "!", "?", ", ok", " 42", " 7."])


# --- strings -------------------------------------------------------------------------------


def _caesar(rng: random.Random) -> Spec:
    decode = rng.random() < 0.35
    shift = rng.randint(1, 25)
    if decode:
        name = pick(rng, ["caesar_decode", "decrypt", "unshift_letters", "decode_caesar"])
        arg = pick(rng, ["text", "s", "message", "cipher"])
    else:
        name = pick(rng, ["caesar", "caesar_shift", "shift_letters", "rotate_letters", "encrypt"])
        arg = pick(rng, ["text", "s", "message", "plain"])
    k = count(rng, shift)
    if decode:
        what = pick(
            rng,
            [
                f"`{arg}` decoded from a Caesar cipher with a shift of {k}",
                f"`{arg}` with every letter moved {k} places back in the alphabet",
                f"the plain text of `{arg}`, which was Caesar-encrypted with shift {shift}",
            ],
        )
    else:
        what = pick(
            rng,
            [
                f"`{arg}` encrypted with a Caesar cipher of shift {k}",
                f"`{arg}` with every letter moved {k} places forward in the alphabet",
                f"the Caesar shift of `{arg}` by {shift}",
            ],
        )
    first, last = ("a", "z") if not decode else ("z", "a")
    wrapped = chr((ord(last) - 97 + (-shift if decode else shift)) % 26 + 97)
    rules = [
        pick(
            rng,
            [
                f"Letters wrap around the alphabet ({last!r} becomes {wrapped!r}).",
                f"Wrap around past {last!r} back to {first!r}.",
                "The alphabet wraps around.",
            ],
        ),
        pick(
            rng,
            [
                "Keep each letter's case and leave digits, spaces and punctuation unchanged.",
                "Upper-case stays upper-case; anything that is not a letter a-z/A-Z is kept as is.",
                "Preserve case; non-letters pass through untouched.",
            ],
        ),
    ]
    sign = "-" if decode else "+"
    reference = _ref(f"""
        SHIFT = {shift}


        def {name}({arg}):
            out = []
            for ch in {arg}:
                if ch.isascii() and ch.isalpha():
                    base = ord("a") if ch.islower() else ord("A")
                    out.append(chr((ord(ch) - base {sign} SHIFT) % 26 + base))
                else:
                    out.append(ch)
            return "".join(out)
        """)

    def cases(c: random.Random) -> list[Case]:
        return [
            ("",),
            ("abc",),
            ("xyz",),
            ("Hello, World!",),
            ("ABC xyz 123",),
            (_sentence(c, 5),),
            (_sentence(c, 3).upper(),),
        ]

    return Spec(
        name, [(arg, "a string")], what, rules, reference,
        {"shift": shift, "direction": "decode" if decode else "encode"}, cases,
    )  # fmt: skip


def _char_count(rng: random.Random) -> Spec:
    kind = pick(rng, ["vowels", "consonants", "digits", "uppercase", "letter", "letter"])
    letter = rng.choice("abcdefghijklmnoprstuvwy") if kind == "letter" else ""
    ignore_case = kind == "letter" and rng.random() < 0.5
    arg = pick(rng, ["text", "s", "word", "sentence", "string", "phrase"])
    names = {
        "vowels": ["count_vowels", "vowel_count", "num_vowels"],
        "consonants": ["count_consonants", "consonant_count"],
        "digits": ["count_digits", "digit_count", "num_digits"],
        "uppercase": ["count_upper", "count_capitals", "uppercase_count"],
        "letter": [f"count_{letter}", "count_letter", f"occurrences_of_{letter}", "count_char"],
    }
    name = pick(rng, names[kind])
    what, rules, expr = {
        "vowels": (
            f"the number of vowels in `{arg}`",
            ["Vowels are a, e, i, o and u, in either case; y is not a vowel."],
            f'sum(1 for ch in {arg}.lower() if ch in "aeiou")',
        ),
        "consonants": (
            f"how many consonants `{arg}` contains",
            [
                "A consonant is any letter a-z (either case) other than a, e, i, o, u; "
                "digits, spaces and punctuation do not count."
            ],
            f'sum(1 for ch in {arg}.lower() if "a" <= ch <= "z" and ch not in "aeiou")',
        ),
        "digits": (
            f"the number of digit characters 0-9 in `{arg}`",
            ["Count each digit character separately."],
            f'sum(1 for ch in {arg} if ch in "0123456789")',
        ),
        "uppercase": (
            f"the count of upper-case letters A-Z in `{arg}`",
            ["Only the letters A to Z count."],
            f'sum(1 for ch in {arg} if "A" <= ch <= "Z")',
        ),
        "letter": (
            f"how many times the letter {letter!r} occurs in `{arg}`",
            [
                f"Count {letter!r} and {letter.upper()!r} alike."
                if ignore_case
                else f"The count is case-sensitive: {letter.upper()!r} does not count."
            ],
            f"{arg}.lower().count({_q(letter)})" if ignore_case else f"{arg}.count({_q(letter)})",
        ),
    }[kind]
    reference = _ref(f"""
        def {name}({arg}):
            return {expr}
        """)

    def cases(c: random.Random) -> list[Case]:
        fixed = {
            "vowels": ["rhythm", "AEIOU aeiou", "Hello World"],
            "consonants": ["aeiou", "Hello, World!", "rhythm 42"],
            "digits": ["no digits here", "a1b22c333", "2024-06-01"],
            "uppercase": ["lower only", "Hello World", "ABC def GHI"],
            "letter": [
                " ".join(w for w in WORDS[:12] if letter not in w),
                f"{letter * 3} {letter.upper() * 2}",
                f"x{letter}y{letter.upper()}z{letter}",
            ],
        }[kind]
        mixed = _sentence(c, 6) + f" {c.randint(0, 999)} {letter}{letter.upper()}"
        return [("",), *((t,) for t in fixed), (mixed,), (_sentence(c, 4).upper(),)]

    params = {"kind": kind, "letter": letter, "ignore_case": ignore_case}
    return Spec(name, [(arg, "a string")], what, rules, reference, params, cases)


def _word_ops(rng: random.Random) -> Spec:
    mode = pick(rng, ["reverse_order", "reverse_each", "capitalize", "acronym", "longest"])
    sep = pick(rng, [" ", " ", "-", "_", "/"]) if mode != "acronym" else pick(rng, ["", "."])
    if mode == "longest":
        sep = ""
    arg = pick(rng, ["text", "s", "sentence", "line", "phrase"])
    sep_words = {" ": "single spaces", "-": "'-'", "_": "underscores", "/": "'/'", ".": "'.'"}
    joined = f"joined by {sep_words[sep]}" if sep else ""
    name, what, expr = {
        "reverse_order": (
            pick(rng, ["reverse_words", "flip_words", "words_backwards", "reversed_words"]),
            f"the words of `{arg}` in reverse order, {joined}",
            f"{_q(sep)}.join(reversed({arg}.split()))",
        ),
        "reverse_each": (
            pick(rng, ["reverse_each_word", "mirror_words", "reverse_letters"]),
            f"`{arg}` with the letters of each word reversed, words kept in order and {joined}",
            f"{_q(sep)}.join(word[::-1] for word in {arg}.split())",
        ),
        "capitalize": (
            pick(rng, ["capitalize_words", "title_words", "capitalise", "title_case"]),
            f"the words of `{arg}` with the first letter upper-case and the rest lower-case, "
            f"{joined}",
            f"{_q(sep)}.join(word.capitalize() for word in {arg}.split())",
        ),
        "acronym": (
            pick(rng, ["acronym", "initials", "abbreviate", "first_letters"]),
            f"the first letter of every word of `{arg}`, upper-cased and "
            + (f"joined by {sep_words[sep]}" if sep else "run together"),
            f"{_q(sep)}.join(word[0].upper() for word in {arg}.split())",
        ),
        "longest": (
            pick(rng, ["longest_word", "find_longest", "longest", "max_word"]),
            f"the longest word in `{arg}`",
            f'max({arg}.split(), key=len, default="")',
        ),
    }[mode]
    rules = [
        pick(
            rng,
            [
                "Words are separated by any run of whitespace.",
                "Split on whitespace (several spaces or tabs count as one separator).",
            ],
        )
    ]
    if mode == "longest":
        rules.append("On a tie return the first one; with no words return ''.")
    else:
        rules.append("A string with no words gives ''.")
    reference = _ref(f"""
        def {name}({arg}):
            return {expr}
        """)

    def cases(c: random.Random) -> list[Case]:
        return [
            ("",),
            ("hello",),
            ("the quick brown fox",),
            ("  many   spaces\there  ",),
            ("ab cd ef",),
            (_sentence(c, 5),),
            (_sentence(c, 3).lower(),),
        ]

    params = {"mode": mode, "sep": sep}
    return Spec(name, [(arg, "a string")], what, rules, reference, params, cases)


# --- lists ---------------------------------------------------------------------------------


def _chunk(rng: random.Random) -> Spec:
    tail = pick(rng, ["keep", "keep", "drop", "pad"])
    fixed = rng.randint(2, 5) if rng.random() < 0.35 else None
    fill = pick(rng, ["None", "0", "-1", '""']) if tail == "pad" else None
    items = pick(rng, ["items", "values", "xs", "seq", "lst"])
    if fixed is None:
        size = pick(rng, ["size", "n", "k", "chunk_size"])
        name = pick(rng, ["chunk", "chunked", "chunks", "batch", "split_chunks", "group_into"])
        args = [(items, "a list"), (size, "a positive int")]
        n_words = f"`{size}`"
    else:
        size = "SIZE"
        name = pick(rng, [f"chunks_of_{fixed}", f"groups_of_{fixed}", f"batch_{fixed}"])
        args = [(items, "a list")]
        n_words = count(rng, fixed)
    what = pick(
        rng,
        [
            f"`{items}` split into consecutive chunks of {n_words} items, as a list of lists",
            f"a list of lists: the items of `{items}` grouped {n_words} at a time, in order",
        ],
    )
    rule = {
        "keep": "The last chunk may be shorter if the items do not divide evenly.",
        "drop": "Drop a last chunk that would be shorter than the others.",
        "pad": f"Pad a short last chunk with {fill} up to full length.",
    }[tail]
    rules = [rule, "An empty list gives []."]
    stop = f"len({items}) - {size} + 1" if tail == "drop" else f"len({items})"
    body = f"[{items}[i : i + {size}] for i in range(0, {stop}, {size})]"
    constants = [f"SIZE = {fixed}"] if fixed else []
    constants += [f"FILL = {fill}"] if tail == "pad" else []
    header = "\n".join(constants) + "\n\n\n" if constants else ""
    signature = f"def {name}({', '.join(a for a, _ in args)}):"
    if tail == "pad":
        reference = header + _ref(f"""
            {signature}
                groups = {body}
                if groups:
                    groups[-1] = groups[-1] + [FILL] * ({size} - len(groups[-1]))
                return groups
            """)
    else:
        reference = header + _ref(f"""
            {signature}
                return {body}
            """)

    def cases(c: random.Random) -> list[Case]:
        longer = [c.randint(-9, 99) for _ in range(c.randint(8, 12))]
        if fixed is not None:
            return [
                ([],),
                (list(range(1, 2 * fixed + 2)),),
                (list(range(10, 10 + 3 * fixed)),),
                (["a", "b"],),
                (longer,),
            ]
        return [
            ([], 3),
            ([1, 2, 3, 4, 5, 6, 7], 3),
            ([1, 2, 3, 4, 5, 6], 2),
            (["a", "b", "c"], 1),
            ([1, 2], 5),
            (longer, c.randint(2, 4)),
        ]

    params = {"tail": tail, "fixed": fixed, "fill": fill}
    return Spec(name, args, what, rules, reference, params, cases)


def _sliding_window(rng: random.Random) -> Spec:
    running = rng.random() < 0.3
    values = pick(rng, ["values", "nums", "xs", "numbers"])
    if running:
        op = pick(rng, ["sum", "max", "min", "product"])
        name = pick(
            rng,
            {
                "sum": ["running_sum", "cumulative_sum", "prefix_sums"],
                "max": ["running_max", "cumulative_max"],
                "min": ["running_min", "cumulative_min"],
                "product": ["running_product", "cumulative_product"],
            }[op],
        )
        noun = {"sum": "total", "max": "maximum", "min": "minimum", "product": "product"}[op]
        what = pick(
            rng,
            [
                f"the running {noun} of `{values}`: item i is the {noun} of the first i + 1 items",
                f"a list whose i-th element is the {noun} of `{values}[:i + 1]`",
            ],
        )
        rules = ["An empty list gives []."]
        call = {"sum": "", "max": ", max", "min": ", min", "product": ", mul"}[op]
        imports = "from itertools import accumulate\n"
        imports += "from operator import mul\n" if op == "product" else ""
        reference = (
            imports
            + "\n\n"
            + _ref(f"""
            def {name}({values}):
                return list(accumulate({values}{call}))
            """)
        )
        args = [(values, "a list of ints")]
        window_size: int | None = None
    else:
        op = pick(rng, ["sum", "max", "min", "spread"])
        window_size = rng.randint(2, 5) if rng.random() < 0.4 else None
        name = pick(
            rng,
            {
                "sum": ["moving_sum", "window_sums", "sliding_sum", "rolling_sum"],
                "max": ["sliding_max", "rolling_max", "window_max"],
                "min": ["sliding_min", "rolling_min", "window_min"],
                "spread": ["window_range", "sliding_spread", "rolling_spread"],
            }[op],
        )
        if window_size is None:
            window = pick(rng, ["window", "k", "w", "size"])
            args = [(values, "a list of ints"), (window, "a window length (an int ≥ 1)")]
            width = f"`{window}`"
        else:
            window = "WINDOW"
            args = [(values, "a list of ints")]
            width = count(rng, window_size)
        noun = {
            "sum": "sum",
            "max": "largest value",
            "min": "smallest value",
            "spread": "largest minus smallest value",
        }[op]
        what = pick(
            rng,
            [
                f"the {noun} of every window of {width} consecutive items of `{values}`",
                f"a list with the {noun} of each run of {width} adjacent numbers in `{values}`, "
                "left to right",
            ],
        )
        rules = [
            pick(
                rng,
                [
                    "If the list is shorter than the window, return [].",
                    "Fewer items than the window length means an empty result.",
                ],
            )
        ]
        expr = {
            "sum": "sum(part)",
            "max": "max(part)",
            "min": "min(part)",
            "spread": "max(part) - min(part)",
        }[op]
        header = f"WINDOW = {window_size}\n\n\n" if window_size else ""
        reference = header + _ref(f"""
            def {name}({", ".join(a for a, _ in args)}):
                result = []
                for i in range(len({values}) - {window} + 1):
                    part = {values}[i : i + {window}]
                    result.append({expr})
                return result
            """)

    def cases(c: random.Random) -> list[Case]:
        rand = [c.randint(-20, 50) for _ in range(c.randint(6, 10))]
        small = [c.randint(-3, 5) for _ in range(c.randint(4, 7))]
        if running:
            return [([],), ([3],), ([1, 2, 3, 4],), ([3, -1, 4, -1, 5],), (rand if op != "product"
                    else small,), ([0, 7, 2],)]  # fmt: skip
        if window_size is not None:
            return [
                ([],),
                (list(range(1, 7)),),
                ([4, -2, 7, 0, 3, 9, -5],),
                (rand,),
                (list(range(window_size - 1)),),
            ]
        return [
            ([], 3),
            ([1, 2, 3, 4, 5], 2),
            ([4, -2, 7, 0, 3, 9], 3),
            ([5, 8], 1),
            ([1, 2], 3),
            (rand, c.randint(2, 4)),
        ]

    params = {"running": running, "op": op, "window": window_size}
    return Spec(name, args, what, rules, reference, params, cases)


def _dedupe(rng: random.Random) -> Spec:
    mode = pick(rng, ["first", "first", "last", "casefold", "adjacent", "duplicates", "once"])
    kind = "strings" if mode == "casefold" else pick(rng, ["ints", "strings"])
    items = pick(
        rng,
        ["items", "values", "seq", "xs", "nums", "data"]
        if kind == "ints"
        else ["words", "items", "names", "tokens"],
    )
    name = pick(
        rng,
        {
            "first": ["dedupe", "unique", "remove_duplicates", "uniq"],
            "last": ["dedupe_keep_last", "unique_last", "keep_last_occurrences"],
            "casefold": ["dedupe_ignore_case", "unique_words", "dedupe_casefold"],
            "adjacent": ["collapse_runs", "squeeze", "compress_repeats"],
            "duplicates": ["find_duplicates", "duplicates", "repeated_items"],
            "once": ["singles", "only_once", "non_repeated"],
        }[mode],
    )
    what, rules = {
        "first": (
            f"`{items}` without duplicates",
            ["Keep the first occurrence of each item, in the original order."],
        ),
        "last": (
            f"`{items}` with duplicates removed, keeping the last occurrence of each item",
            ["The kept items stay in their original relative order."],
        ),
        "casefold": (
            f"`{items}` without case-insensitive duplicates",
            ["'Apple' and 'APPLE' are the same word; keep the first spelling seen, in order."],
        ),
        "adjacent": (
            f"`{items}` with each run of equal adjacent items collapsed to one item",
            ["Equal items that are not next to each other are all kept."],
        ),
        "duplicates": (
            f"the items that occur more than once in `{items}`",
            ["List each such item once, in the order of its first appearance."],
        ),
        "once": (
            f"the items of `{items}` that occur exactly once",
            ["Keep them in their original order."],
        ),
    }[mode]
    rules = [*rules, "Do not modify the input list."]
    body = {
        "first": f"    return list(dict.fromkeys({items}))\n",
        "last": f"    return list(dict.fromkeys(reversed({items})))[::-1]\n",
        "casefold": (
            f"    seen = set()\n    result = []\n    for word in {items}:\n"
            "        key = word.casefold()\n        if key not in seen:\n"
            "            seen.add(key)\n            result.append(word)\n    return result\n"
        ),
        "adjacent": (
            f"    return [x for i, x in enumerate({items}) if i == 0 or x != {items}[i - 1]]\n"
        ),
        "duplicates": (
            f"    counts = Counter({items})\n"
            f"    return [x for x in dict.fromkeys({items}) if counts[x] > 1]\n"
        ),
        "once": (
            f"    counts = Counter({items})\n    return [x for x in {items} if counts[x] == 1]\n"
        ),
    }[mode]
    header = "from collections import Counter\n\n\n" if mode in ("duplicates", "once") else ""
    reference = f"{header}def {name}({items}):\n{body}"

    def cases(c: random.Random) -> list[Case]:
        if kind == "strings" and mode == "casefold":
            words = [c.choice(WORDS[:8]) for _ in range(8)]
            words = [w.upper() if c.random() < 0.3 else w for w in words]
            return [([],), (["a", "A", "b"],), (["Apple", "apple", "APPLE", "pear"],),
                    (["x", "y"],), (words,)]  # fmt: skip
        pool: list[Any] = list(range(1, 6)) if kind == "ints" else list(WORDS[:5])
        a, b, d = pool[0], pool[1], pool[2]
        return [
            ([],),
            ([a, b, d],),
            ([a, a, b, d, b, a],),
            ([d, d, d],),
            ([b, a, a, b, b, d],),
            ([c.choice(pool) for _ in range(c.randint(6, 10))],),
        ]

    params = {"mode": mode, "kind": kind}
    desc = "a list of strings" if kind == "strings" else "a list"
    return Spec(name, [(items, desc)], what, rules, reference, params, cases)


# --- math ----------------------------------------------------------------------------------


def _gcd_lcm(rng: random.Random) -> Spec:
    op = pick(rng, ["gcd", "gcd", "lcm", "lcm", "coprime", "simplify", "totient", "lcm_range"])
    form = {"gcd": "", "lcm": "", "totient": "one", "lcm_range": "one"}.get(op, "two")
    form = form or pick(rng, ["two", "three", "list"])
    name = pick(
        rng,
        {
            "gcd": ["gcd", "greatest_common_divisor", "hcf", "common_divisor"],
            "lcm": ["lcm", "least_common_multiple", "smallest_multiple"],
            "coprime": ["coprime", "are_coprime", "is_coprime"],
            "simplify": ["simplify", "reduce_fraction", "lowest_terms"],
            "totient": ["totient", "phi", "euler_phi", "count_coprimes"],
            "lcm_range": ["smallest_divisible", "lcm_up_to", "lcm_of_range"],
        }[op],
    )
    if form == "one":
        arg = pick(rng, ["n", "limit", "num"])
        args = [(arg, "a positive int")]
        spread = of = ""
    elif form == "list":
        arg = pick(rng, ["numbers", "values", "nums", "ints"])
        args = [(arg, "a non-empty list of non-negative ints")]
        spread = f"*{arg}"
        of = f"all the numbers in `{arg}`"
    else:
        letters = pick(rng, ["a b c", "x y z", "m n k", "p q r", "u v w", "first second third"])
        names = letters.split()[: 2 if form == "two" else 3]
        if op == "simplify":
            names = pick(rng, ["num den", "numerator denominator", "p q"]).split()
        args = [(a, "a non-negative int") for a in names]
        spread = ", ".join(names)
        of = _join([f"`{a}`" for a in names])
    arg = args[0][0]
    what, rules, body = {
        "totient": (
            f"how many of the integers 1..`{arg}` are coprime with `{arg}` (Euler's phi)",
            [f"Two numbers are coprime when their gcd is 1; for `{arg}` = 1 the answer is 1."],
            f"return sum(1 for k in range(1, {arg} + 1) if math.gcd(k, {arg}) == 1)",
        ),
        "lcm_range": (
            f"the smallest positive number that every integer from 1 to `{arg}` divides",
            ["For 1 the answer is 1."],
            f"return math.lcm(*range(1, {arg} + 1))",
        ),
        "gcd": (
            f"the greatest common divisor of {of}",
            ["gcd(0, n) is n."],
            f"return math.gcd({spread})",
        ),
        "lcm": (
            f"the least common multiple of {of}",
            ["If any number is 0 the result is 0."],
            f"return math.lcm({spread})",
        ),
        "coprime": (
            f"True if {of} are coprime (their greatest common divisor is 1), else False",
            ["1 is coprime with every number."],
            f"return math.gcd({spread}) == 1",
        ),
        "simplify": (
            f"the fraction `{args[0][0]}`/`{args[-1][0]}` in lowest terms, as a tuple "
            "(numerator, denominator)",
            ["The denominator is positive; a zero numerator gives (0, 1)."],
            f"g = math.gcd({spread})\n    return {args[0][0]} // g, {args[-1][0]} // g",
        ),
    }[op]
    reference = f"import math\n\n\ndef {name}({', '.join(a for a, _ in args)}):\n    {body}\n"

    def cases(c: random.Random) -> list[Case]:
        if op == "totient":
            return [(1,), (9,), (10,), (13,), (36,), (c.randint(40, 400),)]
        if op == "lcm_range":
            return [(1,), (2,), (5,), (10,), (20,), (c.randint(11, 30),)]
        g = c.randint(2, 9)
        r1, r2, r3 = g * c.randint(1, 12), g * c.randint(1, 12), g * c.randint(1, 12)
        if op == "simplify":
            return [(6, 8), (0, 5), (7, 3), (100, 25), (12, 18), (r1, r2 or g)]
        if op == "coprime":
            return [(8, 9), (12, 18), (1, 1), (14, 21), (17, 4), (r1, r2)]
        pairs: list[Case] = [(12, 18), (0, 5), (7, 13), (100, 75), (21, 6), (4, 6), (r1, r2)]
        if form == "three":
            pairs = [(12, 18, 24), (0, 4, 6), (7, 14, 21), (2, 3, 4), (5, 5, 5), (r1, r2, r3)]
        if form == "list":
            return [([12],), ([12, 18],), ([8, 12, 20],), ([7, 13],), ([6, 10, 15],),
                    ([r1, r2, r3],)]  # fmt: skip
        return pairs

    params = {"op": op, "form": form}
    return Spec(name, args, what, rules, reference, params, cases)


def _fibonacci(rng: random.Random) -> Spec:
    kind = pick(rng, ["fibonacci", "fibonacci", "lucas", "custom"])
    first, second = {"fibonacci": (0, 1), "lucas": (2, 1)}.get(kind, (0, 0))
    if kind == "custom":
        while (first, second) in ((0, 1), (2, 1), (0, 0)):
            first, second = rng.randint(0, 4), rng.randint(1, 5)
    modulus = pick(rng, ["", "", "10", "97", "100", "1000", "1_000_000_007"])
    arg = pick(rng, ["n", "k", "index"])
    name = pick(
        rng,
        {
            "fibonacci": ["fib", "fibonacci", "nth_fibonacci"] + (["fib_mod"] if modulus else []),
            "lucas": ["lucas", "nth_lucas", "lucas_number"],
            "custom": ["sequence_term", "nth_term", "term"],
        }[kind],
    )
    label = {"fibonacci": "Fibonacci number", "lucas": "Lucas number", "custom": "term"}[kind]
    what = f"the `{arg}`-th {label}" + (f" modulo {modulus.replace('_', ',')}" if modulus else "")
    rules = [
        f"The sequence starts {first}, {second} (index 0 is {first}); every later term is the sum "
        "of the two before it.",
    ]
    if modulus:
        rules.append(f"`{arg}` can be a few thousand, so reduce as you go.")
    step = "(a + b) % MOD" if modulus else "a + b"
    header = f"MOD = {modulus}\n\n\n" if modulus else ""
    reference = header + _ref(f"""
        def {name}({arg}):
            a, b = {first}, {second}
            for _ in range({arg}):
                a, b = b, {step}
            return a
        """)

    def cases(c: random.Random) -> list[Case]:
        if modulus:
            return [(0,), (1,), (2,), (10,), (c.randint(20, 60),), (500,), (3000,)]
        return [(0,), (1,), (2,), (10,), (c.randint(20, 40),), (90,)]

    params = {"kind": kind, "start": [first, second], "modulus": modulus}
    return Spec(name, [(arg, "a non-negative int")], what, rules, reference, params, cases)


PRIME_HELPER = """\
def _is_prime(n):
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n**0.5) + 1))
"""


def _primes(rng: random.Random) -> Spec:
    mode = pick(
        rng, ["is_prime", "list", "count", "sum", "nth", "next", "factors", "largest", "between"]
    )
    inclusive = mode in ("list", "count", "sum") and rng.random() < 0.5
    distinct = mode == "factors" and rng.random() < 0.4
    arg = pick(rng, ["n", "limit", "num", "x"] if mode != "nth" else ["k", "n", "index"])
    bound = "up to and including" if inclusive else "below"
    name = pick(
        rng,
        {
            "is_prime": ["is_prime", "isprime", "check_prime", "prime"],
            "list": ["primes_up_to", "primes_through"] if inclusive else ["primes_below", "primes"],
            "count": ["count_primes", "prime_count", "num_primes"],
            "sum": ["sum_primes", "prime_sum", "sum_of_primes"],
            "nth": ["nth_prime", "kth_prime", "prime_at"],
            "next": ["next_prime", "prime_after", "following_prime"],
            "factors": ["prime_factors", "factorize", "prime_factorization"],
            "largest": ["largest_prime_factor", "max_prime_factor", "biggest_prime_factor"],
            "between": ["primes_between", "primes_in_range", "prime_range"],
        }[mode],
    )
    args = [(arg, "a positive int" if mode in ("nth", "factors", "largest") else "an int")]
    if mode == "between":
        bounds = pick(rng, ["lo hi", "low high", "start stop", "a b"])
        args = [(a, "an int") for a in bounds.split()]
    lo, hi = args[0][0], args[-1][0]
    what, rules = {
        "is_prime": (
            f"True when `{arg}` is a prime number and False otherwise",
            ["Numbers below 2 (including negatives) are not prime."],
        ),
        "list": (f"a sorted list of the primes {bound} `{arg}`", ["Small inputs may give []."]),
        "count": (f"the number of primes {bound} `{arg}`", ["0 and 1 are not prime."]),
        "sum": (f"the sum of all primes {bound} `{arg}`", ["With no such primes the sum is 0."]),
        "nth": (f"the `{arg}`-th prime number", ["Counting starts at 1: the 1st prime is 2."]),
        "next": (
            f"the smallest prime strictly greater than `{arg}`",
            [f"`{arg}` may itself be prime, or negative."],
        ),
        "factors": (
            f"the {'distinct ' if distinct else ''}prime factors of `{arg}` in ascending order"
            + ("" if distinct else ", repeated by multiplicity"),
            [f"For 1 return []; `{arg}` is at least 1."],
        ),
        "largest": (f"the largest prime factor of `{arg}`", [f"`{arg}` is at least 2."]),
        "between": (
            f"a sorted list of the primes p with `{lo}` <= p <= `{hi}`",
            ["Both bounds are included; an empty range gives []."],
        ),
    }[mode]
    top = f"{arg} + 1" if inclusive else arg
    body = {
        "is_prime": (
            f"    if {arg} < 2:\n        return False\n"
            f"    return all({arg} % d for d in range(2, int({arg}**0.5) + 1))\n"
        ),
        "list": f"    return [p for p in range(2, {top}) if _is_prime(p)]\n",
        "count": f"    return sum(1 for p in range(2, {top}) if _is_prime(p))\n",
        "sum": f"    return sum(p for p in range(2, {top}) if _is_prime(p))\n",
        "nth": (
            f"    found, p = 0, 1\n    while found < {arg}:\n        p += 1\n"
            "        if _is_prime(p):\n            found += 1\n    return p\n"
        ),
        "next": (
            f"    p = max({arg} + 1, 2)\n"
            "    while not _is_prime(p):\n        p += 1\n    return p\n"
        ),
        "factors": (
            f"    factors = []\n    d = 2\n    while d * d <= {arg}:\n"
            f"        while {arg} % d == 0:\n"
            + ("            if d not in factors:\n    " if distinct else "")
            + "            factors.append(d)\n"
            f"            {arg} //= d\n        d += 1\n"
            f"    if {arg} > 1:\n        factors.append({arg})\n    return factors\n"
        ),
        "largest": (
            f"    d = 2\n    while d * d <= {arg}:\n        if {arg} % d == 0:\n"
            f"            {arg} //= d\n        else:\n            d += 1\n    return {arg}\n"
        ),
        "between": f"    return [p for p in range({lo}, {hi} + 1) if _is_prime(p)]\n",
    }[mode]
    uses_helper = mode in ("list", "count", "sum", "nth", "next", "between")
    helper = PRIME_HELPER + "\n\n" if uses_helper else ""
    reference = f"{helper}def {name}({', '.join(a for a, _ in args)}):\n{body}"

    def cases(c: random.Random) -> list[Case]:
        table: dict[str, list[Case]] = {
            "is_prime": [(0,), (1,), (2,), (9,), (97,), (7919,), (-7,), (c.randint(1000, 2000),)],
            "list": [(0,), (2,), (3,), (10,), (11,), (c.randint(20, 60),)],
            "count": [(0,), (2,), (10,), (100,), (1000,), (c.randint(20, 500),)],
            "sum": [(0,), (2,), (3,), (10,), (100,), (c.randint(20, 500),)],
            "nth": [(1,), (2,), (10,), (100,), (c.randint(3, 60),)],
            "next": [(-5,), (0,), (2,), (13,), (89,), (c.randint(100, 5000),)],
            "factors": [(1,), (2,), (12,), (97,), (360,), (c.randint(100, 10_000),)],
            "largest": [(2,), (12,), (97,), (360,), (13195,), (c.randint(100, 10_000),)],
            "between": [(1, 10), (10, 20), (14, 16), (20, 10), (-5, 3), (c.randint(30, 90), 120)],
        }
        return table[mode]

    params = {"mode": mode, "inclusive": inclusive, "distinct": distinct}
    return Spec(name, args, what, rules, reference, params, cases)


# --- parsing -------------------------------------------------------------------------------


def _parse_pairs(rng: random.Random) -> Spec:
    pair_sep = pick(rng, [";", ",", "&", "|"])
    kv_sep = pick(rng, ["=", ":"])
    convert = rng.random() < 0.5
    name = pick(rng, ["parse_pairs", "parse_kv", "parse_config", "parse_settings", "to_dict"])
    arg = pick(rng, ["text", "s", "line", "spec"])
    sample = f"a{kv_sep}1{pair_sep}b{kv_sep}x"
    what = pick(
        rng,
        [
            f"a dict built from the '{pair_sep}'-separated key{kv_sep}value pairs in `{arg}`",
            f"the pairs of `{arg}` (like {sample!r}) as a dict",
        ],
    )
    rules = [
        f"Pairs are separated by {pair_sep!r}; each pair splits at its first {kv_sep!r}.",
        "Strip whitespace around keys and values and skip empty pairs.",
        "If a key repeats, the last value wins.",
    ]
    if convert:
        rules.append("Values made only of digits become ints; all others stay strings.")
    else:
        rules.append("Values stay strings.")
    value = "int(value) if value.isdigit() else value" if convert else "value"
    reference = _ref(f"""
        def {name}({arg}):
            result = {{}}
            for pair in {arg}.split({_q(pair_sep)}):
                if not pair.strip():
                    continue
                key, _, value = pair.partition({_q(kv_sep)})
                value = value.strip()
                result[key.strip()] = {value}
            return result
        """)

    def cases(c: random.Random) -> list[Case]:
        p, k = pair_sep, kv_sep
        keys = c.sample(["host", "port", "user", "mode", "level", "size", "name", "id"], 3)
        rand = p.join(f"{key}{k}{c.choice([str(c.randint(0, 999)), c.choice(WORDS)])}"
                      for key in keys)  # fmt: skip
        return [
            ("",),
            (f"a{k}1{p}b{k}2",),
            (f" name {k} Bob {p} age{k}42 ",),
            (f"x{k}1{p}{p}y{k}2{p}",),
            (f"k{k}old{p}k{k}new",),
            (f"url{k}a{k}b{p}v{k}4.5",),
            (rand,),
        ]

    params = {"pair_sep": pair_sep, "kv_sep": kv_sep, "convert": convert}
    return Spec(name, [(arg, "a string")], what, rules, reference, params, cases)


DURATION_UNITS = {
    "hms": ([("h", 3600), ("m", 60), ("s", 1)], "seconds"),
    "dhms": ([("d", 86400), ("h", 3600), ("m", 60), ("s", 1)], "seconds"),
    "hm": ([("h", 60), ("m", 1)], "minutes"),
    "dh": ([("d", 24), ("h", 1)], "hours"),
    "ms": ([("m", 60), ("s", 1)], "seconds"),
    "wd": ([("w", 7), ("d", 1)], "days"),
}


def _durations(rng: random.Random) -> Spec:
    units_key = pick(rng, list(DURATION_UNITS))
    units, base = DURATION_UNITS[units_key]
    letters = "".join(u for u, _ in units)
    parse = rng.random() < 0.6
    legend = _join([f"{u!r}" for u in letters])
    sep = ""
    if parse:
        name = pick(rng, ["parse_duration", f"to_{base}", f"duration_to_{base}", f"in_{base}"])
        arg = pick(rng, ["text", "duration", "spec", "s"])
        example = "".join(f"{i + 1}{u}" for i, (u, _) in enumerate(units[:2]))
        what = f"the total number of {base} in a duration string `{arg}` like {example!r}"
        rules = [
            f"Units are {legend} (lower-case); each appears at most once, largest first, and any "
            "may be missing.",
            "Parts may be separated by spaces; an amount may exceed the next unit (90m is fine).",
            "An empty string means 0.",
        ]
        mapping = ", ".join(f"{_q(u)}: {size}" for u, size in units)
        reference = _ref(f"""
            import re

            UNITS = {{{mapping}}}


            def {name}({arg}):
                total = 0
                for amount, unit in re.findall(r"(\\d+)\\s*([{letters}])", {arg}):
                    total += int(amount) * UNITS[unit]
                return total
            """)
    else:
        sep = pick(rng, ["", " "])
        name = pick(rng, ["format_duration", "humanize_duration", "pretty_duration"])
        arg = pick(rng, [base, "total", "n"])
        what = f"`{arg}` {base} written as a compact duration string"
        shown = sep.join([f"1{units[0][0]}", f"5{units[-1][0]}"])
        rules = [
            f"Use the units {legend} (largest first) and skip units whose amount is 0"
            + (", with a space between parts" if sep else ", with no spaces")
            + f": {units[0][1] + 5} gives {shown!r}.",
            f"0 gives '0{units[-1][0]}'.",
        ]
        pairs = ", ".join(f"({_q(u)}, {size})" for u, size in units)
        reference = _ref(f"""
            UNITS = [{pairs}]


            def {name}({arg}):
                parts = []
                for unit, size in UNITS:
                    amount, {arg} = divmod({arg}, size)
                    if amount:
                        parts.append(f"{{amount}}{{unit}}")
                return {_q(sep)}.join(parts) or "0{units[-1][0]}"
            """)

    def cases(c: random.Random) -> list[Case]:
        def text(amounts: list[int], spaced: bool = False) -> str:
            out = [f"{a}{u}" for a, (u, _) in zip(amounts, units, strict=False) if a]
            return (" " if spaced else "").join(out)

        r = [c.randint(1, 9) for _ in units]
        if parse:
            return [
                ("",),
                (text([1, 30]),),
                (f"45{letters[-1]}",),
                (text(r, spaced=True),),
                (f"90{letters[1]}",),
                (text([2]),),
                (text([c.randint(1, 20), *r[1:]]),),
            ]
        total = sum(a * size for a, (_, size) in zip(r, units, strict=True))
        return [
            (0,),
            (units[-2][1] - 1,),
            (units[0][1],),
            (units[0][1] + 5,),
            (total,),
            (units[0][1] * 3 + units[-2][1],),
        ]

    params = {"units": units_key, "direction": "parse" if parse else "format", "sep": sep}
    desc = "a string" if parse else "a non-negative int"
    return Spec(name, [(arg, desc)], what, rules, reference, params, cases)


ROMAN_TABLE = """NUMERALS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
"""


def _roman(rng: random.Random) -> Spec:
    to_int = rng.random() < 0.5
    lower = rng.random() < 0.4
    if to_int:
        name = pick(rng, ["roman_to_int", "from_roman", "parse_roman", "roman_value"])
        arg = pick(rng, ["s", "numeral", "roman", "text"])
        what = f"the integer value of the Roman numeral `{arg}`"
        rules = [
            "The numeral is valid and between I and MMMCMXCIX; a smaller symbol before a larger "
            "one is subtracted (IV is 4).",
            "Accept lower-case letters as well." if lower else "The letters are upper-case.",
        ]
        reference = _ref(f"""
            VALUES = {{"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}}


            def {name}({arg}):
                digits = [VALUES[ch] for ch in {arg}{".upper()" if lower else ""}]
                total = 0
                for i, value in enumerate(digits):
                    if i + 1 < len(digits) and value < digits[i + 1]:
                        total -= value
                    else:
                        total += value
                return total
            """)
        desc = "a string"
    else:
        name = pick(rng, ["int_to_roman", "to_roman", "roman"])
        arg = pick(rng, ["n", "number", "num"])
        what = f"`{arg}` written as a Roman numeral"
        rules = [
            f"`{arg}` is between 1 and 3999; use subtractive forms (4 is IV, 900 is CM).",
            "Return lower-case letters (4 is 'iv')." if lower else "Use upper-case letters.",
        ]
        reference = (
            ROMAN_TABLE
            + "\n\n"
            + _ref(f"""
            def {name}({arg}):
                parts = []
                for value, numeral in NUMERALS:
                    repeat, {arg} = divmod({arg}, value)
                    parts.append(numeral * repeat)
                return "".join(parts){".lower()" if lower else ""}
            """)
        )
        desc = "an int"

    def cases(c: random.Random) -> list[Case]:
        numbers = [1, 4, 9, 14, 40, 90, 400, 1994, 3999, c.randint(1, 3999)]
        if not to_int:
            return [(n,) for n in numbers]
        to_roman = load_function(ROMAN_TABLE + "\n\n" + _ref("""
            def to_roman(n):
                parts = []
                for value, numeral in NUMERALS:
                    repeat, n = divmod(n, value)
                    parts.append(numeral * repeat)
                return "".join(parts)
            """), "to_roman")  # fmt: skip
        texts = [to_roman(n) for n in numbers]
        if lower:
            texts[1], texts[7] = texts[1].lower(), texts[7].lower()
            texts[-1] = "".join(ch.lower() if c.random() < 0.5 else ch for ch in texts[-1])
        return [(t,) for t in texts]

    params = {"direction": "to_int" if to_int else "from_int", "lower": lower}
    return Spec(name, [(arg, desc)], what, rules, reference, params, cases)


FAMILIES: list[Family] = [
    CodeFamily("caesar_shift", _caesar),
    CodeFamily("char_count", _char_count),
    CodeFamily("word_ops", _word_ops),
    CodeFamily("chunk_list", _chunk),
    CodeFamily("sliding_window", _sliding_window),
    CodeFamily("dedupe_list", _dedupe),
    CodeFamily("gcd_lcm", _gcd_lcm),
    CodeFamily("fibonacci", _fibonacci),
    CodeFamily("primes", _primes),
    CodeFamily("parse_pairs", _parse_pairs),
    CodeFamily("durations", _durations),
    CodeFamily("roman_numerals", _roman, held_out=True),
]
