"""The `genservice validate` command, run as a user runs it: a subprocess with exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, expectation
from validators.report import Report

ROOT = Path(__file__).resolve().parents[2]
PLATE = SAMPLES / "mounting_plate_rarray.py"  # has a `thickness = 8.0` parameter
SHELL = SAMPLES / "shelled_enclosure.py"


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "genservice.cli", *args]


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENSERVICE_")}
    env["GENSERVICE_SANDBOX_WORKERS"] = "1"
    return env


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, subprocess.CompletedProcess]]:
    """The runs that start a sandbox pool (a few seconds each), started together."""
    work = tmp_path_factory.mktemp("cli")
    invalid = work / "invalid.py"
    invalid.write_text("result = 42\n")
    folder = work / "folder"
    folder.mkdir()
    for sample in (PLATE, SHELL):
        shutil.copy(sample, folder / sample.name)
    commands = {
        "table": _command("validate", str(PLATE)),
        "param": _command("validate", "--json", "--param", "thickness=4", str(PLATE)),
        "invalid": _command("validate", "--json", str(invalid)),
        "folder": _command("validate", "--json", str(folder)),
        "asked": _command("validate", "--json", "--request", "a plate 40 mm tall", str(PLATE)),
    }
    started = {
        name: subprocess.Popen(
            command,
            cwd=ROOT,
            env=_environment(),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name, command in commands.items()
    }
    done = {}
    try:
        for name, process in started.items():
            stdout, stderr = process.communicate(timeout=120)
            done[name] = subprocess.CompletedProcess(
                process.args, process.returncode, stdout, stderr
            )
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    yield done


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(*args), cwd=ROOT, env=_environment(), text=True, capture_output=True, timeout=60
    )


def test_a_valid_script_exits_0_with_a_table(runs: dict) -> None:
    run = runs["table"]
    assert run.returncode == 0, run.stderr
    assert "VALID" in run.stdout and "INVALID" not in run.stdout
    for check in ("executes", "solid", "brep_valid", "watertight", "volume", "bbox"):
        assert check in run.stdout
    assert "volume 73515.65 mm³" in run.stdout
    assert "thickness=8.0" in run.stdout


def test_json_output_is_a_report_and_param_changes_the_volume(runs: dict) -> None:
    run = runs["param"]
    assert run.returncode == 0, run.stderr
    report = Report.from_dict(json.loads(run.stdout))
    assert report.valid
    # Halving the plate's thickness halves its volume.
    assert report.metrics["volume_mm3"] == pytest.approx(
        expectation(PLATE)["volume_mm3"] / 2, rel=1e-4
    )
    assert report.metrics["bbox_mm"] == pytest.approx([120, 80, 4])
    assert report.parameters["thickness"]["value"] == 4.0


def test_an_invalid_script_exits_1(runs: dict) -> None:
    run = runs["invalid"]
    assert run.returncode == 1, run.stderr
    report = Report.from_dict(json.loads(run.stdout))
    assert not report.valid
    assert report.error is not None and report.error.kind == "result_type"


def test_a_directory_gives_one_json_line_per_file(runs: dict) -> None:
    run = runs["folder"]
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 2
    by_name = {
        Path(row["file"]).name: Report.from_dict(row["report"]) for row in map(json.loads, lines)
    }
    assert sorted(by_name) == sorted([PLATE.name, SHELL.name])
    for sample in (PLATE, SHELL):
        report = by_name[sample.name]
        assert report.valid
        assert report.metrics["volume_mm3"] == pytest.approx(
            expectation(sample)["volume_mm3"], rel=1e-3
        )


def test_a_request_checks_the_part_against_what_its_words_ask(runs: dict) -> None:
    run = runs["asked"]
    assert run.returncode == 1, run.stderr
    report = Report.from_dict(json.loads(run.stdout))
    assert not report.valid and report.metrics["geometry_sound"]
    assert report.error is not None
    assert report.error.message.endswith("not as asked: height 8 mm, asked 40 mm")


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "no/such/script.py"),
        ("validate", "--param", "thickness", str(PLATE)),
        ("validate", "--param", "2x=1", str(PLATE)),
    ],
    ids=["missing file", "param without =", "param name not an identifier"],
)
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    run = _run(*args)
    assert run.returncode == 2
    assert "error" in run.stderr
    assert run.stdout == ""


def test_help_exits_0() -> None:
    run = _run("--help")
    assert run.returncode == 0
    assert "validate" in run.stdout
