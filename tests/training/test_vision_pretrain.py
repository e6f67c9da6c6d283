"""Vision pretraining: the encoder alone learns what part a picture shows; nothing else moves."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import trimesh

from exporters.parts import PartMesh
from exporters.render import png_bytes, render
from tests.training.test_vlm import VISION, image_data, text_model  # noqa: F401 (fixtures)
from training.vision_pretrain import (
    Targets,
    VisionPretrainConfig,
    centred_logs,
    kind_tokens,
    linear_probe,
    pretrain_vision,
)
from training.vlm import VisionSpec, build_vlm

ROOT = Path(__file__).resolve().parents[2]


def _row(i: int, family: str, size: tuple[float, float, float], folder: Path) -> dict[str, Any]:
    mesh = trimesh.creation.box(size)
    part = PartMesh("p", mesh.vertices.astype(np.float32), mesh.faces.astype(np.int32))
    name = f"{family}-{i}.png"
    (folder / name).write_bytes(png_bytes(render([part], ["iso"], 48)))
    x, y, z = size
    return {
        "id": f"{family}-{i}-image-0",
        "domain": "cad",
        "family": family,
        "split": "val" if i % 5 == 4 else "train",
        "prompt": "make this",
        "images": [name],
        "params": {"length": x, "width": y, "height": z},
        "reference": f"import cadquery as cq\nresult = cq.Workplane().box({x}, {y}, {z})\n",
        "image": True,
    }


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Flat plates and tall posts, drawn iso: told apart by the picture alone."""
    folder = tmp_path_factory.mktemp("vision-pictures")
    rng = random.Random(3)
    rows = []
    for i in range(60):
        if i % 2:
            size = (rng.uniform(40, 80), rng.uniform(30, 60), rng.uniform(3, 6))
            rows.append(_row(i, "plate", size, folder))
        else:
            side = rng.uniform(8, 14)
            rows.append(_row(i, "post", (side, side, rng.uniform(50, 90)), folder))
    path = folder / "images.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def vlm(text_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    spec = {**VISION, "image_size": 48, "hidden_size": 48, "num_heads": 2}
    return build_vlm(text_model, tmp_path_factory.mktemp("vlm") / "model", VisionSpec(**spec))


def test_a_part_is_its_family_or_its_grammar_tokens_and_its_proportions_have_no_scale() -> None:
    plate = {"family": "plate", "params": {"length": 80.0, "width": 40.0, "n": 4, "ok": True}}
    assert kind_tokens(plate) == ["plate"]
    composed = {"family": "compositional", "params": {"composition": "disc+holes_polar"}}
    assert kind_tokens(composed) == ["compositional:disc", "compositional:holes_polar"]
    doubled = {**plate, "params": {"length": 160.0, "width": 80.0, "n": 4, "ok": True}}
    assert set(centred_logs(plate)) == {"plate.length", "plate.width", "plate.n"}  # no bools
    assert centred_logs(plate)["plate.length"] > centred_logs(plate)["plate.width"]
    lengths = {k: v for k, v in centred_logs(doubled).items() if k != "plate.n"}
    ratio = lengths["plate.length"] - lengths["plate.width"]
    assert ratio == pytest.approx(np.log(2.0))  # the same proportions at twice the size


def test_targets_standardise_parameters_seen_often_enough() -> None:
    rows = [{"family": "plate", "params": {"length": 10.0 + i, "width": 5.0}} for i in range(30)]
    rows.append({"family": "rare", "params": {"size": 3.0, "other": 1.0}})
    targets = Targets(rows)
    assert targets.kinds == ["plate", "rare"]
    assert targets.keys == ["plate.length", "plate.width"]  # "rare" is seen once: no target
    kind, values, mask = targets.of(rows[0])
    assert kind == [1.0, 0.0] and mask == [1.0, 1.0]
    # The row's length is below the mean length and its width (as a share) above the mean.
    assert values[0] < 0 < values[1]


def test_pretraining_teaches_the_encoder_and_leaves_the_rest_as_it_was(
    pictures: Path, vlm: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    out = tmp_path / "pretrained"
    config = VisionPretrainConfig(
        train=str(pictures),
        model_from=str(vlm),
        output_dir=str(out),
        batch_size=8,
        lr=2e-3,
        warmup_steps=2,
        epochs=6,
        eval_every=1000,
        seed=1,
    )
    pretrain_vision(config, show_progress=False)
    summary = json.loads((out / "vision_pretrain.json").read_text())
    final = summary["scores"][-1]
    assert final["pictures"] == 12 and final["step"] == summary["steps"] > 0
    assert final["family_top1"] >= 0.9  # plates and posts are told apart on held-out pictures
    before = load_file(str(vlm / "model.safetensors"))
    after = load_file(str(out / "model.safetensors"))
    assert before.keys() == after.keys()
    moved = [k for k in after if not torch.equal(before[k], after[k])]
    assert moved and all(k.startswith("vision_tower.") for k in moved)
    # A frozen encoder's features are probed the same way: the pretrained one knows the kind.
    probed = linear_probe(out, pictures, ["train"], ["val"], epochs=40)
    assert probed.pictures == 12 and probed.family_top1 >= 0.9


def test_the_cli_refuses_a_text_model_and_a_config_with_unknown_keys(
    pictures: Path,
    text_model: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    def run(config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        path = tmp_path / "config.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        return subprocess.run(
            [sys.executable, "-m", "genservice", "train", "vision", "--config", str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )

    base = {"data": {"train": str(pictures)}, "output_dir": str(tmp_path / "out")}
    refused = run({**base, "model": {"from": str(text_model)}})
    assert refused.returncode == 2 and "not a vision-language model" in refused.stderr
    unknown = run({**base, "model": {"from": str(text_model)}, "training": {"speed": 3}})
    assert unknown.returncode == 2 and "unknown keys ['speed']" in unknown.stderr
    assert not (tmp_path / "out").exists()
