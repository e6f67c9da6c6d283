"""Sample N completions of one prompt, sharing the prompt's KV cache.

`sample` encodes the prompt once and runs it through the model once (batch 1). The resulting
KV cache is repeated to N rows (`Cache.batch_repeat_interleave`) and the N candidates are then
decoded together, one token per step, by the loop below; rows that finish are dropped from the
cache (`batch_select_indices`), so the batch shrinks as candidates end. `generate(...,
num_return_sequences=N)` would instead repeat the prompt N times *before* prefill and run it N
times.

Randomness is per candidate: candidate i draws from its own torch.Generator seeded from
(seed, i), never from the global RNG. So the same seed gives the same candidates, candidate i
does not depend on N, and `sample_one_at_a_time` (the slow reference: one prefill and one decode
per candidate) gives the same candidates as `sample`. With `greedy_first`, candidate 0 takes
the most likely token at every step (the model's single best reading) and the others sample as
usual, so best-of-N keeps its spread while the first candidate is the one most worth serving.

Given a code request's `entry_point`, a candidate that defines no top-level function of that name
(with the arguments the request states) is steered (entry_point.py): its reply is cut at that
`def`, the signature is written there and the model goes on from that point, drawing from the
candidate's own second generator. The steered candidates are decoded together too: one more
prefill of the prompt, its cache repeated to their number, and each row fed its written prefix
one token per step before it samples again, so that every row stays at the same position.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genservice.generation.entry_point import (
    EntryPoint,
    continues_identifier,
    ends_in_name,
    needs_steering,
    steered_prefix,
)
from genservice.generation.loader import LoadedModel

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Completion:
    """One sampled reply: its text, token ids (end token excluded) and how it ended."""

    text: str
    tokens: tuple[int, ...]
    logprob_sum: float  # model log-probability of the tokens (temperature 1, before top-p)
    finish_reason: str  # "stop" (end token) or "length" (max_new_tokens reached)


TEMPERATURE = 0.8  # a request in words: samples varied enough for best-of-N to choose among
# A new part asked with a picture: the model is shown a look-alike's program to adapt, and hotter
# samples change more of what they copy; the gallery parts beside them and the fit give the
# best-of-N its other designs and proportions (docs/pictures.md, "Cooler samples for a picture").
PICTURE_TEMPERATURE = 0.4


def default_temperature(pictured: bool, edit: bool = False) -> float:
    """The temperature a request samples at when it does not say: PICTURE_TEMPERATURE for a
    new part asked with a picture, TEMPERATURE otherwise (words alone, or an edit)."""
    return PICTURE_TEMPERATURE if pictured and not edit else TEMPERATURE


def default_greedy_first(pictured: bool, edit: bool = False) -> bool:
    """Whether candidate 0 is decoded greedily when a request does not say: for a new part
    asked with a picture, whose most likely reading adapts the look-alike most faithfully
    (docs/pictures.md, "The first candidate decoded greedily"); not for words or edits."""
    return pictured and not edit


@dataclass(frozen=True)
class SamplingSettings:
    """How candidates are drawn; temperature 0 means greedy, `greedy_first` candidate 0 alone."""

    n: int = 8
    seed: int = 0
    max_new_tokens: int = 1024
    temperature: float = TEMPERATURE
    top_p: float = 0.95
    greedy_first: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.n <= 256:
            raise ValueError("n must be between 1 and 256 candidates")
        if not 1 <= self.max_new_tokens <= 32768:
            raise ValueError("max_new_tokens must be between 1 and 32768")
        if not (math.isfinite(self.temperature) and 0 <= self.temperature <= 10):
            raise ValueError("temperature must be in [0, 10] (0 = greedy)")
        if not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError("top_p must be in (0, 1]")
        if not 0 <= self.seed < 2**63:
            raise ValueError("seed must be a whole number in [0, 2**63)")

    def to_dict(self) -> dict[str, Any]:
        """JSON form (as recorded in provenance)."""
        return {
            "n": self.n,
            "seed": self.seed,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "greedy_first": self.greedy_first,
        }


def candidate_seed(seed: int, index: int, stream: str = "") -> int:
    """The generator seed of candidate `index` (well mixed, so nearby seeds share nothing).

    `stream` names a further generator of the same candidate (the steered continuation).
    """
    tag = f"genservice:{seed}:{index}" + (f":{stream}" if stream else "")
    digest = hashlib.sha256(tag.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def sample(
    loaded: LoadedModel,
    messages: list[dict[str, Any]],
    n: int = 8,
    seed: int = 0,
    max_new_tokens: int = 1024,
    temperature: float = TEMPERATURE,
    top_p: float = 0.95,
    images: Sequence[Any] | None = None,
    progress: Progress | None = None,
    entry_point: EntryPoint | None = None,
    greedy_first: bool = False,
) -> list[Completion]:
    """N candidates for one prompt: one prefill, KV cache shared, decoded as one batch.

    With `entry_point` (code), a candidate that does not define that function is steered to.
    """
    settings = SamplingSettings(n, seed, max_new_tokens, temperature, top_p, greedy_first)
    import torch

    with loaded.lock, torch.inference_mode():
        inputs = encode_prompt(loaded, messages, images)
        logits, cache = _prefill(loaded, inputs)
        if n > 1:
            cache = _expand(cache, n)
            logits = logits.expand(n, -1)
        rows = _decode(loaded, logits, cache, list(range(n)), settings, progress)
        rows = _steered(loaded, inputs, rows, list(range(n)), settings, entry_point)
    return [_completion(loaded, *row) for row in rows]


def sample_one_at_a_time(
    loaded: LoadedModel,
    messages: list[dict[str, Any]],
    n: int = 8,
    seed: int = 0,
    max_new_tokens: int = 1024,
    temperature: float = TEMPERATURE,
    top_p: float = 0.95,
    images: Sequence[Any] | None = None,
    progress: Progress | None = None,
    entry_point: EntryPoint | None = None,
    greedy_first: bool = False,
) -> list[Completion]:
    """Reference for `sample`: each candidate gets its own prefill and decode (slow)."""
    settings = SamplingSettings(n, seed, max_new_tokens, temperature, top_p, greedy_first)
    import torch

    completions = []
    with loaded.lock, torch.inference_mode():
        for index in range(n):
            inputs = encode_prompt(loaded, messages, images)
            logits, cache = _prefill(loaded, inputs)
            rows = _decode(loaded, logits, cache, [index], settings, None)
            rows = _steered(loaded, inputs, rows, [index], settings, entry_point)
            completions.append(_completion(loaded, *rows[0]))
            if progress is not None:
                progress(index + 1, n)
    return completions


def encode_prompt(
    loaded: LoadedModel, messages: list[dict[str, Any]], images: Sequence[Any] | None = None
) -> dict[str, Any]:
    """Model inputs (batch 1) for the chat messages, with images for a VLM."""
    pictures = [_as_image(image) for image in images or ()]
    loaded.check_images(len(pictures))
    placeholders = sum(
        1
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image"
    )
    if placeholders != len(pictures):
        raise ValueError(
            f"the messages hold {placeholders} image placeholder(s) but {len(pictures)} image(s) "
            "were given; build them with build_messages(..., images=len(images))"
        )
    template_owner: Any = loaded.processor if loaded.kind == "vlm" else loaded.tokenizer
    if not getattr(template_owner, "chat_template", None):
        raise ValueError(f"the model at {loaded.path} has no chat template")
    text = template_owner.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if getattr(loaded.model.config, "model_type", None) == "llava":
        from genservice.generation.pictures import square

        # A LLaVA encoder sees a fixed square: pad (as it was trained), never stretch or crop.
        pictures = [square(picture) for picture in pictures]
    if loaded.kind == "vlm":
        encoded = template_owner(
            text=[text], images=pictures or None, return_tensors="pt", add_special_tokens=False
        )
    else:
        encoded = loaded.tokenizer([text], return_tensors="pt", add_special_tokens=False)
    inputs = {k: v.to(loaded.device) for k, v in encoded.items() if hasattr(v, "to")}
    if "pixel_values" in inputs:
        inputs["pixel_values"] = inputs["pixel_values"].to(loaded.model.dtype)
    inputs.pop("token_type_ids", None)
    return inputs


def _as_image(image: Any) -> Any:
    """A PIL RGB image from a PIL image or a path."""
    from PIL import Image

    if isinstance(image, str | Path):
        with Image.open(image) as opened:
            return opened.convert("RGB")
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    raise TypeError(f"an image must be a PIL image or a path, not {type(image).__name__}")


def _reset_position_state(model: Any) -> None:
    """Forget positions a previous prompt left behind (Qwen2-VL keeps `rope_deltas`)."""
    for module in model.modules():
        if getattr(module, "rope_deltas", None) is not None:
            module.rope_deltas = None


def _prefill(loaded: LoadedModel, inputs: dict[str, Any]) -> tuple[Any, Any]:
    """Run the prompt once; the last position's logits (float32) and the KV cache."""
    _reset_position_state(loaded.model)
    extra = {"logits_to_keep": 1} if _keeps_logits(loaded.model) else {}
    out = loaded.model(**inputs, use_cache=True, **extra)
    return out.logits[:, -1, :].float(), out.past_key_values


