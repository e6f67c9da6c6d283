"""Code task families: references pass their hidden tests, trivial programs fail, prompts vary."""

from __future__ import annotations

import ast
import math
import random
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from itertools import accumulate
from typing import Any

import pytest

from genservice.task_audit import schema_problems, trivial_programs
from training.corpus.base import Family, Sample, params_key, to_task
from training.corpus.code_tasks import FAMILIES, load_function
from validators.code.validate import validate_code
from validators.sandbox import Limits, SandboxPool

BY_NAME = {family.name: family for family in FAMILIES}
SAMPLES_PER_FAMILY = 8
TRIVIAL_SAMPLES = 4  # samples per family whose trivial programs go through the sandbox


@pytest.fixture(scope="module")
def code_pool() -> Iterator[SandboxPool]:
    """Two warm workers that preload only the code guest (as genservice does for code)."""
    with SandboxPool(
        size=2, limits=Limits(wall_s=20.0), preload=("validators.code.guest",)
    ) as pool:
        yield pool


def draws(family: Family, n: int = SAMPLES_PER_FAMILY, tag: str = "t") -> list[Sample]:
    """n samples of fixed seeds."""
    return [family.sample(random.Random(f"{tag}:{family.name}:{i}")) for i in range(n)]


def cases(tests: str) -> list[tuple[tuple[Any, ...], Any]]:
    """(arguments, expected) of every `assert candidate(...) == / is ...` in the tests."""
    found = []
    check = ast.parse(tests).body[0]
    assert isinstance(check, ast.FunctionDef) and check.name == "check"
    for statement in check.body:
        assert isinstance(statement, ast.Assert)
        compare = statement.test
        assert isinstance(compare, ast.Compare) and isinstance(compare.left, ast.Call)
        args = tuple(ast.literal_eval(a) for a in compare.left.args)
        found.append((args, ast.literal_eval(compare.comparators[0])))
    return found


def test_families() -> None:
    """At least seven code families with unique names; exactly one is held out."""
    assert len(FAMILIES) >= 7
    assert len(BY_NAME) == len(FAMILIES)
    assert all(f.domain == "code" for f in FAMILIES)
    assert [f.name for f in FAMILIES if f.held_out] == ["roman_numerals"]


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_samples_are_well_formed(name: str) -> None:
    """Schema, entry point defined, function and parameters named in the prompt, ≥ 5 asserts."""
    family = BY_NAME[name]
    for sample in draws(family):
        task = to_task(family, sample)
        assert schema_problems(task) == []
        assert (task["split"] == "ood") == family.held_out
        entry = sample.entry_point
        assert entry is not None and sample.tests is not None
        tree = ast.parse(sample.reference)
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        defined = {f.name: [a.arg for a in f.args.args] for f in functions}
        assert entry in defined
        assert len(sample.reference.strip().splitlines()) <= 20, sample.reference
        assert re.search(rf"\b{entry}\b", sample.prompt), sample.prompt
        for arg in defined[entry]:
            assert re.search(rf"\b{arg}\b", sample.prompt), (arg, sample.prompt)
        assert sample.params["function"] == entry and sample.params["args"] == defined[entry]
        assert len(cases(sample.tests)) >= 5


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_reference_passes_and_trivial_programs_fail(name: str, code_pool: SandboxPool) -> None:
    """Through the real validator: the reference passes, every trivial program fails."""
    family = BY_NAME[name]
    jobs: list[tuple[str, str, dict[str, Any], bool]] = []
    for index, sample in enumerate(draws(family)):
        task = to_task(family, sample)
        jobs.append(("reference", sample.reference, task, True))
        if index < TRIVIAL_SAMPLES:
            for label, program in trivial_programs(task).items():
                jobs.append((label, program, task, False))

    def judge(job: tuple[str, str, dict[str, Any], bool]) -> str | None:
        label, program, task, should_pass = job
        report = validate_code(
            program, code_pool, tests=task["tests"], entry_point=task["entry_point"]
        )
        if report.valid != should_pass:
            why = report.error.message if report.error else "valid"
            return f"{task['id']} {label}: {why}\n{task['reference']}\n{task['tests']}"
        return None

    with ThreadPoolExecutor(max_workers=2) as threads:
        problems = [p for p in threads.map(judge, jobs) if p]
    assert problems == []


def test_prompts_vary() -> None:
    """Many openings and phrasings across draws; no two prompts alike within a family."""
    openings: set[str] = set()
    for family in FAMILIES:
        prompts = [s.prompt for s in draws(family, 24, tag="v")]
        assert len(set(prompts)) == len(prompts), family.name
        assert len({p.split()[0] for p in prompts}) >= 5, family.name
        openings.update(" ".join(p.split()[:2]) for p in prompts)
    assert len(openings) >= 60


