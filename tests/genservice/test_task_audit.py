"""`genservice validate-tasks`: sound tasks pass; broken ones are listed with a reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PLATE = (
    "import cadquery as cq\n"
    "width = 40.0\n"
    "result = cq.Workplane().box(width, 30, 5).faces('>Z').workplane().hole(6)\n"
)
SQUARE = "def square(x):\n    return x * x\n"
SQUARE_TESTS = (
    "def check(candidate):\n    assert candidate(3) == 9\n    assert candidate(-2) == 4\n"
)

TASKS = [
    {
        "id": "plate-ok",
        "domain": "cad",
        "prompt": "a 40x30x5 plate with a 6 mm hole",
        "reference": PLATE,
        "spec": {"bbox_mm": [40, 30, 5], "holes": 1},
        "family": "plate",
        "split": "test",
    },
    {
        "id": "plate-broken-reference",
        "domain": "cad",
        "prompt": "a plate",
        "reference": "import cadquery as cq\nresult = cq.Workplane().box(40, 30\n",
        "spec": {"bbox_mm": [40, 30, 5]},
        "family": "plate",
        "split": "test",
    },
    {
        "id": "cube-too-easy",
        "domain": "cad",
        "prompt": "a 10 mm cube",
        "reference": "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n",
        "family": "cube",
        "split": "test",
    },
    {
        "id": "square-ok",
        "domain": "code",
        "prompt": "square a number",
        "entry_point": "square",
        "reference": SQUARE,
        "tests": SQUARE_TESTS,
        "family": "math",
        "split": "test",
    },
    {
        "id": "square-weak-tests",
        "domain": "code",
        "prompt": "square a number",
        "entry_point": "square",
        "reference": SQUARE,
        "tests": "def check(candidate):\n    candidate(3)\n",
        "family": "math",
        "split": "test",
    },
    {"id": "no-domain", "prompt": "?", "family": "x", "split": "test"},
]


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, dict]]:
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    lines = [json.dumps(task) for task in TASKS] + ["{not json", json.dumps(TASKS[0])]
    path.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "genservice",
            "validate-tasks",
            str(path),
            "--json",
            "--workers",
            "2",
            "--timeout",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    verdicts = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    by_id: dict[str, dict] = {}
    for verdict in verdicts:
        by_id.setdefault(verdict["id"], verdict)
    by_id["__last__"] = verdicts[-1]
    return done.returncode, by_id


def test_broken_tasks_make_the_audit_fail(audit: tuple[int, dict[str, dict]]) -> None:
    code, _ = audit
    assert code == 1


def test_a_sound_cad_task_passes(audit: tuple[int, dict[str, dict]]) -> None:
    assert audit[1]["plate-ok"]["ok"], audit[1]["plate-ok"]["reasons"]


def test_a_reference_that_fails_is_reported(audit: tuple[int, dict[str, dict]]) -> None:
    reasons = " ".join(audit[1]["plate-broken-reference"]["reasons"])
    assert "reference" in reasons


def test_a_task_a_trivial_program_passes_is_reported(audit: tuple[int, dict[str, dict]]) -> None:
    reasons = " ".join(audit[1]["cube-too-easy"]["reasons"])
    assert "trivial program passes (a 10 mm cube)" in reasons


def test_a_sound_code_task_passes(audit: tuple[int, dict[str, dict]]) -> None:
    assert audit[1]["square-ok"]["ok"], audit[1]["square-ok"]["reasons"]


def test_weak_tests_are_reported(audit: tuple[int, dict[str, dict]]) -> None:
    reasons = " ".join(audit[1]["square-weak-tests"]["reasons"])
    assert "trivial program passes" in reasons


def test_schema_errors_malformed_lines_and_duplicates_are_reported(
    audit: tuple[int, dict[str, dict]],
) -> None:
    assert "domain must be one of" in " ".join(audit[1]["no-domain"]["reasons"])
    assert "not JSON" in " ".join(audit[1]["line 7"]["reasons"])
    assert "duplicate id" in " ".join(audit[1]["__last__"]["reasons"])


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "genservice", "validate-tasks", str(tmp_path / "none.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "cannot read" in done.stderr
