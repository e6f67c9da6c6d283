"""load_model: causal LMs and VLMs from local directories, weights hash, clear errors."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from genservice.generation.loader import (
    TEXT_ONLY,
    ModelNotFoundError,
    check_model_dir,
    default_model_dir,
    load_model,
    weights_sha256,
)

ROOT = Path(__file__).resolve().parents[3]


def test_causal_model_loads_with_its_tokenizer(causal, causal_dir):
    assert causal.kind == "causal"
    assert causal.processor is None
    assert not causal.accepts_images
    assert causal.model_id == "tiny-qwen2"
    assert causal.device == "cpu"
    assert next(causal.model.parameters()).dtype.is_floating_point
    assert str(next(causal.model.parameters()).dtype) == "torch.float32"
    assert causal.tokenizer.convert_tokens_to_ids("<|im_end|>") in causal.eos_token_ids
    assert not causal.model.training


def test_weights_sha256_is_the_safetensors_files_hash(causal, causal_dir):
    expected = hashlib.sha256((causal_dir / "model.safetensors").read_bytes()).hexdigest()
    assert causal.weights_sha256 == expected
    assert weights_sha256(causal_dir) == expected  # served from the cache this time


def test_weights_sha256_over_several_files(tmp_path):
    for name, data in (("b.safetensors", b"bee"), ("a.safetensors", b"ay")):
        (tmp_path / name).write_bytes(data)
    lines = "".join(
        f"{hashlib.sha256(data).hexdigest()}  {name}\n"
        for name, data in (("a.safetensors", b"ay"), ("b.safetensors", b"bee"))
    )
    assert weights_sha256(tmp_path) == hashlib.sha256(lines.encode()).hexdigest()


def test_text_only_model_refuses_images(causal):
    with pytest.raises(ValueError, match="takes text only; drop --image"):
        causal.check_images(1)
    causal.check_images(0)
    assert "vision-language model" in TEXT_ONLY


def test_vlms_load_with_pil_processors(llava, qwen2_vl):
    assert llava.kind == qwen2_vl.kind == "vlm"
    assert llava.accepts_images and qwen2_vl.accepts_images
    assert type(llava.processor.image_processor).__name__ == "CLIPImageProcessorPil"
    assert type(qwen2_vl.processor.image_processor).__name__ == "Qwen2VLImageProcessorPil"
    assert "torchvision" not in sys.modules


def test_missing_shipped_model_says_how_to_train_it(monkeypatch, tmp_path):
    import genservice.generation.loader as loader

    monkeypatch.setattr(loader, "DEFAULT_MODEL_DIR", tmp_path / "models" / "tiny")
    assert loader.default_model_dir() == tmp_path / "models" / "tiny"
    with pytest.raises(ModelNotFoundError, match=r"shipped model is missing.*train sft"):
        check_model_dir(loader.default_model_dir())


def test_default_model_dir_is_in_the_package():
    assert default_model_dir() == ROOT / "genservice" / "models" / "tiny"


def test_missing_or_incomplete_directories_are_clear_errors(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        load_model(tmp_path / "nope")
    with pytest.raises(ModelNotFoundError, match=r"no config\.json"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match=r"no \*\.safetensors"):
        load_model(tmp_path)
