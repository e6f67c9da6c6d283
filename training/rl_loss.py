"""GRPO-family objectives: advantages within a group, the clipped surrogate, KL, aggregation.

- grpo: advantage = (r - mean) / std within the group; each sequence's token losses are
  averaged, then sequences are averaged (long outputs weigh less per token).
- dapo: the same advantages; token-level loss (every token of the batch weighs the same), with
  clip-higher (epsilon_high > epsilon_low) and, in the trainer, dynamic sampling and the soft
  overlong penalty.
- dr_grpo: advantage = r - mean (no std scaling); token sums divided by a constant
  (sequences × max_new_tokens), so neither length nor group spread biases the update.

KL is the k3 estimator exp(ref - logp) - (ref - logp) - 1 against the starting model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def group_advantages(rewards: Sequence[float], scale: bool, eps: float = 1e-4) -> list[float]:
    """Each reward minus its group's mean, divided by the group's std when `scale`."""
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if not scale:
        return centred
    std = math.sqrt(sum(c * c for c in centred) / max(1, len(rewards) - 1))
    return [c / (std + eps) for c in centred]


def all_equal(rewards: Sequence[float], tolerance: float = 1e-6) -> bool:
    """Whether a group carries no signal (every reward the same)."""
    return max(rewards) - min(rewards) <= tolerance


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    temperature: float,
    pixel_values: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability and entropy of every next token (shape [batch, length - 1]);
    `pixel_values`: the pictures of the rows' image tokens (a vision-language model)."""
    import torch

    pictures = {} if pixel_values is None else {"pixel_values": pixel_values}
    logits = model(
        input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **pictures
    ).logits
    logits = logits[:, :-1].float() / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    targets = input_ids[:, 1:].unsqueeze(-1)
    logps = logp_all.gather(-1, targets).squeeze(-1)
    with torch.no_grad():
        entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logps, entropy


@dataclass(frozen=True)
class LossSettings:
    """What `policy_loss` needs from the config."""

    type: str
    epsilon_low: float
    epsilon_high: float
    beta: float
    max_new_tokens: int


def policy_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    ref_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    settings: LossSettings,
    sequences: int,
    tokens: int,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The micro-batch's share of the batch loss, and its statistics.

    `mask` is 1 on completion tokens that train (0 on prompt, padding and dropped rows);
    `sequences` and `tokens` are the whole batch's counts, so micro-batch losses add up to the
    batch loss whatever the split.
    """
    import torch

    ratio = torch.exp(logps - old_logps)
    adv = advantages.unsqueeze(-1)
    clipped = torch.clamp(ratio, 1 - settings.epsilon_low, 1 + settings.epsilon_high)
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl = None
    if ref_logps is not None:
        delta = ref_logps - logps
        kl = torch.exp(delta) - delta - 1
        if settings.beta > 0:
            per_token = per_token + settings.beta * kl
    mask = mask.to(per_token.dtype)
    if settings.type == "grpo":
        lengths = mask.sum(-1).clamp(min=1)
        loss = ((per_token * mask).sum(-1) / lengths).sum() / max(1, sequences)
    elif settings.type == "dapo":
        loss = (per_token * mask).sum() / max(1, tokens)
    else:  # dr_grpo
        loss = (per_token * mask).sum() / max(1, sequences * settings.max_new_tokens)
    with torch.no_grad():
        count = mask.sum().clamp(min=1)
        outside = ((ratio < 1 - settings.epsilon_low) & (adv < 0)) | (
            (ratio > 1 + settings.epsilon_high) & (adv > 0)
        )
        stats = {
            "clip_tokens": float((outside.to(mask.dtype) * mask).sum()),
            "tokens": float(mask.sum()),
            "kl_sum": float((kl * mask).sum()) if kl is not None else math.nan,
            "ratio_mean": float((ratio * mask).sum() / count),
        }
    return loss, stats
