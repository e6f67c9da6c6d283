"""validate_code: errors a person can act on, pytest-style tests, plain data, budgets, records."""

from __future__ import annotations

from typing import Any

import pytest

from validators.code.guest import hash_tests, plan_tests
from validators.code.validate import validate_code
from validators.sandbox import Limits, OneShot, SandboxPool, SandboxResult, Status

ADD = "def add(a, b):\n    return a + b\n"
CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"


class Recorder:
    """An executor that returns a prepared result (or raises) and remembers what it was sent."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.sent: list[Any] = []

    def run(
        self,
        runner: str,
        program: str,
        options: dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> SandboxResult:
        self.sent.append(options)
        return self.make(options)


def never(options: Any) -> SandboxResult:
    raise AssertionError("the sandbox must not be used")


def test_a_syntax_error_is_reported_with_its_line_without_running() -> None:
    report = validate_code("def add(a, b):\n    return (a +\n", Recorder(never), tests=CHECK,
                           entry_point="add")  # fmt: skip
    assert not report.valid and report.reward == 0.0
    assert report.error is not None and report.error.kind == "syntax" and report.error.line == 2
    assert not report.checks["executes"].passed and "hack_scan" not in report.checks


@pytest.mark.parametrize(
    ("tests", "entry_point", "style"),
    [("x = 1\n", "add", "auto"), (CHECK, "add", "nose"), (CHECK, "1add", "auto"),
     ("def check(:\n", "add", "auto"), ("def test_a():\n    pass\n", "add", "check")],
)  # fmt: skip
def test_unusable_tests_are_reported_not_raised(tests: str, entry_point: str, style: str) -> None:
    report = validate_code(ADD, Recorder(never), tests=tests, entry_point=entry_point, style=style)
    assert not report.valid and report.error is not None and report.error.kind == "bad_tests"


def test_the_validator_never_raises() -> None:
    def broken(options: Any) -> SandboxResult:
        raise RuntimeError("the pool fell over")

    report = validate_code(ADD, Recorder(broken), tests=CHECK, entry_point="add")
    assert not report.valid and report.error is not None and report.error.kind == "internal"


def _payload(options: dict[str, Any], tests: list[dict[str, Any]]) -> SandboxResult:
    payload = {
        "tests_sha256": options["tests_sha256"],
        "tests": tests,
        "events": [],
        "load": {"ok": True, "error": None},
        "style": "check",
    }
    return SandboxResult(Status.OK, 0.01, payload=payload)


def test_a_missing_record_is_a_failure() -> None:
    names = plan_tests(CHECK).names
    only_first = Recorder(lambda o: _payload(o, [{"name": names[0], "passed": True}]))
    report = validate_code(ADD, only_first, tests=CHECK, entry_point="add", partial_credit=True)
    assert report.metrics["tests_passed"] == 1 and report.metrics["tests_total"] == 2
    assert report.checks["tests"].detail["failures"][0]["reason"] == "no record of this test"
    assert not report.valid


def test_records_for_other_tests_are_refused() -> None:
    def other(options: dict[str, Any]) -> SandboxResult:
        return _payload({"tests_sha256": hash_tests("other")}, [{"name": "check:2"}])

    report = validate_code(ADD, Recorder(other), tests=CHECK, entry_point="add")
    assert not report.valid and report.error is not None and report.error.kind == "sandbox"


def test_the_tests_travel_with_their_hash(code_pool: SandboxPool) -> None:
    options = {"tests": CHECK, "entry_point": "add", "tests_sha256": "0" * 64}
    result = code_pool.run("code", ADD, options)
    assert result.payload is not None and result.payload["error"]["kind"] == "tests_hash"


@pytest.mark.parametrize(
    ("program", "kind", "line"),
    [
        ("x = 1\ny = 1 / 0\ndef add(a, b):\n    return a + b\n", "exception", 2),
        ("def plus(a, b):\n    return a + b\n", "missing_entry_point", None),
        ("", "missing_entry_point", None),
        ("import time\ntime.sleep(60)\n", "timeout", None),
    ],
)
def test_a_program_that_does_not_load(
    code_pool: SandboxPool, program: str, kind: str, line: int | None
) -> None:
    report = validate_code(program, code_pool, tests=CHECK, entry_point="add",
                           per_test_timeout_s=1.0)  # fmt: skip
    assert not report.valid and report.reward == 0.0
    assert not report.checks["executes"].passed
    assert report.error is not None and (report.error.kind, report.error.line) == (kind, line)


PYTEST_STYLE = """
import pytest
from solution import add


def test_numbers():
    assert add(1, 2) == 3


def test_strings():
    assert add("a", "b") == "ab"


def test_bad_input_raises():
    with pytest.raises(TypeError):
        add("a", 1)


class TestAdd:
    def test_method(self):
        assert add(0, 0) == 0

    def test_fixture(self, tmp_path):
        assert add(0, 0) == 0


async def test_async():
    assert add(1, 1) == 2


def test_missing_function():
    from solution import subtract

    assert subtract(2, 1) == 1
