"""The before/after table: paired per-seed differences, noise, regressions per family."""

from __future__ import annotations

import json
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
