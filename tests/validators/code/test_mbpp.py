"""An external suite through the judge: MBPP tasks 601-974, canonical solutions and stubs."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from validators.code import mbpp
from validators.code.validate import validate_code
from validators.report import Report
from validators.sandbox import SandboxPool

TASKS = mbpp.load_tasks()


def judge(pool: SandboxPool, task: dict[str, Any], program: str) -> Report:
    return validate_code(program, pool, **mbpp.judge_options(task))


def test_the_shipped_slice_is_tasks_601_to_974_with_attribution() -> None:
    assert [t["task_id"] for t in TASKS] == list(range(601, 975))
    for task in TASKS:
        assert task["tests"].count("assert ") >= 3
        assert f"def {task['entry_point']}" in task["code"]
    licence = (mbpp.DATA.parent / "README.md").read_text()
    assert "CC BY 4.0" in licence and "Austin" in licence
    assert set(mbpp.KNOWN_BROKEN) <= {t["task_id"] for t in TASKS}


@pytest.mark.slow
def test_canonical_solutions_pass_and_stubs_fail_on_every_task(code_pool: SandboxPool) -> None:
    def both(task: dict[str, Any]) -> tuple[Report, Report]:
        return (
            judge(code_pool, task, mbpp.canonical_program(task)),
            judge(code_pool, task, mbpp.stub_program(task)),
        )

    with ThreadPoolExecutor(code_pool.size) as threads:
        results = list(threads.map(both, TASKS))
    rejected = {
        t["task_id"]: c.error.message if c.error else "?"
        for t, (c, _) in zip(TASKS, results, strict=True)
        if not c.valid
    }
    # Exactly the tasks listed as broken, each for its stated reason; none is called a hack.
    assert set(rejected) == set(mbpp.KNOWN_BROKEN), rejected
    assert (len(TASKS) - len(rejected)) / len(TASKS) >= 0.99
    unscanned = {
        t["task_id"]: c.error.message if c.error else "?"
        for t, (c, _) in zip(TASKS, results, strict=True)
        if "hack_scan" not in c.checks or not c.checks["hack_scan"].passed
    }
    assert not unscanned, unscanned  # says which task and why, should a run end early
    stubs_passing = [t["task_id"] for t, (_, s) in zip(TASKS, results, strict=True) if s.valid]
    assert not stubs_passing
    # The assert lines are each their own test, and the stubs fail them on the tests' words.
    assert all(c.metrics["tests_total"] >= 3 for c, _ in results)


@pytest.mark.parametrize("task_id", [653, 902])  # they return a defaultdict and a Counter
def test_genservice_validate_judges_an_mbpp_task(tmp_path: Path, task_id: int) -> None:
    task = next(t for t in TASKS if t["task_id"] == task_id)
    (tmp_path / "tests.py").write_text(task["tests"])
    (tmp_path / "canonical.py").write_text(mbpp.canonical_program(task))
    (tmp_path / "stub.py").write_text(mbpp.stub_program(task))
    exits = {}
    for name in ("canonical", "stub"):
        done = subprocess.run(
            [sys.executable, "-m", "genservice", "validate", str(tmp_path / f"{name}.py"),
             "--domain", "code", "--tests", str(tmp_path / "tests.py"),
             "--entry-point", task["entry_point"], "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        exits[name] = (done.returncode, json.loads(done.stdout))
    assert exits["canonical"][0] == 0, exits["canonical"][1]
    assert exits["stub"][0] == 1 and exits["stub"][1]["error"]["kind"] == "tests_failed"
    assert exits["canonical"][1]["checks"]["tests"]["detail"]["style"] == "asserts"
