"""`genservice validate --domain code`: a function judged by hidden tests, from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "genservice", "validate", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_code_domain_scores_a_function_and_rejects_a_hack(tmp_path: Path) -> None:
    tests = tmp_path / "tests.py"
    tests.write_text(TESTS)
    good = tmp_path / "good.py"
    good.write_text("def add(a, b):\n    return a + b\n")
    hack = tmp_path / "hack.py"
    hack.write_text("import sys\nsys.exit(0)\ndef add(a, b):\n    return 0\n")
    done = run(
        str(good),
        str(hack),
        "--domain",
        "code",
        "--tests",
        str(tests),
        "--entry-point",
        "add",
        "--json",
        "--workers",
        "1",
    )
    assert done.returncode == 1, done.stderr
    reports = {Path(r["file"]).name: r["report"] for r in map(json.loads, done.stdout.splitlines())}
    assert reports["good.py"]["valid"] and reports["good.py"]["checks"]["tests"]["score"] == 1.0
    assert not reports["hack.py"]["valid"] and reports["hack.py"]["reward"] == 0.0


def test_code_domain_needs_tests_and_entry_point(tmp_path: Path) -> None:
    program = tmp_path / "f.py"
    program.write_text("def f():\n    return 1\n")
    done = run(str(program), "--domain", "code")
    assert done.returncode == 2 and "--tests" in done.stderr
