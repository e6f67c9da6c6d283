"""The before/after table: paired per-seed differences, noise, regressions per family."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from training.compare import table


def _cad(value: float, invalid: float = 0.1) -> dict:
    one = {
        "invalidity": invalid,
        "spec_adherence": value,
        "all_checks": value,
        "iou_all_mean": 0.8,
        "iou_valid_median": 0.99,
    }
    return {"tasks": 3, "pass@1": one, "best_of_4": {"invalidity": 0.0, "spec_adherence": value}}


def _eval(root: Path, name: str, invalid: float, checks: dict[str, float], code: float) -> Path:
    code_group = {"tasks": 3, "code_pass@1": code, "code_pass@4": code}
    summary = {
        "domains": {"cad": _cad(sum(checks.values()) / len(checks), invalid), "code": code_group},
        "families": {**{f: _cad(v) for f, v in checks.items()}, "primes": code_group},
    }
    folder = root / name
    folder.mkdir()
    (folder / "eval.json").write_text(json.dumps({"summary": summary}))
    return folder


def test_changes_beyond_noise_are_marked_and_regressions_named(tmp_path: Path):
    before = [
        _eval(tmp_path, f"b{s}", 0.10 + 0.01 * s, {"flange": 0.5, "gear": 0.8}, 0.2)
        for s in range(3)
    ]
    after = [
        _eval(tmp_path, f"a{s}", 0.02 + 0.01 * s, {"flange": 0.9, "gear": 0.4 + 0.01 * s}, 0.2)
        for s in range(3)
    ]
    text = table(before, after)
    assert "| cad | invalid@1 | 11.0 ± 1.0 | 3.0 ± 1.0 | -8.0 ± 0.0 ✔ |" in text
    assert "| flange | all checks@1 | 50.0 ± 0.0 | 90.0 ± 0.0 | +40.0 ± 0.0 ✔ |" in text
    assert "| primes | pass@1 | 20.0 ± 0.0 | 20.0 ± 0.0 | +0.0 ± 0.0 |" in text
    assert "Families worse beyond noise: gear." in text


def test_noisy_differences_are_not_claimed(tmp_path: Path):
    codes = [(0.1, 0.5), (0.5, 0.1), (0.2, 0.3)]
    before = [_eval(tmp_path, f"b{s}", 0.1, {"flange": 0.5}, b) for s, (b, _) in enumerate(codes)]
    after = [_eval(tmp_path, f"a{s}", 0.1, {"flange": 0.5}, a) for s, (_, a) in enumerate(codes)]
    text = table(before, after)
    rows = text.split("\n\n", 1)[1]  # the legend names the marks
    assert "| code | pass@1 |" in rows and "✔" not in rows and "✘" not in rows
    with pytest.raises(ValueError, match="same number"):
        table(before, after[:2])


def _eval_with_tasks(root: Path, name: str, per_task: list[float]) -> Path:
    """An eval directory for one CAD family whose tasks pass every check at these rates."""
    folder = _eval(root, name, 0.1, {"flange": statistics.fmean(per_task)}, 0.2)
    data = json.loads((folder / "eval.json").read_text())
    data["tasks"] = [
        {
            "id": f"flange-{i}",
            "family": "flange",
            "candidates": [{"all_checks": k < round(4 * rate)} for k in range(4)],
        }
        for i, rate in enumerate(per_task)
    ]
    (folder / "eval.json").write_text(json.dumps(data))
    return folder


def test_task_test_separates_one_flipped_task_from_a_family_wide_fall(tmp_path: Path):
    before = [_eval_with_tasks(tmp_path, f"b{s}", [1, 1, 1, 0.5, 0.5, 0.5]) for s in range(3)]
    one_task = [_eval_with_tasks(tmp_path, f"o{s}", [0, 1, 1, 0.5, 0.5, 0.5]) for s in range(3)]
    text = table(before, one_task)
    # The same task lost on every seed: the seed test calls it a regression of these tasks...
    assert "Families worse beyond noise: flange." in text
    # ...the task test sees one task of six move, within the family's task-to-task spread.
    assert "| -16.7 ± 16.7 (6) |" in text
    assert "Families worse beyond noise by the task test: none." in text

    everywhere = [
        _eval_with_tasks(tmp_path, f"e{s}", [0.5, 0.75, 0.5, 0, 0.25, 0]) for s in range(3)
    ]
    text = table(before, everywhere)
    assert "Families worse beyond noise by the task test: flange." in text
    assert "(6) ✘ |" in text
