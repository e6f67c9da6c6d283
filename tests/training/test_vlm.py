"""The vision-language model: joined to a text model, trained on image tasks, served alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trimesh

from exporters.parts import PartMesh
from exporters.render import png_bytes, render
from tests.training.test_sft import micro_config, step_losses, synthetic_rows
from training.sft import (
    IGNORE_INDEX,
    SUMMARY_FILE,
    SetupError,
    encode_task,
    reply_format,
    train_sft,
)
from training.sft_config import SFTConfig
from training.vlm import VisionSpec, assemble_vlm, expand_image_tokens, image_slots

VISION = {
    "image_size": 32,
    "patch_size": 16,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_layers": 1,
    "num_heads": 2,
}


def _picture(folder: Path, name: str, size: tuple[float, float, float]) -> str:
    mesh = trimesh.creation.box(size)
    part = PartMesh("p", mesh.vertices.astype(np.float32), mesh.faces.astype(np.int32))
    (folder / name).write_bytes(png_bytes(render([part], ["iso"], 48)))
    return name


@pytest.fixture(scope="module")
def image_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Text rows, each CAD row followed by its image row (pictures beside the file, paths
    relative to it), as `genservice corpus images` writes them."""
    folder = tmp_path_factory.mktemp("vlm-data")
    rows = []
    for row in synthetic_rows():
        rows.append(row)
        if row["domain"] == "cad":
            size = tuple(float(v) for v in row["prompt"].split()[2:5:2])
            name = _picture(folder, f"{row['id']}.png", (size[0], size[1], 8.0))
            rows.append({**row, "id": row["id"] + "-image-0", "prompt": "make this"} | {
                "images": [name], "image": True,
            })  # fmt: skip
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def text_model(image_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("text") / "model"
    text_only = image_data.parent / "text.jsonl"
    text_only.write_text(
        "".join(
            line + "\n" for line in image_data.read_text().splitlines() if '"images"' not in line
        )
    )
    raw = micro_config(text_only, out, max_steps=5, eval_every=0, save_every=0)
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    return out


def test_a_vlm_keeps_the_text_model_and_its_tokens(text_model: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, processor = assemble_vlm(text_model, VisionSpec(**VISION))
    text = AutoModelForCausalLM.from_pretrained(str(text_model), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(text_model), local_files_only=True)
    messages = [{"role": "user", "content": "A plate 40 x 20 mm"}]

    def prompt_ids(owner: Any) -> list[int]:
        text = owner.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return list(owner.encode(text, add_special_tokens=False))

    ids = prompt_ids(tokenizer)
    assert prompt_ids(processor.tokenizer) == ids
    batch = torch.tensor([ids])
    with torch.no_grad():
        before = text(input_ids=batch).logits
        after = model(input_ids=batch).logits[..., : before.shape[-1]]
    # A text request is answered exactly as the text model answered it.
    assert torch.allclose(before, after, atol=1e-5)
    assert image_slots(model) == (processor.tokenizer.convert_tokens_to_ids("<image>"), 4)


def test_training_lays_out_pictures_as_the_processor_does_when_serving(
    image_data: Path, text_model: Path
) -> None:
    from training.sft import load_tasks

    model, processor = assemble_vlm(text_model, VisionSpec(**VISION))
    row = next(r for r in load_tasks(image_data, ["train"], None) if r.get("images"))
    fmt = reply_format(processor.tokenizer)
    example = encode_task(processor.tokenizer, row, fmt, slots=image_slots(model))
    from PIL import Image

    from genservice.generation.prompts import build_messages

    text = processor.apply_chat_template(
        build_messages("cad", "make this", images=1), add_generation_prompt=True, tokenize=False
    )
    with Image.open(row["images"][0]) as picture:
        served = processor(text=[text], images=[picture.convert("RGB")], return_tensors="pt")
    prompt = served["input_ids"][0].tolist()
    assert example.input_ids[: len(prompt)] == prompt
    assert prompt.count(image_slots(model)[0]) == 4
    assert expand_image_tokens([1, 9, 2], 9, 3) == [1, 9, 9, 9, 2]


def test_sft_trains_a_vlm_on_pictures_and_text_and_it_serves(
    image_data: Path, text_model: Path, tmp_path: Path
) -> None:
    from PIL import Image

    from genservice.generation.loader import load_model
    from genservice.generation.sampler import encode_prompt

    raw = micro_config(image_data, tmp_path / "vlm", max_steps=8, eval_every=4, save_every=4)
    raw["model"] = {"from": str(text_model), "vision": VISION}
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    out = tmp_path / "vlm"
    losses = step_losses(out)
    assert len(losses) == 8 and all(np.isfinite(list(losses.values())))
    summary = json.loads((out / SUMMARY_FILE).read_text())
    assert summary["model"]["architecture"] == "LlavaForConditionalGeneration"
    assert summary["config"]["model"]["vision"]["image_size"] == 32
    loaded = load_model(out)
    assert loaded.kind == "vlm" and loaded.accepts_images
    row = json.loads(next(x for x in image_data.read_text().splitlines() if '"images"' in x))
    with Image.open(image_data.parent / row["images"][0]) as picture:
        wide = picture.convert("RGB").resize((80, 40))  # not square: padded, never stretched
    inputs = encode_prompt(loaded, loaded.messages("cad", "make this", images=1), [wide])
    assert tuple(inputs["pixel_values"].shape) == (1, 3, 32, 32)
    tokens = loaded.model.generate(**inputs, max_new_tokens=4, do_sample=False)
    assert tokens.shape[1] == inputs["input_ids"].shape[1] + 4
    # Resuming a VLM run loads it back as one.
    raw["training"]["max_steps"] = 10
    train_sft(SFTConfig.from_dict(raw), resume=True, command="pytest", show_progress=False)
    assert json.loads((out / SUMMARY_FILE).read_text())["steps"] == 10


def test_the_language_model_can_learn_gentler_than_the_new_vision_encoder(
    image_data: Path, text_model: Path, tmp_path: Path
) -> None:
    from training.sft import _optimizer
    from training.vlm import build_vlm, load_vlm

    vlm, _ = load_vlm(build_vlm(text_model, tmp_path / "vlm", VisionSpec(**VISION)))
    raw = micro_config(image_data, tmp_path / "out", max_steps=2)
    raw["model"] = {"from": str(text_model), "vision": VISION}
    raw["training"]["language_lr"] = 2e-4
    optimizer = _optimizer(vlm, SFTConfig.from_dict(raw))
    scale_of = {id(p): g["lr_scale"] for g in optimizer.param_groups for p in g["params"]}
    names = dict(vlm.named_parameters())
    assert len(scale_of) == sum(1 for p in names.values() if p.requires_grad)
    vision = [n for n in names if "vision_tower" in n or "multi_modal_projector" in n]
    language = [n for n in names if n not in vision]
    assert vision and language
    assert {scale_of[id(names[n])] for n in vision} == {1.0}
    lr = raw["training"]["lr"]
    assert [scale_of[id(names[n])] for n in language] == pytest.approx([2e-4 / lr] * len(language))
    raw["training"]["language_lr"] = -1
    with pytest.raises(ValueError, match="language_lr"):
        SFTConfig.from_dict(raw)


def test_a_frozen_language_model_keeps_its_weights_while_the_encoder_learns(
    image_data: Path, text_model: Path, tmp_path: Path
) -> None:
    import torch
    from safetensors.torch import load_file

    from training.sft import _is_language_parameter

    raw = micro_config(image_data, tmp_path / "frozen", max_steps=4, eval_every=0, save_every=0)
    raw["model"] = {"from": str(text_model), "vision": VISION}
    raw["training"]["language_lr"] = 0
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    summary = json.loads((tmp_path / "frozen" / SUMMARY_FILE).read_text())
    assert summary["data"]["by_domain"] == {"cad": summary["data"]["train_examples"]}
    before = load_file(str(text_model / "model.safetensors"))
    after = load_file(str(tmp_path / "frozen" / "model.safetensors"))
    language = [k for k in after if _is_language_parameter(k)]
    assert language
    for key in language:  # the LLaVA wrapper renames the text model's tensors
        source = key.replace("language_model.", "")
        if source in before:  # the added image token's row is new; every other row is kept
            assert torch.equal(after[key][: len(before[source])], before[source]), key
    assert sum(k.replace("language_model.", "") in before for k in language) > len(language) / 2
    # ... while the encoder and projector moved from where they were joined.
    joined, _ = assemble_vlm(text_model, VisionSpec(**VISION), raw["training"]["seed"])
    joined.save_pretrained(tmp_path / "joined")
    start = load_file(str(tmp_path / "joined" / "model.safetensors"))
    vision = [k for k in after if k not in language and k in start]
    assert vision and any(not torch.equal(after[k], start[k]) for k in vision)
    # With no vision encoder, a frozen language model leaves nothing to train.
    raw = micro_config(image_data, tmp_path / "text", max_steps=2)
    raw["model"] = {"from": str(text_model)}
    raw["training"]["language_lr"] = 0
    raw["data"]["train"] = str(image_data.parent / "text.jsonl")
    with pytest.raises(SetupError, match="language_lr: 0"):
        train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)


def test_a_vlm_trained_with_look_alikes_reads_them_whole_and_says_so(
    image_data: Path, text_model: Path, tmp_path: Path
) -> None:
    """Picture rows carrying a look-alike (`corpus look-alikes`) are trained with it in the
    prompt and kept whole; the trained model is marked as reading look-alikes, and a model
    fine-tuned from it with a gallery keeps the mark."""
    from genservice.generation.gallery import GALLERY_DIR, LOOK_ALIKE_FILE, reads_look_alikes
    from training.sft import cut_rows, load_tasks

    rows = [json.loads(line) for line in image_data.read_text().splitlines()]
    shown = next(r["reference"] for r in rows if r["domain"] == "cad")
    # Beside the fixture's pictures: their paths are relative to the task file.
    staged = image_data.parent / "with_look_alikes.jsonl"
    staged.write_text("".join(
        json.dumps({**r, "look_alike": shown} if r.get("images") else r) + "\n" for r in rows
    ))  # fmt: skip
    picture_rows = [r for r in load_tasks(staged, ["train"], None) if r.get("images")]
    assert picture_rows and all(cut is None for cut in cut_rows(picture_rows, 0.0, 0))
    model, processor = assemble_vlm(text_model, VisionSpec(**VISION))
    fmt = reply_format(processor.tokenizer)
    example = encode_task(processor.tokenizer, picture_rows[0], fmt, slots=image_slots(model))
    labels = zip(example.input_ids, example.labels, strict=True)
    prompt = processor.tokenizer.decode([t for t, label in labels if label == IGNORE_INDEX])
    assert "A part that looks like the picture:" in prompt and "Request: make this" in prompt

    raw = micro_config(staged, tmp_path / "vlm", max_steps=2, eval_every=0, save_every=0)
    raw["model"] = {"from": str(text_model), "vision": VISION}
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    summary = json.loads((tmp_path / "vlm" / SUMMARY_FILE).read_text())
    assert summary["data"]["with_look_alike"] == len(picture_rows)
    assert reads_look_alikes(tmp_path / "vlm")
    assert json.loads((tmp_path / "vlm" / LOOK_ALIKE_FILE).read_text())["rows"] == len(picture_rows)
    # Fine-tuned from it on rows without look-alikes: the weights carry the habit, and the
    # mark goes with the gallery it needs.
    shipped = Path(__file__).resolve().parents[2] / "genservice" / "models" / "tiny"
    (tmp_path / "vlm" / GALLERY_DIR).symlink_to(shipped / GALLERY_DIR)
    raw = micro_config(image_data, tmp_path / "tuned", max_steps=1, eval_every=0, save_every=0)
    raw["model"] = {"from": str(tmp_path / "vlm")}
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    assert reads_look_alikes(tmp_path / "tuned")
    (tmp_path / "vlm" / GALLERY_DIR).unlink()
    raw["output_dir"] = str(tmp_path / "bare")
    raw.pop("checkpoint_dir", None)
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    assert not reads_look_alikes(tmp_path / "bare")  # no gallery to find them in


def test_pictures_need_a_vision_model(image_data: Path, tmp_path: Path) -> None:
    raw = micro_config(image_data, tmp_path / "text", max_steps=2)
    with pytest.raises(SetupError, match=r"model\.vision"):
        train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)


