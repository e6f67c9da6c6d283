"""A slice of MBPP (tasks 601-974 of the public mbpp.jsonl), shipped with the package.

MBPP ("Mostly Basic Python Problems", Austin et al. 2021, CC BY 4.0; data/README.md) was written
outside this project, so it checks the code judge against Python as people write it: bare
`assert f(x) == y` lines, standard-library values, slow but correct solutions. Each task's tests
are its setup code and its assert lines; the entry point is the function the first assert calls.
"""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path
from typing import Any

from validators.python_source import parse

DATA = Path(__file__).with_name("data") / "mbpp_601_974.jsonl"

# Tasks whose own data is wrong, found by running every canonical solution and a stub that
# returns None through the judge; each is excluded from the figures with its reason.
OWN_OBJECTS = (
    "the tests build objects of a class the solution defines ({}) and pass them in; here the "
    "tests never hold the program's objects (only plain data and standard-library values cross "
    "between the program's process and the judge's), so the task cannot be judged"
)
KNOWN_BROKEN: dict[int, str] = {
    601: OWN_OBJECTS.format("Pair"),
    642: "the expected answer depends on the iteration order of a set of tuples "
    "(tuple(set(sub))), which differs between Python versions: the published solution fails "
    "its own tests on CPython 3.11 run directly, without any judge",
    927: OWN_OBJECTS.format("Node, a binary tree"),
}


@functools.cache
def _rows() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(line) for line in DATA.read_text().splitlines() if line.strip())


def entry_point_of(tests: list[str], code: str) -> str:
    """The function the tests call first among those the solution defines."""
    defined = {node.name for node in ast.walk(parse(code)) if isinstance(node, ast.FunctionDef)}
    for line in tests:
        for node in ast.walk(parse(line)):
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, ast.Name) and called.id in defined:
                return called.id
    raise ValueError("the tests call no function that the solution defines")


def load_tasks() -> list[dict[str, Any]]:
    """Every task: task_id, text, canonical code, tests, entry_point and known_broken (or None)."""
    tasks = []
    for row in _rows():
        setup = str(row.get("test_setup_code") or "")
        tests = "\n".join([setup, *row["test_list"]]).strip() + "\n"
        tasks.append(
            {
                "task_id": int(row["task_id"]),
                "text": str(row["text"]),
                "code": str(row["code"]),
                "tests": tests,
                "entry_point": entry_point_of(row["test_list"], row["code"]),
                "known_broken": KNOWN_BROKEN.get(int(row["task_id"])),
            }
        )
    return tasks


def canonical_program(task: dict[str, Any]) -> str:
    """The task's reference solution, as published."""
    return str(task["code"])


def stub_program(task: dict[str, Any]) -> str:
    """A program that defines the entry point and returns None: it must fail every task."""
    return f"def {task['entry_point']}(*args, **kwargs):\n    return None\n"


def judge_options(task: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of validate_code for a task: its tests and entry point."""
    return {"tests": task["tests"], "entry_point": task["entry_point"]}
