"""The model card states every training stage, its command and the total training time."""

from __future__ import annotations

import json
from pathlib import Path

from training.model_card import write_model_card


def _summary(command: str, minutes: float, start: str | None) -> dict:
    return {
        "command": command,
        "config": {"model": {"init": None if start else {"architecture": "qwen2"}, "from": start}},
        "data": {
            "train_file": "data/corpus/c.jsonl",
            "train_examples": 10,
            "by_domain": {"cad": 10},
            "train_tokens": 1000,
            "reply_tokens": 500,
            "val_examples": 2,
        },
        "model": {"parameters": 5_250_000, "vocab_size": 2048},
        "steps": 100,
        "epochs": 1.0,
        "stopped": "max_minutes",
        "train_time_s": minutes * 60,
        "num_threads": 2,
        "final_train_loss": 0.05,
        "final_val_loss": 0.04,
    }


def test_a_fine_tuned_model_card_lists_both_stages(tmp_path: Path) -> None:
    base = _summary("genservice train sft --config a.yaml", 47.0, None)
    tuned = _summary("genservice train sft --config b.yaml", 40.0, "genservice/models/tiny")
    tuned["base"] = base
    tuned["corpus_command"] = "genservice corpus build --n 40000 --seed 0 --edits 0.5 -o e.jsonl"
    (tmp_path / "training_summary.json").write_text(json.dumps(tuned))
    card = write_model_card(tmp_path, []).read_text()
    assert "stage 1 (from scratch" in card and "stage 2 (continued from the stage-1" in card
    assert "in all: 87.0 minutes" in card
    assert card.index("a.yaml") < card.index("--edits 0.5") < card.index("b.yaml")
    assert "taught it to edit" in card
    assert "made-up word" not in card and "left unsaid" not in card


def test_a_card_says_when_a_stage_read_parts_and_unsaid_defaults(tmp_path: Path) -> None:
    base = _summary("genservice train sft --config a.yaml", 47.0, None)
    tuned = _summary("genservice train sft --config b.yaml", 20.0, "genservice/models/tiny")
    tuned["base"] = base
    tuned["corpus_command"] = (
        "genservice corpus build --n 9 --seed 8 --novel-names 0.3 --unsaid-defaults 0.5 -o c.jsonl"
    )
    (tmp_path / "training_summary.json").write_text(json.dumps(tuned))
    card = write_model_card(tmp_path, []).read_text()
    assert "made-up word" in card
    assert "defaults people leave unsaid" in card and "right angle" in card


def test_a_retrieval_model_card_says_how_examples_reach_the_prompt(tmp_path: Path) -> None:
    summary = _summary("genservice train sft --config a.yaml", 47.0, None)
    summary["data"]["with_retrieved_example"] = 9
    summary["data"]["retrieval"] = {"per_family": 200, "plain_share": 0.1, "seed": 0, "indexed": 55}
    (tmp_path / "training_summary.json").write_text(json.dumps(summary))
    card = write_model_card(tmp_path, []).read_text()
    assert "nearest of 55 solved train tasks" in card
    assert "9 of the 10 training prompts" in card
    plain = _summary("genservice train sft --config a.yaml", 47.0, None)
    (tmp_path / "training_summary.json").write_text(json.dumps(plain))
    assert "solved train tasks" not in write_model_card(tmp_path, []).read_text()


def test_a_vision_language_model_card_says_it_reads_pictures_and_shows_both_modalities(
    tmp_path: Path,
) -> None:
    base = _summary("genservice train sft --config a.yaml", 47.0, None)
    vlm = _summary("genservice train sft --config tiny_vlm.yaml", 60.0, "genservice/models/tiny")
    vlm["base"] = base
    vlm["config"]["model"]["vision"] = {"image_size": 160, "patch_size": 16}
    vlm["model"]["architecture"] = "LlavaForConditionalGeneration"
    (tmp_path / "training_summary.json").write_text(json.dumps(vlm))
    group = {
        "tasks": 2,
        "pass@1": {"invalidity": 0.0, "iou_valid_median": 0.9, "iou_all_median": 0.9},
        "best_of_8": {"iou_all_median": 0.95, "bbox_within_5pct": 1.0},
    }
    summary = {
        "domains": {},
        "families": {},
        "overall": group,
        "modalities": {"image": group, "text": group},
        "selection": "best of N by the blind reward",
    }
    meta = {"tasks": "images_test.jsonl", "task_count": 2, "n": 8, "command": "genservice eval"}
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "eval.json").write_text(json.dumps({"meta": meta, "summary": summary}))
    card = write_model_card(tmp_path, [tmp_path / "eval"]).read_text()
    assert "reads a picture of a part" in card and '"image_size": 160' in card
    assert "| image | 2 |" in card and "| text | 2 |" in card
    (tmp_path / "training_summary.json").write_text(json.dumps(base))
    assert "picture" not in write_model_card(tmp_path, []).read_text()


def test_a_model_with_a_gallery_says_what_it_holds(tmp_path: Path) -> None:
    summary = _summary("genservice train sft --config a.yaml", 47.0, None)
    (tmp_path / "training_summary.json").write_text(json.dumps(summary))
    assert "- gallery:" not in write_model_card(tmp_path, []).read_text()
    (tmp_path / "gallery").mkdir()
    index = {"entries": 4221, "source": "data/corpus/gallery/corpus.jsonl", "views": ["front"] * 54}
    (tmp_path / "gallery" / "index.json").write_text(json.dumps(index))
    card = write_model_card(tmp_path, []).read_text()
    assert "gallery: 4,221 train-split programs of `data/corpus/gallery/corpus.jsonl`" in card
    assert "54 viewpoints" in card


def _card_of_two_stages(folder: Path, **second: object) -> str:
    """The card of a model fine-tuned once from one trained from scratch, with `second` set on
    the fine-tune's summary."""
    base = _summary("genservice train sft --config a.yaml", 47.0, None)
    tuned = _summary("genservice train sft --config b.yaml", 20.0, "genservice/models/tiny")
    tuned.update(base=base, **second)
    (folder / "training_summary.json").write_text(json.dumps(tuned))
    return write_model_card(folder, []).read_text()


def test_a_card_says_when_a_stage_taught_it_to_read_look_alikes(tmp_path: Path) -> None:
    assert "look-alike" not in _card_of_two_stages(tmp_path)
    data = {**_summary("", 20.0, None)["data"], "with_look_alike": 3508}
    card = _card_of_two_stages(tmp_path, data=data)
    assert "gallery part that looks most like it" in card
    assert "- look-alikes: 3,508 picture rows" in card


def test_a_card_says_when_the_weights_were_mixed_with_the_stage_before(tmp_path: Path) -> None:
    soup = {
        "share": 0.5,
        "start": "genservice/models/tiny",
        "tuned": "var/models/t",
        "output": "var/models/t-half",
    }
    card = _card_of_two_stages(tmp_path, soup=soup)
    assert "taken 50% of the way from the stage-1 weights" in card
    assert (
        "python -m training.soup var/models/t genservice/models/tiny --share 0.5 "
        "-o var/models/t-half" in card
    )
    assert card.index("b.yaml") < card.index("training.soup var/models")
