"""bench.fit_reach: how far the fit moves the closest look-alike toward the pictured part."""

from __future__ import annotations

from bench.fit_reach import reach


def _row(start: float, **fitted: float) -> dict:
    fits = {r.lstrip("r"): {"iou": iou, "seconds": 2.0} for r, iou in fitted.items()}
    started = {"start_iou": start, "fits": fits}
    return {"id": "t", "oracle": started, "pick": started}


def test_reach_counts_fits_that_came_closer_went_further_or_reached_the_part() -> None:
    rows = [_row(0.5, r3=0.9), _row(0.7, r3=0.6), _row(0.8, r3=0.805), _row(0.2, r3=0.3)]
    summary = reach(rows, 3)
    assert summary["pictures"] == 4 and summary["rounds"] == 3
    assert (summary["closer"], summary["further"], summary["reach_close"]) == (2, 1, 1)
    assert summary["start_iou_median"] == 0.6 and summary["fitted_iou_median"] == 0.7025
    assert summary["seconds_mean"] == 2.0


def test_reach_reads_the_fits_of_the_rounds_asked() -> None:
    rows = [_row(0.5, r3=0.6, r6=0.9)]
    assert reach(rows, 6)["fitted_iou_median"] == 0.9 and reach(rows, 3)["reach_close"] == 0


def test_reach_reads_the_start_asked() -> None:
    row = _row(0.5, r3=0.9)
    row["pick"] = {"start_iou": 0.2, "fits": {"3": {"iou": 0.3, "seconds": 1.0}}}
    assert reach([row], 3, "pick")["fitted_iou_median"] == 0.3
    assert reach([row], 3, "oracle")["fitted_iou_median"] == 0.9
