"""Choosing a device: auto, cpu, cuda[:N] and GENSERVICE_DEVICE; wrong choices say why; on a GPU
the batched sampler gives the CPU's greedy tokens (the `gpu`-marked test)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from genservice.device import DeviceError, describe, model_dtype, resolve_device

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_auto_follows_the_environment_and_the_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GENSERVICE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device() == resolve_device("auto") == expected
    monkeypatch.setenv("GENSERVICE_DEVICE", "cpu")
    assert resolve_device() == "cpu" and resolve_device(None) == "cpu"
    assert resolve_device("cuda" if torch.cuda.is_available() else "cpu") == expected  # explicit


def test_precision_is_float32_on_the_cpu() -> None:
    assert model_dtype("cpu") == torch.float32
    info = describe("cpu")
    assert info["device"] == "cpu" and info["dtype"] == "float32"


@pytest.mark.parametrize(
    ("choice", "message"),
    [("gpu", "use auto, cpu, cuda or cuda:N"), ("cuda:x", "use auto, cpu, cuda or cuda:N"),
     ("meta", "only cpu and cuda")],
)  # fmt: skip
def test_malformed_devices_are_refused(choice: str, message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        resolve_device(choice)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_a_missing_gpu_is_a_usage_error_on_every_command() -> None:
    with pytest.raises(DeviceError, match="no CUDA device is available"):
        resolve_device("cuda:0")
    for argv in (
        ["generate", "a plate 40 mm wide", "--device", "cuda"],
        ["worker", "--queues", "generate", "--device", "cuda"],
        ["run", "--device", "cuda:1"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "genservice", *argv],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 2, (argv, done.stderr[-2000:])
        assert "no CUDA device is available" in done.stderr, argv


@pytest.mark.gpu
@needs_cuda
def test_the_batched_sampler_on_a_gpu_gives_the_cpu_greedy_tokens() -> None:
    from genservice.generation.loader import default_model_dir, load_model
    from genservice.generation.sampler import sample

    messages = [{"role": "user", "content": "a flange 80 mm across with 6 bolt holes"}]
    tokens = {}
    for device in ("cpu", "cuda"):
        loaded = load_model(default_model_dir(), device=device, dtype=torch.float32)
        (greedy,) = sample(loaded, messages, n=1, temperature=0.0, max_new_tokens=120)
        tokens[device] = greedy.tokens
    assert tokens["cuda"] == tokens["cpu"]
