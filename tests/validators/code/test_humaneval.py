"""HumanEval through the real sandbox: every canonical solution passes, wrong ones fail."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from validators.code.humaneval import canonical_program, judge_options, load_tasks
from validators.code.validate import validate_code
from validators.report import Report
from validators.sandbox import SandboxPool

TASKS = load_tasks()
BY_ID = {task["task_id"]: task for task in TASKS}


def judge(pool: SandboxPool, task: dict[str, Any], program: str, **options: Any) -> Report:
    return validate_code(
        program, pool, tests=task["test"], entry_point=task["entry_point"], **options
    )


def test_the_bundled_data_has_164_complete_tasks() -> None:
    assert len(TASKS) == 164
    assert TASKS[0]["task_id"] == "HumanEval/0"
    for task in TASKS:
        assert set(task) == {"task_id", "prompt", "entry_point", "canonical_solution", "test"}
        assert "def check(candidate)" in task["test"]
        assert f"def {task['entry_point']}(" in canonical_program(task)


@pytest.mark.slow
def test_every_canonical_solution_passes(code_pool: SandboxPool) -> None:
    with ThreadPoolExecutor(code_pool.size) as threads:
        reports = list(threads.map(lambda t: judge(code_pool, t, canonical_program(t)), TASKS))
    failed = {t["task_id"]: r.to_dict() for t, r in zip(TASKS, reports, strict=True) if not r.valid}
    assert not failed
    assert all(r.reward == 1.0 and r.checks["tests"].score == 1.0 for r in reports)
    assert sum(r.metrics["tests_total"] for r in reports) > 164  # each assertion is a test


@pytest.mark.slow
def test_a_stub_returning_none_fails_every_task(code_pool: SandboxPool) -> None:
    """Every task's tests reject the laziest program with the right name (MBPP is in
    test_mbpp.py): a judge that passed a stub anywhere would reward doing nothing."""

    def stub(task: dict[str, Any]) -> str:
        return f"def {task['entry_point']}(*args, **kwargs):\n    return None\n"

    with ThreadPoolExecutor(code_pool.size) as threads:
        reports = list(threads.map(lambda t: judge(code_pool, t, stub(t)), TASKS))
    passed = [t["task_id"] for t, r in zip(TASKS, reports, strict=True) if r.valid]
    assert not passed


def _replace_body(task: dict[str, Any], body: str) -> str:
    return task["prompt"] + body


MUTANTS = {
    "returns None": ("HumanEval/0", "    return None\n"),
    "pass": ("HumanEval/2", "    pass\n"),
    "off by one": ("HumanEval/23", "    return len(string) - 1\n"),
    "wrong operator": ("HumanEval/53", "    return x - y\n"),
    "echoes its input": ("HumanEval/29", "    return strings\n"),
    "raises": ("HumanEval/12", "    raise ValueError('no idea')\n"),
}


@pytest.mark.parametrize("label", list(MUTANTS))
def test_a_wrong_solution_fails(code_pool: SandboxPool, label: str) -> None:
    task_id, body = MUTANTS[label]
    task = BY_ID[task_id]
    report = judge(code_pool, task, _replace_body(task, body))
    assert not report.valid
    assert report.checks["executes"].passed
    assert report.checks["tests"].score == 0.0 and not report.checks["tests"].passed
    assert report.error is not None and report.error.kind == "tests_failed"
    assert "tests failed" in report.error.message


def test_the_entry_point_replaced_by_pass_does_not_execute(code_pool: SandboxPool) -> None:
    task = BY_ID["HumanEval/4"]
    program = task["prompt"].split(f"def {task['entry_point']}")[0] + "pass\n"
    report = judge(code_pool, task, program)
    assert not report.valid and report.reward == 0.0
    assert report.error is not None and report.error.kind == "missing_entry_point"


def test_partial_credit_is_the_fraction_of_assertions_passed(code_pool: SandboxPool) -> None:
    task = BY_ID["HumanEval/53"]  # add(x, y): 5 fixed assertions and a random loop
    program = task["prompt"] + "    return x + y if x < 5 else 0\n"
    strict = judge(code_pool, task, program)
    partial = judge(code_pool, task, program, partial_credit=True)
    assert strict.checks["tests"].score == 0.0
    total, passed = partial.metrics["tests_total"], partial.metrics["tests_passed"]
    assert 0 < passed < total
    assert partial.checks["tests"].score == pytest.approx(passed / total)
    assert strict.reward < partial.reward < 1.0


def test_the_prompt_as_context_stops_a_redefined_helper(code_pool: SandboxPool) -> None:
    task = BY_ID["HumanEval/32"]  # the test judges find_zero with poly() from the prompt
    program = task["prompt"] + "    return 0.0\n\n\ndef poly(xs, x):\n    return 0.0\n"
    without = judge(code_pool, task, program)
    assert without.valid  # the tests called the program's own poly(): the weakness context fixes
    report = validate_code(program, code_pool, **judge_options(task))
    assert not report.valid and report.checks["tests"].score == 0.0