def _keeps_logits(model: Any) -> bool:
    """Whether forward() can compute the last position's logits only (most models can)."""
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def _expand(cache: Any, n: int) -> Any:
    """The batch-1 KV cache repeated to n rows, in place."""
    if not hasattr(cache, "batch_repeat_interleave"):
        raise TypeError(f"the model's cache ({type(cache).__name__}) cannot be shared by rows")
    cache.batch_repeat_interleave(n)
    return cache


def _decode(
    loaded: LoadedModel,
    logits: Any,
    cache: Any,
    indices: list[int],
    settings: SamplingSettings,
    progress: Progress | None,
    stream: str = "",
    forced: list[list[int]] | None = None,
    after_forced: Callable[[Any], Any] | None = None,
) -> list[tuple[list[int], float, str]]:
    """Decode the rows `indices` (candidate numbers) from their first logits and shared cache.

    Each row draws from its candidate's generator of `stream` (see candidate_seed). With
    `forced`, row r first takes the tokens forced[r] (scored, not drawn), and `after_forced`
    changes the logits of its first drawn token.
    """
    import torch

    device = logits.device
    generators = [
        torch.Generator(device=device).manual_seed(candidate_seed(settings.seed, i, stream))
        for i in indices
    ]
    written = forced or [[] for _ in indices]
    eos = torch.tensor(loaded.eos_token_ids, device=device)
    tokens: list[list[int]] = [[] for _ in indices]
    logprobs = [0.0 for _ in indices]
    reasons = ["length" for _ in indices]
    active = list(range(len(indices)))  # positions in `indices` still decoding, one per cache row
    done = 0
    for step in range(settings.max_new_tokens):
        fixed = None
        if forced is not None:
            fixed = [written[slot][step] if step < len(written[slot]) else None for slot in active]
        if after_forced is not None:
            first = [
                r for r, slot in enumerate(active) if written[slot] and step == len(written[slot])
            ]
            if first:
                logits[first] = after_forced(logits[first])
        greedy = [indices[slot] == 0 for slot in active] if settings.greedy_first else None
        chosen = _choose(logits, [generators[slot] for slot in active], settings, fixed, greedy)
        picked = torch.log_softmax(logits, dim=-1).gather(1, chosen[:, None])[:, 0].tolist()
        finished = torch.isin(chosen, eos).tolist()
        keep: list[int] = []
        for row, (token, logprob, ended) in enumerate(
            zip(chosen.tolist(), picked, finished, strict=True)
        ):
            slot = active[row]
            logprobs[slot] += logprob
            if ended:
                reasons[slot] = "stop"
            else:
                tokens[slot].append(token)
                keep.append(row)
        last = step == settings.max_new_tokens - 1
        ending = len(active) - (0 if last else len(keep))
        if progress is not None and ending:
            done += ending
            progress(done, len(indices))
        if last or not keep:
            break
        if len(keep) < len(active):
            cache.batch_select_indices(torch.tensor(keep, device=device))
            chosen = chosen[keep]
            active = [active[row] for row in keep]
        out = loaded.model(input_ids=chosen[:, None], past_key_values=cache, use_cache=True)
        logits = out.logits[:, -1, :].float()
        cache = out.past_key_values
    return [(tokens[i], logprobs[i], reasons[i]) for i in range(len(indices))]


