"""Python as people write it, through the sandbox: standard-library results, MBPP-style assert
lines, and a time budget that a slow but correct solution fits in."""

from __future__ import annotations

from typing import Any

import pytest

from validators.code.validate import validate_code
from validators.report import Report
from validators.sandbox import SandboxPool

IMPORTS = (
    "import collections, datetime, decimal, fractions, http, math\n"
    "from collections import Counter, OrderedDict, defaultdict, deque, namedtuple\n"
    "from decimal import Decimal\nfrom fractions import Fraction\n"
    "from typing import NamedTuple\n"
)
# (program body returning the value, the test's expression that must hold for `f()`)
STANDARD = {
    "Counter": ("return Counter('hello')", "f() == Counter({'l': 2, 'h': 1, 'e': 1, 'o': 1})"),
    "Counter as a dict": ("return Counter('aab')", "f() == {'a': 2, 'b': 1}"),
    "OrderedDict": ("return OrderedDict([(2, 'b'), (1, 'a')])",
                    "f() == OrderedDict([(2, 'b'), (1, 'a')]) and list(f()) == [2, 1]"),
    "defaultdict(list)": ("d = defaultdict(list); d['k'].append(1); return d",
                          "f() == {'k': [1]} and f()['new'] == []"),
    "defaultdict(lambda)": ("d = defaultdict(lambda: 0); d['k'] += 2; return d",
                            "f() == {'k': 2}"),
    "deque": ("return deque([1, 2, 3], maxlen=3)", "f() == deque([1, 2, 3]) and f().maxlen == 3"),
    "namedtuple": ("P = namedtuple('P', 'x y'); return P(1, 2)",
                   "f() == (1, 2) and f().x == 1 and f()._fields == ('x', 'y')"),
    "typing.NamedTuple": ("class Q(NamedTuple):\n        a: int\n    return Q(3)", "f().a == 3"),
    "Decimal": ("return Decimal('0.1') + Decimal('0.2')", "f() == Decimal('0.3')"),
    "Fraction": ("return Fraction(1, 3) * 3", "f() == 1 and isinstance(f(), Fraction)"),
    "complex": ("return 3 - 4j", "abs(f()) == 5"),
    "datetime": ("return datetime.datetime(2024, 2, 29, 12, 30)",
                 "f().isoformat() == '2024-02-29T12:30:00'"),
    "date": ("return datetime.date(2024, 1, 1) + datetime.timedelta(days=59)",
             "f() == __import__('datetime').date(2024, 2, 29)"),
    "time": ("return datetime.time(23, 59, 1)", "f().second == 1"),
    "timedelta": ("return datetime.timedelta(hours=-1)", "f().total_seconds() == -3600"),
    "frozenset": ("return frozenset({1, 2})", "f() == {1, 2} and isinstance(f(), frozenset)"),
    "bytes and bytearray": ("return [b'ab', bytearray(b'cd')]", "f() == [b'ab', b'cd']"),
    "range": ("return range(0, 10, 3)", "list(f()) == [0, 3, 6, 9]"),
    "standard enum": ("return http.HTTPStatus.NOT_FOUND", "f() == 404 and f().name == 'NOT_FOUND'"),
    "nan and inf": ("return [math.nan, math.inf, -math.inf]",
                    "f()[0] != f()[0] and f()[1:] == [float('inf'), float('-inf')]"),
    "dict views": ("return {'a': 1}.keys()", "f() == {'a'}"),
    "nested": ("return {'n': [Counter('aa')], 't': (Decimal(1),)}",
               "f() == {'n': [{'a': 2}], 't': (1,)}"),
}  # fmt: skip


def judge(pool: SandboxPool, program: str, tests: str, **options: Any) -> Report:
    return validate_code(program, pool, tests=tests, entry_point="f", **options)


def _program(body: str) -> str:
    return IMPORTS + "def f():\n    " + body + "\n"


@pytest.mark.parametrize("label", list(STANDARD))
def test_a_standard_library_value_reaches_the_tests(code_pool: SandboxPool, label: str) -> None:
    body, holds = STANDARD[label]
    tests = IMPORTS + f"def check(candidate):\n    f = candidate\n    assert {holds}\n"
    report = judge(code_pool, _program(body), tests)
    assert report.valid, report.to_dict()
    assert report.checks["hack_scan"].passed