@pytest.mark.parametrize(
    ("vision", "message"),
    [
        ({"image_size": 30, "patch_size": 16}, "multiple of patch_size"),
        ({"pixels": 3}, "unknown keys"),
    ],
)
def test_bad_vision_settings_say_what_to_fix(
    vision: dict[str, Any], message: str, tmp_path: Path
) -> None:
    raw = micro_config(tmp_path / "x.jsonl", tmp_path / "out")
    raw["model"] = {"from": "somewhere", "vision": vision}
    with pytest.raises(ValueError, match=message):
        SFTConfig.from_dict(raw)
    raw["model"] = {"init": micro_config(tmp_path, tmp_path)["model"]["init"], "vision": {}}
    with pytest.raises(ValueError, match="from"):
        SFTConfig.from_dict(raw)


def test_eval_reads_pictures_with_a_vlm_and_refuses_them_without(
    image_data: Path, text_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from genservice.cli import main
    from genservice.generation import fit
    from training.vlm import build_vlm

    vlm = build_vlm(text_model, tmp_path / "vlm", VisionSpec(**VISION))
    out = tmp_path / "eval"
    args = ["eval", "--tasks", str(image_data), "--domains", "cad", "--limit", "12", "--n", "2"]
    code = main([*args, "--model", str(vlm), "--max-new-tokens", "8", "--fit-camera", "free",
                 "-o", str(out)])  # fmt: skip
    assert code == 0
    # The run says how its fits were scored, and serving's held camera is back after it.
    assert json.loads((out / "eval.json").read_text())["meta"]["fit_camera"] == "free"
    assert fit.HOLD_CAMERA is True
    summary = json.loads((out / "eval.json").read_text())["summary"]
    assert set(summary["modalities"]) == {"image", "text"}
    assert "## Pictures and words" in (out / "eval.md").read_text()
    image = summary["modalities"]["image"]["pass@1"]
    assert image["invalidity"] is not None and "image_match_median" in image
    code = main([*args, "--model", str(text_model), "--modality", "image", "-o", str(out)])
    assert code == 2 and "text only" in capsys.readouterr().err
    # A folder that cannot be written is said before the work, not after it.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    code = main([*args, "--model", str(vlm), "-o", str(blocked / "eval")])
    assert code == 2 and "cannot write the results to" in capsys.readouterr().err


def test_the_vlm_stage_config_joins_a_vision_encoder_to_the_shipped_model() -> None:
    root = Path(__file__).resolve().parents[2]
    config = SFTConfig.from_yaml(root / "training" / "configs" / "tiny_vlm.yaml")
    assert str(config.model.from_dir) == "var/models/tiny-stage3b"  # the text model it joins
    assert isinstance(config.model.vision, VisionSpec) and config.model.vision.image_tokens == 100
    assert (config.training.max_minutes or 0) <= 90


def test_the_rl_config_with_pictures_reads_the_vlm_corpus_from_the_shipped_model() -> None:
    from training.rl_config import RLConfig

    root = Path(__file__).resolve().parents[2]
    config = RLConfig.from_yaml(root / "training" / "configs" / "rl_vlm.yaml")
    assert (
        config.data.tasks == SFTConfig.from_yaml(root / "training/configs/tiny_vlm.yaml").data.train
    )
    assert config.model.from_dir == "genservice/models/tiny"