Row = tuple[list[int], float, str]  # reply tokens, their log-probability, finish reason
_NAME_ENDS: dict[int, tuple[Any, Any]] = {}  # id(tokenizer) -> (tokenizer, allowed-token mask)


def _steered(
    loaded: LoadedModel,
    inputs: dict[str, Any],
    rows: list[Row],
    indices: list[int],
    settings: SamplingSettings,
    entry_point: EntryPoint | None,
) -> list[Row]:
    """The rows, each one that does not define `entry_point` replaced by its steered
    continuation (decoded together: one prefill, then the written prefixes fed token by token)."""
    if entry_point is None:
        return rows
    prefixes: dict[int, list[int]] = {}
    for position, row in enumerate(rows):
        text = loaded.tokenizer.decode(row[0], skip_special_tokens=True)
        if needs_steering(text, entry_point):
            prefix = steered_prefix(text, entry_point)
            encoded = loaded.tokenizer.encode(prefix, add_special_tokens=False)
            prefixes[position] = encoded[: settings.max_new_tokens]
    if not prefixes:
        return rows
    name_whole = ends_in_name(entry_point)

    def first_drawn(logits: Any) -> Any:
        # The name is written whole, so the next token may not lengthen it; and a bare
        # signature is no program, so the end token waits.
        if name_whole:
            logits = logits.masked_fill(~_name_ends(loaded, logits.shape[-1]), -math.inf)
        logits[:, list(loaded.eos_token_ids)] = -math.inf
        return logits

    logits, cache = _prefill(loaded, inputs)
    steered = list(prefixes)
    if len(steered) > 1:
        cache = _expand(cache, len(steered))
        logits = logits.expand(len(steered), -1).clone()
    redone = _decode(
        loaded,
        logits,
        cache,
        [indices[position] for position in steered],
        settings,
        None,
        stream="entry_point",
        forced=[prefixes[position] for position in steered],
        after_forced=first_drawn,
    )
    replaced = list(rows)
    for position, row in zip(steered, redone, strict=True):
        replaced[position] = row
    return replaced


