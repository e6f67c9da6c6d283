"""Tiny random models, built once per session in a temporary directory (nothing downloaded)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.genservice.generation.tiny_models import build_causal, build_llava, build_qwen2_vl


@pytest.fixture(scope="session", autouse=True)
def _offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The hub is offline, and the weights-hash cache lives in a temporary directory."""
    patch = pytest.MonkeyPatch()
    patch.setenv("HF_HUB_OFFLINE", "1")
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """torch on one thread: the models are tiny; on a busy machine threads wait on each other."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 causal LM with a ChatML tokenizer."""
    return build_causal(tmp_path_factory.mktemp("models") / "tiny-qwen2")


@pytest.fixture(scope="session")
def llava_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random LLaVA (CLIP vision tower, Llama text model)."""
    return build_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture(scope="session")
def qwen2_vl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2-VL."""
    return build_qwen2_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2-vl")


@pytest.fixture(scope="session")
def causal(causal_dir: Path):
    """The tiny causal LM, loaded."""
    from genservice.generation.loader import load_model

    return load_model(causal_dir)


@pytest.fixture(scope="session")
def llava(llava_dir: Path):
    """The tiny LLaVA, loaded."""
    from genservice.generation.loader import load_model

    return load_model(llava_dir)


@pytest.fixture(scope="session")
def qwen2_vl(qwen2_vl_dir: Path):
    """The tiny Qwen2-VL, loaded."""
    from genservice.generation.loader import load_model

    return load_model(qwen2_vl_dir)