def test_functions_and_constants_vary() -> None:
    """Function names and the drawn parameters differ across draws of a family."""
    for family in FAMILIES:
        samples = draws(family, 40, tag="f")
        assert len({s.entry_point for s in samples}) >= 3, family.name
        keys = {params_key(family.name, s.params) for s in samples}
        assert len(keys) >= 20, family.name


def test_deterministic() -> None:
    """The same seed gives the same sample; the same parameters give the same hidden tests."""
    for family in FAMILIES:
        a = family.sample(random.Random("same"))
        b = family.sample(random.Random("same"))
        assert a == b
        by_key: dict[str, str | None] = {}
        for sample in draws(family, 60, tag="d"):
            key = params_key(family.name, sample.params)
            assert by_key.setdefault(key, sample.tests) == sample.tests


# Independent implementations of what each family's prompt asks for, from its parameters.


def _caesar(p: dict[str, Any], text: str) -> str:
    k = p["shift"] if p["direction"] == "encode" else -p["shift"]
    low, up = string.ascii_lowercase, string.ascii_uppercase
    table = str.maketrans(low + up, low[k % 26 :] + low[: k % 26] + up[k % 26 :] + up[: k % 26])
    return text.translate(table)


def _char_count(p: dict[str, Any], text: str) -> int:
    kind = p["kind"]
    if kind == "vowels":
        return len(re.findall("[aeiou]", text, re.IGNORECASE))
    if kind == "consonants":
        return len(re.findall("[b-df-hj-np-tv-z]", text, re.IGNORECASE))
    if kind == "digits":
        return len(re.findall("[0-9]", text))
    if kind == "uppercase":
        return len(re.findall("[A-Z]", text))
    return len(re.findall(p["letter"], text, re.IGNORECASE if p["ignore_case"] else 0))


def _word_ops(p: dict[str, Any], text: str) -> str:
    words = re.findall(r"\S+", text)
    mode, sep = p["mode"], p["sep"]
    if mode == "longest":
        return sorted(words, key=lambda w: -len(w))[0] if words else ""
    made = {
        "reverse_order": words[::-1],
        "reverse_each": ["".join(reversed(w)) for w in words],
        "capitalize": [w[0].upper() + w[1:].lower() for w in words],
        "acronym": [w[0].upper() for w in words],
    }[mode]
    return sep.join(made)


def _chunk(p: dict[str, Any], items: list[Any], size: int | None = None) -> list[list[Any]]:
    size = size or p["fixed"]
    out: list[list[Any]] = []
    for start in range(0, len(items), size):
        part = items[start : start + size]
        if len(part) < size and p["tail"] == "drop":
            break
        if len(part) < size and p["tail"] == "pad":
            part = part + [ast.literal_eval(p["fill"])] * (size - len(part))
        out.append(part)
    return out


def _sliding_window(p: dict[str, Any], values: list[int], window: int | None = None) -> list[int]:
    if p["running"]:
        ops: dict[str, Callable[[int, int], int] | None] = {
            "sum": None,
            "max": max,
            "min": min,
            "product": lambda a, b: a * b,
        }
        op = ops[p["op"]]
        return list(accumulate(values, op)) if op else list(accumulate(values))
    w = window or p["window"]
    parts = [values[i : i + w] for i in range(len(values)) if i + w <= len(values)]
    keys: dict[str, Callable[[list[int]], int]] = {
        "sum": sum,
        "max": max,
        "min": min,
        "spread": lambda x: max(x) - min(x),
    }
    key = keys[p["op"]]
    return [key(part) for part in parts]


def _dedupe(p: dict[str, Any], items: list[Any]) -> list[Any]:
    mode, counts = p["mode"], Counter(items)
    if mode == "first":
        return [x for i, x in enumerate(items) if x not in items[:i]]
    if mode == "last":
        return [x for i, x in enumerate(items) if x not in items[i + 1 :]]
    if mode == "casefold":
        return [x for i, x in enumerate(items) if x.lower() not in [y.lower() for y in items[:i]]]
    if mode == "adjacent":
        return [x for i, x in enumerate(items) if items[i - 1 : i] != [x]]
    if mode == "duplicates":
        return [x for i, x in enumerate(items) if counts[x] > 1 and x not in items[:i]]
    return [x for x in items if counts[x] == 1]


def _euclid(a: int, b: int) -> int:
    return a if b == 0 else _euclid(b, a % b)


