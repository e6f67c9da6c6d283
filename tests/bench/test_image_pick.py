"""bench.image_pick: the check's pick among look-alikes, against the oracle and the gallery."""

from __future__ import annotations

import pytest

from bench.image_pick import _rank_correlation, pick, summarise


def _found(*rows: tuple[bool, float, float]) -> list[dict]:
    return [{"reference": r, "design": "d", "iou": iou, "score": score} for r, iou, score in rows]


def test_the_pick_is_the_best_scored_look_alike_never_the_pictured_part() -> None:
    found = _found((True, 1.0, 0.95), (False, 0.3, 0.90), (False, 0.8, 0.85), (False, 0.5, 0.2))
    outcome = pick({"id": "t"}, found)
    assert outcome["picked_iou"] == 0.3  # the check's choice, though a closer part was there
    assert outcome["oracle_iou"] == 0.8 and outcome["first_iou"] == 0.3
    assert outcome["reference_is_best"] and not outcome["picked_is_oracle"]


def test_a_look_alike_scoring_above_the_pictured_part_is_counted() -> None:
    outcome = pick({"id": "t"}, _found((True, 1.0, 0.8), (False, 0.9, 0.85)))
    assert not outcome["reference_is_best"] and outcome["picked_is_oracle"]


def test_rank_correlation_shares_ranks_on_ties_and_needs_spread() -> None:
    assert _rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert _rank_correlation([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert _rank_correlation([1, 1, 2], [5, 5, 9]) == pytest.approx(1.0)
    assert _rank_correlation([1, 1, 1], [1, 2, 3]) is None


def test_the_summary_reports_shares_and_medians_over_pictures() -> None:
    picks = [
        pick({"id": "a"}, _found((True, 1.0, 0.9), (False, 0.2, 0.5), (False, 0.6, 0.4))),
        pick({"id": "b"}, _found((True, 1.0, 0.7), (False, 0.8, 0.9), (False, 0.1, 0.3))),
    ]
    summary = summarise(picks)
    assert summary["pictures"] == 2 and summary["reference_is_best"] == 0.5
    assert summary["picked_iou_median"] == pytest.approx(0.5)  # 0.2 and 0.8
    assert summary["oracle_iou_median"] == pytest.approx(0.7)  # 0.6 and 0.8
    assert summary["picked_is_oracle"] == 0.5