def _name_ends(loaded: LoadedModel, vocab: int) -> Any:
    """Tokens that may follow a complete name (True), by the tokenizer's text of each token."""
    import torch

    tokenizer = loaded.tokenizer
    cached = _NAME_ENDS.get(id(tokenizer))
    if cached is None or cached[0] is not tokenizer or cached[1].shape[0] != vocab:
        pieces = tokenizer.batch_decode([[i] for i in range(min(vocab, len(tokenizer)))])
        allowed = torch.zeros(vocab, dtype=torch.bool)
        allowed[: len(pieces)] = torch.tensor([not continues_identifier(p) for p in pieces])
        cached = (tokenizer, allowed)
        _NAME_ENDS[id(tokenizer)] = cached
    return cached[1].to(loaded.device)


def _choose(
    logits: Any,
    generators: list[Any],
    settings: SamplingSettings,
    fixed: list[int | None] | None = None,
    greedy: list[bool] | None = None,
) -> Any:
    """Next token per row: the row's fixed token if it has one, else argmax at temperature 0
    or where `greedy` marks the row, else top-p sampling with the row's generator (drawn from
    only when it samples)."""
    import torch

    if settings.temperature == 0:
        picks = logits.argmax(dim=-1)
        if fixed is None:  # the common case: no host round trip
            return picks
        return torch.tensor(
            [p if f is None else f for p, f in zip(picks.tolist(), fixed, strict=True)],
            device=logits.device,
        )
    probs = torch.softmax(logits / settings.temperature, dim=-1)
    if settings.top_p < 1:
        ordered, order = probs.sort(dim=-1, descending=True)
        before = ordered.cumsum(dim=-1) - ordered  # mass of the tokens ranked above each one
        ordered = ordered.masked_fill(before >= settings.top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(1, order, ordered)
    fixed = fixed or [None] * len(generators)
    greedy = greedy or [False] * len(generators)
    picks = [
        torch.tensor([token], device=logits.device)
        if token is not None
        else row.argmax(dim=-1, keepdim=True)
        if argmax
        else torch.multinomial(row, 1, generator=generator)
        for row, generator, token, argmax in zip(probs, generators, fixed, greedy, strict=True)
    ]
    return torch.cat(picks)


def _completion(loaded: LoadedModel, tokens: list[int], logprob: float, reason: str) -> Completion:
    text = loaded.tokenizer.decode(tokens, skip_special_tokens=True)
    return Completion(text, tuple(tokens), logprob, reason)
