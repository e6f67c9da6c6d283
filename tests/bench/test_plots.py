"""The docs' benchmark plots are drawn from whatever results files exist."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PIL import Image

from bench import plots


def test_plots_come_from_the_results_and_missing_files_are_skipped(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "validators.json").write_text(json.dumps({
        "humaneval": {"pool_tasks_per_s": 20.0, "one_shot_tasks_per_s": 4.0},
        "mbpp": {"pool_tasks_per_s": 25.0, "one_shot_tasks_per_s": 5.0},
        "wire": {"values": 10, "plain_us": 10.0, "standard_us": 13.0},
    }))  # fmt: skip
    out = tmp_path / "img"
    monkeypatch.setattr(sys, "argv", ["plots", "--results", str(results), "--out", str(out)])
    plots.main()
    drawn = sorted(p.name for p in out.iterdir())
    assert drawn == ["code-judge-throughput.png", "wire-cost.png"]
    assert all(Image.open(out / name).size[0] > 300 for name in drawn)
    (results / "validators.json").unlink()
    plots.main()
    assert "skipped validators.json" in capsys.readouterr().out
