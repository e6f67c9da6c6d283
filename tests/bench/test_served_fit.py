"""bench/served_fit.py compares, paired, the fit serving chose with the highest-matching one."""

from __future__ import annotations

import json

from bench.served_fit import compare, highest_match


def _start(all_checks: bool, match: float, iou: float) -> dict:
    return {"all_checks": all_checks, "image_match": match, "iou": iou}


def test_the_old_choice_is_read_from_every_start_s_fit(tmp_path) -> None:
    """A run where serving kept the first start (match 0.95, IoU 0.9) over a second one that
    matched 0.955 (IoU 0.1): the highest match would have served the second; a task with one
    start counts its answer under both rules."""
    assert highest_match([_start(True, 0.95, 0.9), _start(True, 0.955, 0.1)]) == 1
    assert highest_match([_start(False, 0.99, 0.9), _start(True, 0.80, 0.1)]) == 1
    assert highest_match([_start(True, 0.9, 0.9), _start(True, 0.9, 0.1)]) == 0, "ties: earlier"
    kept = {"id": "kept", "after_fit": {"iou": 0.9},
            "fit": {"by_start": [_start(True, 0.95, 0.9), _start(True, 0.955, 0.1)]}}  # fmt: skip
    single = {"id": "single", "after_fit": {"iou": 0.5}, "fit": {"starts": 1}}
    (tmp_path / "eval.json").write_text(json.dumps({"tasks": [kept, single]}))
    result = compare(tmp_path)
    assert result["closer"] == 1 and result["further"] == 0
    assert result["changed"] == [{"task": "kept", "highest_match": 0.1, "served": 0.9}]
    assert result["mean_iou"] == {"highest_match": 0.3, "served": 0.7}
