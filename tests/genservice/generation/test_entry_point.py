"""Code candidates are steered to define the function the request names, with its arguments."""

from __future__ import annotations

import ast
import re

import pytest

from genservice.generation.engine import GenerationRequest
from genservice.generation.entry_point import (
    EntryPoint,
    needs_steering,
    stated_arguments,
    steered_prefix,
)
from genservice.generation.loader import default_model_dir, load_model
from genservice.generation.prompts import build_messages
from genservice.generation.sampler import sample, sample_one_at_a_time

DEDUPE = (
    "Please implement dedupe(names) so that it returns `names` without duplicates. Keep the "
    "first occurrence of each item, in the original order. Do not modify the input list."
)


@pytest.mark.parametrize(
    ("prompt", "name", "arguments"),
    [
        ("Write `chunk(items, size)` that splits a list", "chunk", "items, size"),
        ("def acronym(line): return the first letters", "acronym", "line"),
        ("Implement ticks() returning a counter", "ticks", ""),
        ("e.g. top([4, 2, 7], 2) == [7, 4]; write top(numbers, k)", "top", "numbers, k"),
        ("Define `hcf`, a function of an int `m` and an int `n`", "hcf", None),
        ("So `acronym('hello')` should give 'H'", "acronym", None),
        ("Write my_chunk(items) please", "chunk", None),  # another function's signature
        ("Write fn(*args, **kwargs) for me", "fn", "*args, **kwargs"),
    ],
)  # fmt: skip
def test_the_arguments_a_request_states(prompt, name, arguments):
    assert stated_arguments(prompt, name) == arguments


def test_a_candidate_with_the_right_signature_is_left_alone():
    entry = EntryPoint("dedupe", "names")
    assert not needs_steering("def dedupe(names):\n    return list(dict.fromkeys(names))\n", entry)
    assert not needs_steering("def dedupe(names):\n    pass\n", EntryPoint("dedupe"))
    assert needs_steering("def dedupe(tokens):\n    return tokens\n", entry)
    assert needs_steering("def uniq(names):\n    return names\n", entry)
    assert needs_steering("    def dedupe(names):\n        pass\n", entry)  # not top level
    assert needs_steering("abbbbbbbbb", entry)


def test_the_steered_prefix_replaces_the_right_def():
    entry = EntryPoint("primes_below", "n")
    helper = "def is_prime(k):\n    return k > 1\n\n\ndef primes(limit):\n    return []\n"
    # Helpers before the last def keep their names; the last def becomes the entry point.
    assert steered_prefix(helper, entry) == (
        "def is_prime(k):\n    return k > 1\n\n\ndef primes_below(n):\n"
    )
    # The entry point's own def (with wrong arguments) is the one replaced, not a later helper.
    own = "import math\n\n\ndef primes_below(x, y):\n    pass\n\n\ndef other():\n    pass\n"
    assert steered_prefix(own, entry) == "import math\n\n\ndef primes_below(n):\n"
    # No def at all: start again from the signature; without stated arguments, the bare name.
    assert steered_prefix("abbbbbb", entry) == "def primes_below(n):\n"
    assert steered_prefix("MOD = 10\n\n\ndef fib(k):\n", EntryPoint("tribonacci")) == (
        "MOD = 10\n\n\ndef tribonacci"
    )


def test_an_entry_point_must_be_a_function_name():
    tests = "def check(c): pass"
    for bad in ("2fast", "with space", "class", "a.b"):
        with pytest.raises(ValueError, match="entry point"):
            EntryPoint(bad)
        with pytest.raises(ValueError, match="entry point"):
            GenerationRequest(prompt="p", domain="code", tests=tests, entry_point=bad)


@pytest.fixture(scope="module")
def shipped():
    return load_model(default_model_dir())


def _top_level_functions(program: str) -> list[tuple[str, list[str]]]:
    """Top-level `def`s with their argument names (from the def lines when the body the model
    wrote does not parse: steering sets the signature, not the body)."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        heads = re.findall(r"^def (\w+)\(([^)]*)\)", program, flags=re.MULTILINE)
        return [(name, [a.split("=")[0].strip() for a in args.split(",") if a.strip()])
                for name, args in heads]  # fmt: skip
    return [
        (node.name, [a.arg for a in node.args.args])
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    ]


# A name and argument no corpus task uses: the tiny model writes the corpus's own names instead.
KEEP_FIRST = (
    "Please implement keep_first(people) so that it returns `people` without duplicates. Keep "
    "the first occurrence of each item, in the original order. Do not modify the input list."
)


def test_the_shipped_model_is_steered_to_the_requested_function(shipped):
    messages = build_messages("code", KEEP_FIRST)
    kwargs = {"n": 4, "seed": 0, "max_new_tokens": 120, "temperature": 0.8}
    free = sample(shipped, messages, **kwargs)
    entry = EntryPoint.from_request(KEEP_FIRST, "keep_first")
    steered = sample(shipped, messages, **kwargs, entry_point=entry)
    wanted = ("keep_first", ["people"])
    # Unsteered, the tiny model names the function otherwise in some of these candidates ...
    assert any(wanted not in _top_level_functions(c.text) for c in free)
    # ... steered, every candidate defines keep_first(people) at top level, and those that
    # needed no steering are unchanged.
    for before, after in zip(free, steered, strict=True):
        assert wanted in _top_level_functions(after.text), after.text
        if wanted in _top_level_functions(before.text):
            assert after.tokens == before.tokens
        assert after.logprob_sum <= 0


def test_steering_is_seeded_and_batched_equals_one_at_a_time(shipped):
    messages = build_messages("code", DEDUPE)
    entry = EntryPoint.from_request(DEDUPE, "dedupe")
    kwargs = {"n": 3, "seed": 4, "max_new_tokens": 80, "temperature": 1.0, "entry_point": entry}
    batched = sample(shipped, messages, **kwargs)
    again = sample(shipped, messages, **kwargs)
    slow = sample_one_at_a_time(shipped, messages, **kwargs)
    assert [c.tokens for c in batched] == [c.tokens for c in again]
    assert [c.tokens for c in batched] == [c.tokens for c in slow]
    for fast, reference in zip(batched, slow, strict=True):
        assert fast.logprob_sum == pytest.approx(reference.logprob_sum, abs=1e-3)


def test_a_name_only_entry_point_is_written_whole(shipped):
    """Without stated arguments, the name is forced and the model may not lengthen it."""
    prompt = "Define `unique_last`, a function of a list `items` that drops repeated items."
    messages = build_messages("code", prompt)
    entry = EntryPoint.from_request(prompt, "unique_last")
    assert entry.arguments is None
    out = sample(shipped, messages, n=4, seed=2, max_new_tokens=80, entry_point=entry)
    for completion in out:
        assert completion.text.count("def unique_last(") >= 1, completion.text
