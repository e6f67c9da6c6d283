"""training.soup: a fine-tune's weights moved part of the way back to its start model's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from training.soup import main, soup


def _model(folder: Path, weight: float, extra: dict | None = None) -> Path:
    folder.mkdir()
    tensors = {"layer.weight": torch.full((2, 3), weight), "position_ids": torch.arange(4)}
    save_file({**tensors, **(extra or {})}, folder / "model.safetensors")
    (folder / "training_summary.json").write_text(json.dumps({"steps": 10}))
    (folder / "look_alike.json").write_text("{}")
    return folder


def test_the_soup_lies_on_the_line_between_the_two_models_and_keeps_the_tuned_files(
    tmp_path: Path,
) -> None:
    tuned, start = _model(tmp_path / "tuned", 3.0), _model(tmp_path / "start", 1.0)
    for share, expected in ((0.0, 1.0), (0.5, 2.0), (1.0, 3.0)):
        out = soup(tuned, start, share, tmp_path / f"soup{share}")
        weights = load_file(out / "model.safetensors")
        assert torch.allclose(weights["layer.weight"], torch.full((2, 3), expected))
        assert torch.equal(weights["position_ids"], torch.arange(4))  # integers are not mixed
        assert (out / "look_alike.json").is_file()  # the tuned model's marks travel
        summary = json.loads((out / "training_summary.json").read_text())
        assert summary["steps"] == 10 and summary["soup"]["share"] == share
        assert summary["soup"]["start"] == str(start)
        assert summary["soup"]["output"] == str(out)


def test_models_that_do_not_match_or_a_bad_share_are_refused(tmp_path: Path, capsys) -> None:
    tuned, start = _model(tmp_path / "tuned", 3.0), _model(tmp_path / "start", 1.0)
    other = _model(tmp_path / "other", 1.0, {"more.weight": torch.zeros(1)})
    with pytest.raises(ValueError, match="different tensors"):
        soup(tuned, other, 0.5, tmp_path / "out")
    with pytest.raises(ValueError, match="between 0 and 1"):
        soup(tuned, start, 1.5, tmp_path / "out")
    with pytest.raises(ValueError, match="new directory"):
        soup(tuned, start, 0.5, tuned)
    assert load_file(tuned / "model.safetensors")["layer.weight"][0, 0] == 3.0  # untouched
    with pytest.raises(SystemExit) as exit_:
        main([str(tuned), str(tmp_path / "missing"), "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2 and "holds no model.safetensors" in capsys.readouterr().err
