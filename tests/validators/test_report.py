"""Report: JSON round trip, clamped scores, null for non-finite numbers, immutability, reward."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from validators.report import Check, ErrorInfo, Report
from validators.reward import DEFAULT_WEIGHTS, INVALID_REWARD, composite_reward


def _report() -> Report:
    return Report.build(
        valid=False,
        reward=0.4,
        checks={
            "executes": Check(1.0, True, {"status": "ok"}),
            "spec": Check(
                0.25,
                False,
                {"items": {"holes": {"requested": 4, "measured": 3}}, "values": [1.5, 2]},
            ),
        },
        error=ErrorInfo("check_failed", "failed checks: spec", 7),
        metrics={"volume_mm3": 123.5, "bbox_mm": [1.0, 2.0, 3.0], "kind": "part", "solids": 1},
        parameters={"width": {"value": 4.0, "type": "float", "line": 2}},
    )


def test_json_round_trip_gives_an_equal_report() -> None:
    report = _report()
    again = Report.from_dict(json.loads(report.to_json(indent=2)))
    assert again == report
    assert again.to_dict() == report.to_dict()
    assert again.error == ErrorInfo("check_failed", "failed checks: spec", 7)
    assert again.checks["spec"].detail["items"]["holes"]["measured"] == 3


def test_round_trip_without_error_keeps_none() -> None:
    report = Report.build(True, 1.0, {"executes": Check(1.0, True)})
    data = json.loads(report.to_json())
    assert data["error"] is None
    assert Report.from_dict(data) == report


@pytest.mark.parametrize(
    ("score", "expected"),
    [(1.7, 1.0), (-0.3, 0.0), (0.42, 0.42), (math.nan, 0.0), (np.float32(2.0), 1.0), (True, 1.0)],
)
def test_check_scores_are_clamped_to_the_unit_interval(score: float, expected: float) -> None:
    check = Check(score, True)
    assert check.score == pytest.approx(expected)
    assert type(check.score) is float


@pytest.mark.parametrize(("reward", "expected"), [(3.0, 1.0), (-1.0, 0.0), (0.5, 0.5)])
def test_report_reward_is_clamped(reward: float, expected: float) -> None:
    assert Report.build(True, reward, {}).reward == expected


def test_non_finite_metrics_become_null_in_json() -> None:
    report = Report.build(
        True,
        1.0,
        {"volume": Check(1.0, True, {"volume_mm3": math.inf})},
        metrics={
            "iou": math.nan,
            "chamfer": -math.inf,
            "box": [1.0, math.inf],
            "nested": {"x": np.float32("nan"), "y": np.float64(2.5)},
            "n": np.int64(3),
        },
        parameters={"p": {"value": math.nan}},
    )
    text = report.to_json()  # strict JSON: NaN/Infinity would raise here
    data = json.loads(text)
    assert data["metrics"] == {
        "iou": None,
        "chamfer": None,
        "box": [1.0, None],
        "nested": {"x": None, "y": 2.5},
        "n": 3,
    }
    assert data["checks"]["volume"]["detail"] == {"volume_mm3": None}
    assert data["parameters"] == {"p": {"value": None}}


def test_report_and_check_are_frozen() -> None:
    report = _report()
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.valid = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.checks["spec"].score = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        report.checks["new"] = Check(1.0, True)  # type: ignore[index]
    with pytest.raises(TypeError):
        report.metrics["volume_mm3"] = 0.0  # type: ignore[index]


def test_build_copies_its_inputs() -> None:
    checks = {"executes": Check(1.0, True)}
    metrics = {"volume_mm3": 1.0}
    report = Report.build(True, 1.0, checks, metrics=metrics)
    checks["spec"] = Check(0.0, False)
    metrics["volume_mm3"] = 2.0
    assert list(report.checks) == ["executes"]
    assert report.metrics["volume_mm3"] == 1.0


def test_invalid_programs_get_the_invalid_reward_whatever_their_scores() -> None:
    perfect = {name: Check(1.0, True) for name in DEFAULT_WEIGHTS}
    assert composite_reward(perfect, valid=False) == INVALID_REWARD
    assert composite_reward(perfect, valid=True) == 1.0


def test_absent_checks_do_not_count() -> None:
    checks = {"executes": Check(1.0, True), "spec": Check(0.25, False)}
    expected = (DEFAULT_WEIGHTS["executes"] * 1.0 + DEFAULT_WEIGHTS["spec"] * 0.25) / (
        DEFAULT_WEIGHTS["executes"] + DEFAULT_WEIGHTS["spec"]
    )
    assert composite_reward(checks, valid=True) == pytest.approx(expected)
    # An unweighted extra check changes nothing either.
    extra = {**checks, "unrelated": Check(0.0, False)}
    assert composite_reward(extra, valid=True) == pytest.approx(expected)


def test_custom_weights_are_used() -> None:
    checks = {"a": Check(1.0, True), "b": Check(0.0, False)}
    assert composite_reward(checks, valid=True, weights={"a": 3.0, "b": 1.0}) == pytest.approx(0.75)
