"""Where a model runs and in what precision: one rule for serving, evaluation and training.

`--device auto|cpu|cuda|cuda:N` (or `GENSERVICE_DEVICE`) picks the device; `auto` takes the
first GPU when PyTorch sees one. Weights run in bfloat16 on a GPU that supports it (float16 on
one that does not) and in float32 on the CPU, where bfloat16 matmuls are slower and the sampler
must match a greedy reference token for token. Attention is PyTorch's SDPA everywhere.
"""

from __future__ import annotations

import os
from typing import Any

ENV = "GENSERVICE_DEVICE"
ATTENTION = "sdpa"  # torch.nn.functional.scaled_dot_product_attention: flash/mem-efficient on GPU


class DeviceError(ValueError):
    """A device the user asked for that is malformed or not present."""


def resolve_device(choice: str | None = None) -> str:
    """The concrete device for `choice` (None: $GENSERVICE_DEVICE, else auto), checked."""
    import torch

    choice = (choice or os.environ.get(ENV) or "auto").strip()
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(choice)
    except RuntimeError as exc:
        raise DeviceError(f"device {choice!r}: {exc} (use auto, cpu, cuda or cuda:N)") from exc
    if device.type == "cpu":
        return "cpu"
    if device.type != "cuda":
        raise DeviceError(f"device {choice!r}: only cpu and cuda are supported")
    if not torch.cuda.is_available():
        raise DeviceError(f"device {choice!r}: no CUDA device is available")
    if device.index is not None and device.index >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        raise DeviceError(f"device {choice!r}: only {count} CUDA device(s) (cuda:0..{count - 1})")
    return str(device)


def model_dtype(device: str) -> Any:
    """The weights' dtype on `device`: bfloat16 (or float16) on a GPU, float32 on the CPU."""
    import torch

    if torch.device(device).type == "cpu":
        return torch.float32
    if torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float16


def describe(device: str) -> dict[str, Any]:
    """What a report says about the device: name, dtype, and the GPU's memory when there is one."""
    import torch

    info: dict[str, Any] = {"device": device, "dtype": str(model_dtype(device)).split(".")[-1]}
    if torch.device(device).type == "cuda":
        props = torch.cuda.get_device_properties(torch.device(device))
        info |= {"name": props.name, "memory_gib": round(props.total_memory / 2**30, 1)}
    else:
        info |= {"name": "cpu", "threads": torch.get_num_threads()}
    return info