OWN_CLASSES = {
    "a subclass of Counter": ("class Counted(Counter):\n    pass\n", "Counted('aa')"),
    "a class with an honest __eq__": (
        "class Point:\n    def __init__(self, x):\n        self.x = x\n"
        "    def __eq__(self, other):\n"
        "        return isinstance(other, Point) and other.x == self.x\n",
        "Point(1)",
    ),
    "an always-equal object": (
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n",
        "Anything()",
    ),
    "an always-equal named tuple": (
        "class Pair(namedtuple('P', 'x y')):\n    def __eq__(self, other):\n        return True\n",
        "Pair(1, 2)",
    ),
}


@pytest.mark.parametrize("label", list(OWN_CLASSES))
def test_the_programs_own_classes_do_not_cross_and_only_rigged_ones_are_hacks(
    code_pool: SandboxPool, label: str
) -> None:
    definition, value = OWN_CLASSES[label]
    hack = "always-equal" in label
    program = IMPORTS + definition + f"def f():\n    return {value}\n"
    report = judge(code_pool, program, "def test_it():\n    assert f() == f()\n")
    assert not report.valid
    assert report.checks["hack_scan"].passed is not hack
    assert report.reward == 0.0 if hack else report.checks["executes"].passed
    failure = report.checks["tests"].detail["failures"][0]["reason"]
    expected = "claims to equal anything" if hack else "a class the program defines"
    assert expected in failure


MBPP_STYLE = """import math
assert add(1, 2) == 3
total = add(2, 2)
assert total == 4
assert add(2, 3) == 6
assert math.isclose(add(0.1, 0.2), 0.3)
"""


def test_bare_assert_lines_are_each_a_test(code_pool: SandboxPool) -> None:
    program = "def add(a, b):\n    return a + b\n"
    report = validate_code(program, code_pool, tests=MBPP_STYLE, entry_point="add",
                           partial_credit=True)  # fmt: skip
    detail = report.checks["tests"].detail
    assert detail["style"] == "asserts" and (detail["passed"], detail["total"]) == (3, 4)
    assert detail["failures"][0]["name"] == "assert:5"
    assert "assert add(2, 3) == 6" in detail["failures"][0]["reason"]


SLOW_TESTS = "assert f(2.5) == 1\nassert f(0) == 1\nassert f(0) == 1\n"
SLOW = "import time\ndef f(seconds):\n    time.sleep(seconds)\n    return 1\n"


def test_a_slow_test_uses_the_time_the_fast_ones_leave(code_pool: SandboxPool) -> None:
    """6 s for three tests: 2 s each if split evenly, but the first may take 2.5 s."""
    report = validate_code(SLOW, code_pool, tests=SLOW_TESTS, entry_point="f", time_budget_s=6.0)
    assert report.valid, report.to_dict()


def test_a_hang_says_which_test_ran_out_and_the_tests_after_it_still_run(
    code_pool: SandboxPool,
) -> None:
    tests = "assert f(0) == 1\nassert f(1000) == 1\nassert f(0) == 1\n"
    report = validate_code(SLOW, code_pool, tests=tests, entry_point="f", time_budget_s=4.0,
                           partial_credit=True)  # fmt: skip
    detail = report.checks["tests"].detail
    assert (detail["passed"], detail["total"]) == (2, 3)  # the third kept its reserve
    (failure,) = detail["failures"]
    assert failure["name"] == "assert:2" and failure["timeout"]
    assert (
        "did not return within the" in failure["reason"] and "s this test had" in failure["reason"]
    )
    assert report.error is not None and report.error.kind == "timeout"


@pytest.mark.parametrize("budget", [0.0, -1.0, 301.0, float("nan")])
def test_a_time_budget_out_of_range_is_a_clear_error(code_pool: SandboxPool, budget: float) -> None:
    report = validate_code(SLOW, code_pool, tests=SLOW_TESTS, entry_point="f", time_budget_s=budget)
    assert report.error is not None and report.error.kind == "bad_tests"
    assert "time_budget_s" in report.error.message
