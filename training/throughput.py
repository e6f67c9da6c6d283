"""Training throughput under DeepSpeed: a few SFT steps of any causal LM, timed.

Used by the GPU benchmark (`bench/gpu`) to measure step time, tokens/s and MFU of the SFT loss
(`training.sft.loss_sum`) under a ZeRO config, on the CPU or a GPU.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def init_deepspeed(cuda: bool) -> str:
    """Set up a one-process DeepSpeed group (NCCL on a GPU, gloo on the CPU); its version."""
    from training.rl import setup_distributed

    setup_distributed()
    import deepspeed

    deepspeed.init_distributed(dist_backend="nccl" if cuda else "gloo")
    return str(deepspeed.__version__)


def deepspeed_sft_steps(
    model: Any,
    batches: Sequence[Sequence[Any]],
    ds_config: dict[str, Any],
    pad_id: int,
    sync: Callable[[], None],
) -> dict[str, Any]:
    """One warm-up step, then one timed step per remaining batch of encoded examples."""
    import deepspeed

    from training.sft import IGNORE_INDEX, collate, loss_sum

    engine, *_ = deepspeed.initialize(
        model=model,
        model_parameters=[p for p in model.parameters() if p.requires_grad],
        config=ds_config,
    )
    try:
        times, tokens, padded, losses = [], [], [], []
        for step, chosen in enumerate(batches):  # step 0 warms up
            batch = collate(list(chosen), pad_id)
            labelled = int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())
            sync()
            begun = time.perf_counter()
            loss = loss_sum(engine, batch, bf16=False) / max(1, labelled)
            engine.backward(loss)
            engine.step()
            losses.append(float(loss.detach()))
            sync()
            if step:
                times.append(time.perf_counter() - begun)
                tokens.append(int(batch["attention_mask"].sum()))
                padded.append(int(batch["attention_mask"].numel()))
        if not times:
            raise ValueError("give at least two batches: the first one only warms up")
        return {
            "parameters": sum(p.numel() for p in engine.module.parameters()),
            "dtype": str(next(engine.module.parameters()).dtype).removeprefix("torch."),
            "steps": len(times),
            "step_s": times,
            "step_s_median": statistics.median(times),
            "tokens_per_step": sum(tokens) / len(tokens),
            "padded_tokens_per_step": sum(padded) / len(padded),
            "tokens_per_s": sum(tokens) / sum(times),
            "losses": losses,
        }
    finally:
        engine.destroy()
