"""bench/served_fit.py compares, paired, the highest-matching fit with the earlier start's."""

from __future__ import annotations

import json

from bench.served_fit import chosen, compare


def _start(all_checks: bool, match: float, iou: float) -> dict:
    return {"all_checks": all_checks, "image_match": match, "iou": iou}


def test_both_choices_are_read_from_every_start_s_fit(tmp_path) -> None:
    """A task whose first start fitted to match 0.95 (IoU 0.9) and second to 0.955 (IoU 0.1):
    the highest match serves the second, keeping the earlier start within MARGIN the first;
    a task with one start counts its answer under both rules."""
    assert chosen([_start(True, 0.95, 0.9), _start(True, 0.955, 0.1)], 0.0) == 1
    assert chosen([_start(True, 0.95, 0.9), _start(True, 0.955, 0.1)], 0.02) == 0
    assert chosen([_start(False, 0.99, 0.9), _start(True, 0.80, 0.1)], 0.02) == 1
    assert chosen([_start(True, 0.9, 0.9), _start(True, 0.9, 0.1)], 0.0) == 0, "ties: earlier"
    kept = {"id": "kept", "after_fit": {"iou": 0.1},
            "fit": {"by_start": [_start(True, 0.95, 0.9), _start(True, 0.955, 0.1)]}}  # fmt: skip
    single = {"id": "single", "after_fit": {"iou": 0.5}, "fit": {"starts": 1}}
    (tmp_path / "eval.json").write_text(json.dumps({"tasks": [kept, single]}))
    result = compare(tmp_path)
    assert result["closer"] == 1 and result["further"] == 0
    assert result["changed"] == [{"task": "kept", "highest_match": 0.1, "earlier_start": 0.9}]
    assert result["mean_iou"] == {"highest_match": 0.3, "earlier_start": 0.7}