def _gcd_lcm(p: dict[str, Any], *args: Any) -> Any:
    numbers = list(args[0]) if p["form"] == "list" else list(args)
    op = p["op"]
    if op == "totient":
        return sum(_euclid(k, numbers[0]) == 1 for k in range(1, numbers[0] + 1))
    if op == "lcm_range":
        numbers = list(range(1, numbers[0] + 1))
        op = "lcm"
    if op == "simplify":
        g = _euclid(*numbers)
        return (numbers[0] // g, numbers[1] // g)
    if op == "coprime":
        return _euclid(*numbers) == 1
    if op == "gcd":
        return reduce(_euclid, numbers)
    return reduce(lambda a, b: a * b // _euclid(a, b) if a and b else 0, numbers)


def _fibonacci(p: dict[str, Any], n: int) -> int:
    terms = list(p["start"])
    while len(terms) <= n:
        terms.append(terms[-1] + terms[-2])
    modulus = int(p["modulus"]) if p["modulus"] else 0
    return terms[n] % modulus if modulus else terms[n]


def _sieve(limit: int) -> list[int]:
    flags = [False, False] + [True] * max(0, limit - 1)
    for i in range(2, math.isqrt(limit) + 1):
        if flags[i]:
            flags[i * i :: i] = [False] * len(flags[i * i :: i])
    return [i for i, flag in enumerate(flags[: limit + 1]) if flag]


def _primes(p: dict[str, Any], *args: int) -> Any:
    mode, n = p["mode"], args[0]
    below = [q for q in _sieve(max(n, 2) + 1) if q < n or (p["inclusive"] and q == n)]
    if mode == "is_prime":
        return n in _sieve(max(n, 2))
    if mode == "list":
        return below
    if mode == "count":
        return len(below)
    if mode == "sum":
        return sum(below)
    if mode == "nth":
        return _sieve(10_000)[n - 1]
    if mode == "next":
        return next(q for q in _sieve(2 * max(n, 2) + 10) if q > n)
    if mode == "between":
        return [q for q in _sieve(max(args[1], 2)) if n <= q <= args[1]]
    factors = [q for q in _sieve(n) for k in range(1, 20) if n % q**k == 0]
    if mode == "largest":
        return max(factors)
    return sorted(set(factors)) if p["distinct"] else sorted(factors)


def _parse_pairs(p: dict[str, Any], text: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for pair in re.split(re.escape(p["pair_sep"]), text):
        if pair.strip():
            key, value = [*pair.split(p["kv_sep"], 1), ""][:2]
            value = value.strip()
            converted = p["convert"] and re.fullmatch("[0-9]+", value)
            result[key.strip()] = int(value) if converted else value
    return result


DURATIONS = {
    "hms": {"h": 3600, "m": 60, "s": 1},
    "dhms": {"d": 86400, "h": 3600, "m": 60, "s": 1},
    "hm": {"h": 60, "m": 1},
    "dh": {"d": 24, "h": 1},
    "ms": {"m": 60, "s": 1},
    "wd": {"w": 7, "d": 1},
}


def _durations(p: dict[str, Any], value: Any) -> Any:
    units = DURATIONS[p["units"]]
    if p["direction"] == "parse":
        return sum(int(a) * units[u] for a, u in re.findall(r"(\d+) ?([a-z])", value))
    parts = []
    for unit, size in units.items():
        if value // size:
            parts.append(f"{value // size}{unit}")
        value %= size
    return p["sep"].join(parts) or f"0{list(units)[-1]}"


def _roman(p: dict[str, Any], value: Any) -> Any:
    symbols = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
    if p["direction"] == "to_int":
        text = value.upper()
        total = sum(symbols[ch] for ch in text)
        for pair in ("IV", "IX", "XL", "XC", "CD", "CM"):
            total -= 2 * symbols[pair[0]] * text.count(pair)
        return total
    thousands, hundreds, tens, ones = (value // 10**k % 10 for k in (3, 2, 1, 0))
    digits = ["", "0", "00", "000", "01", "1", "10", "100", "1000", "02"]
    out = "M" * thousands
    places = (("C", "D", "M"), ("X", "L", "C"), ("I", "V", "X"))
    for digit, (one, five, ten) in zip((hundreds, tens, ones), places, strict=True):
        out += digits[digit].replace("0", one).replace("1", five).replace("2", ten)
    return out.lower() if p["lower"] else out


ORACLES: dict[str, Callable[..., Any]] = {
    "caesar_shift": _caesar,
    "char_count": _char_count,
    "word_ops": _word_ops,
    "chunk_list": _chunk,
    "sliding_window": _sliding_window,
    "dedupe_list": _dedupe,
    "gcd_lcm": _gcd_lcm,
    "fibonacci": _fibonacci,
    "primes": _primes,
    "parse_pairs": _parse_pairs,
    "durations": _durations,
    "roman_numerals": _roman,
}


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_hidden_tests_agree_with_an_independent_implementation(name: str) -> None:
    """Every expected value of the hidden tests matches a second implementation of the spec."""
    family = BY_NAME[name]
    oracle = ORACLES[name]
    for sample in draws(family, 30, tag="o"):
        assert sample.tests is not None and sample.entry_point is not None
        function = load_function(sample.reference, sample.entry_point)
        for args, expected in cases(sample.tests):
            assert oracle(sample.params, *args) == expected, (sample.params, args)
            assert function(*args) == expected