"""


def test_pytest_style_tests(code_pool: SandboxPool) -> None:
    report = validate_code(ADD, code_pool, tests=PYTEST_STYLE, entry_point="add",
                           partial_credit=True)  # fmt: skip
    detail = report.checks["tests"].detail
    assert (detail["style"], detail["total"], detail["passed"]) == ("pytest", 7, 4)
    reasons = {f["name"]: f["reason"] for f in detail["failures"]}
    assert "fixtures are not supported" in reasons["TestAdd.test_fixture"]
    assert "async" in reasons["test_async"]
    assert "no function named `subtract`" in reasons["test_missing_function"]
    assert report.checks["tests"].score == pytest.approx(4 / 7)
    assert report.checks["hack_scan"].passed and report.checks["executes"].passed


def test_a_dying_candidate_cannot_be_caught_as_an_exception(code_pool: SandboxPool) -> None:
    program = (  # an exit with status 3 is a crash, not a hack (and the scan cannot see it)
        "def add(a, b):\n    if a == 'x':\n        getattr(__import__('o' + 's'), '_exit')(3)\n"
        "    return a + b\n"
    )
    tests = (
        "def test_raises():\n    try:\n        add('x', 1)\n    except BaseException:\n"
        "        return\n    assert False\n\n\ndef test_ok():\n    assert add(1, 1) == 2\n"
    )
    report = validate_code(program, code_pool, tests=tests, entry_point="add",
                           partial_credit=True)  # fmt: skip
    failures = report.checks["tests"].detail["failures"]
    assert [f["name"] for f in failures] == ["test_raises"]  # test_ok ran in a fresh process
    assert "status 3" in failures[0]["reason"] and report.checks["hack_scan"].passed
    assert report.checks["executes"].detail["starts"] == 2


def test_plain_data_round_trips_and_arguments_are_mutated_in_place(
    code_pool: SandboxPool,
) -> None:
    program = (
        "def add(items, extra):\n    items.sort()\n    extra['seen'] = True\n"
        "    return (1, 2.5, -0.0, float('nan'), 10 ** 40, b'\\x00\\xff', 2j, None, True,\n"
        "            {(1, 2): frozenset({3})}, {4}, 'é\\udc80', [[]])\n"
    )
    tests = """
import math


def test_round_trip():
    items, extra = [3, 1, 2], {}
    value = add(items, extra)
    assert items == [1, 2, 3] and extra == {"seen": True}
    assert type(value) is tuple and value[:3] == (1, 2.5, 0.0)
    assert math.copysign(1, value[2]) == -1 and math.isnan(value[3])
    assert value[4] == 10 ** 40 and value[5] == bytes([0, 255]) and value[6] == 2j
    assert value[7] is None and value[8] is True
    assert value[9] == {(1, 2): frozenset({3})} and value[10] == {4}
    assert value[11] == "é\\udc80" and value[12] == [[]]
"""
    report = validate_code(program, code_pool, tests=tests, entry_point="add")
    assert report.valid, report.to_dict()


def test_exceptions_of_the_program_reach_the_tests_as_builtin_types(
    code_pool: SandboxPool,
) -> None:
    program = (
        "class Invalid(ValueError):\n    pass\n\n"
        "def add(a, b):\n    if a < 0:\n        raise Invalid('negative')\n    return a + b\n"
    )
    tests = (
        "def check(candidate):\n    try:\n        candidate(-1, 1)\n    except ValueError as exc:\n"
        "        assert str(exc) == 'negative'\n    else:\n        assert False\n"
        "    assert candidate(1, 1) == 3\n"
    )
    report = validate_code(program, code_pool, tests=tests, entry_point="add",
                           partial_credit=True)  # fmt: skip
    detail = report.checks["tests"].detail
    assert (detail["passed"], detail["total"]) == (1, 2)
    assert detail["failures"][0]["reason"] == "assertion failed at line 8: "\
        "assert candidate(1, 1) == 3"  # fmt: skip


def test_a_spent_budget_ends_the_run_with_a_report(code_pool: SandboxPool) -> None:
    program = "def add(a, b):\n    while True:\n        pass\n"
    tests = "".join(f"def test_{i}():\n    assert add({i}, 0) == {i}\n\n" for i in range(6))
    report = validate_code(program, code_pool, tests=tests, entry_point="add",
                           per_test_timeout_s=1.0, time_budget_s=3.0)  # fmt: skip
    reasons = [f["reason"] for f in report.checks["tests"].detail["failures"]]
    assert len(reasons) == 6 and report.checks["executes"].passed  # the judge reported in time
    # Each hang had its fair share of what was left, and said so; the run kept to its budget.
    assert all("s this test had" in reason for reason in reasons), reasons
    assert report.metrics["sandbox_s"] < 3.0 + 3.0
    assert report.error is not None and report.error.kind == "timeout"


def test_a_check_without_assertions_is_one_test(code_pool: SandboxPool) -> None:
    tests = "def check(candidate):\n    candidate(1, 2)\n"
    report = validate_code("def add(a, b):\n    return None\n", code_pool, tests=tests,
                           entry_point="add")  # fmt: skip
    assert report.valid and report.metrics["tests_total"] == 1  # weak tests pass anything


@pytest.mark.slow
def test_pool_and_one_shot_give_the_same_reports(code_pool: SandboxPool) -> None:
    programs = [ADD, "def add(a, b):\n    return a - b\n", "import sys\nsys.exit(0)\n"]
    limits = Limits(wall_s=20.0)
    for program in programs:
        warm = validate_code(program, code_pool, tests=CHECK, entry_point="add", limits=limits)
        cold = validate_code(program, OneShot(), tests=CHECK, entry_point="add", limits=limits)
        reports = [warm.to_dict(), cold.to_dict()]
        for report in reports:
            for key in ("duration_s", "sandbox_s", "peak_memory_mb"):
                report["metrics"].pop(key)
            for failure in report["checks"]["tests"]["detail"].get("failures", []):
                failure.pop("duration_s", None)
        assert reports[0] == reports[1]
