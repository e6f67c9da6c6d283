"""sample: one prefill shared by N candidates, seeded per candidate, equal to the slow reference."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from genservice.generation.prompts import build_messages
from genservice.generation.sampler import (
    SamplingSettings,
    candidate_seed,
    encode_prompt,
    sample,
    sample_one_at_a_time,
)

TOKENS = 12
MESSAGES = build_messages("cad", "a box 20 mm long, 10 mm wide and 5 mm tall")


def _tokens(completions):
    return [c.tokens for c in completions]


def test_n_candidates_come_back(causal):
    out = sample(causal, MESSAGES, n=3, seed=0, max_new_tokens=TOKENS)
    assert len(out) == 3
    for completion in out:
        assert isinstance(completion.text, str)
        assert 0 < len(completion.tokens) <= TOKENS or completion.finish_reason == "stop"
        assert completion.finish_reason in ("stop", "length")
        assert completion.logprob_sum <= 0


def test_same_seed_same_candidates_other_seed_others(causal):
    first = sample(causal, MESSAGES, n=4, seed=7, max_new_tokens=TOKENS, temperature=1.0)
    again = sample(causal, MESSAGES, n=4, seed=7, max_new_tokens=TOKENS, temperature=1.0)
    other = sample(causal, MESSAGES, n=4, seed=8, max_new_tokens=TOKENS, temperature=1.0)
    assert _tokens(first) == _tokens(again)
    assert _tokens(first) != _tokens(other)
    assert len(set(_tokens(first))) > 1  # the candidates differ from each other


def test_sampling_ignores_the_global_rng(causal):
    torch.manual_seed(1)
    first = sample(causal, MESSAGES, n=2, seed=3, max_new_tokens=TOKENS, temperature=1.0)
    torch.manual_seed(2)
    again = sample(causal, MESSAGES, n=2, seed=3, max_new_tokens=TOKENS, temperature=1.0)
    assert _tokens(first) == _tokens(again)


def test_candidate_i_does_not_depend_on_n(causal):
    two = sample(causal, MESSAGES, n=2, seed=5, max_new_tokens=TOKENS, temperature=1.0)
    four = sample(causal, MESSAGES, n=4, seed=5, max_new_tokens=TOKENS, temperature=1.0)
    assert _tokens(two) == _tokens(four)[:2]


def test_greedy_batched_equals_one_at_a_time(causal):
    batched = sample(causal, MESSAGES, n=3, seed=0, max_new_tokens=TOKENS, temperature=0)
    slow = sample_one_at_a_time(causal, MESSAGES, n=3, seed=0, max_new_tokens=TOKENS, temperature=0)
    assert [c.text for c in batched] == [c.text for c in slow]
    assert len(set(_tokens(batched))) == 1  # greedy: every candidate is the same


def test_sampled_batched_equals_one_at_a_time(causal):
    kwargs = {"n": 3, "seed": 11, "max_new_tokens": TOKENS, "temperature": 1.0, "top_p": 0.9}
    batched = sample(causal, MESSAGES, **kwargs)
    slow = sample_one_at_a_time(causal, MESSAGES, **kwargs)
    assert _tokens(batched) == _tokens(slow)
    for fast, reference in zip(batched, slow, strict=True):
        assert fast.logprob_sum == pytest.approx(reference.logprob_sum, abs=1e-3)


def test_greedy_first_is_the_greedy_reading_and_the_rest_sample_as_before(causal):
    kwargs = {"n": 4, "seed": 11, "max_new_tokens": TOKENS, "temperature": 1.0}
    first = sample(causal, MESSAGES, **kwargs, greedy_first=True)
    greedy = sample(causal, MESSAGES, n=1, seed=11, max_new_tokens=TOKENS, temperature=0)[0]
    sampled = sample(causal, MESSAGES, **kwargs)
    assert first[0].tokens == greedy.tokens
    assert _tokens(first)[1:] == _tokens(sampled)[1:]  # candidate i > 0 is unchanged
    assert _tokens(first) != _tokens(sampled)  # and candidate 0 is not a sample
    slow = sample_one_at_a_time(causal, MESSAGES, **kwargs, greedy_first=True)
    assert _tokens(first) == _tokens(slow)


def test_greedy_first_is_recorded_with_the_settings():
    settings = SamplingSettings(n=4, temperature=0.4, greedy_first=True)
    assert settings.to_dict()["greedy_first"] is True
    assert SamplingSettings().to_dict()["greedy_first"] is False


def test_rows_that_end_early_leave_the_batch(causal):
    """With many end tokens, candidates stop at different steps; the shrinking batch is exact."""
    vocab = causal.model.config.vocab_size
    eager = dataclasses.replace(causal, eos_token_ids=tuple(range(0, vocab, 9)))
    kwargs = {"n": 6, "seed": 2, "max_new_tokens": 20, "temperature": 1.0}
    batched = sample(eager, MESSAGES, **kwargs)
    slow = sample_one_at_a_time(eager, MESSAGES, **kwargs)
    assert _tokens(batched) == _tokens(slow)
    lengths = {len(c.tokens) for c in batched}
    assert len(lengths) > 1 and "stop" in {c.finish_reason for c in batched}


def test_prompt_is_run_once_for_n_candidates(causal):
    """KV cache sharing: one forward pass over the prompt, then one token per step."""
    widths: list[int] = []
    hook = causal.model.register_forward_pre_hook(
        lambda module, args, kwargs: widths.append(kwargs["input_ids"].shape[1]),
        with_kwargs=True,
    )
    try:
        sample(causal, MESSAGES, n=4, seed=0, max_new_tokens=5, temperature=1.0)
        batched = list(widths)
        widths.clear()
        sample_one_at_a_time(causal, MESSAGES, n=4, seed=0, max_new_tokens=5, temperature=1.0)
        slow = list(widths)
    finally:
        hook.remove()
    prompt = encode_prompt(causal, MESSAGES)["input_ids"].shape[1]
    assert batched[0] == prompt and all(width == 1 for width in batched[1:])
    assert sum(width == prompt for width in slow) == 4


def test_matches_transformers_generate_greedy(causal):
    ours = sample(causal, MESSAGES, n=2, seed=0, max_new_tokens=TOKENS, temperature=0)[0]
    inputs = encode_prompt(causal, MESSAGES)
    with torch.inference_mode():
        out = causal.model.generate(
            **inputs,
            do_sample=False,
            max_new_tokens=TOKENS,
            eos_token_id=list(causal.eos_token_ids),
        )
    reference = out[0, inputs["input_ids"].shape[1] :].tolist()
    assert list(ours.tokens) == [t for t in reference if t not in causal.eos_token_ids]


def test_progress_reports_finished_candidates(causal):
    events: list[tuple[int, int]] = []
    sample(
        causal, MESSAGES, n=3, seed=0, max_new_tokens=4, progress=lambda d, t: events.append((d, t))
    )
    assert events[-1] == (3, 3)
    assert [d for d, _ in events] == sorted(d for d, _ in events)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="n must be"):
        SamplingSettings(n=0)
    with pytest.raises(ValueError, match="temperature"):
        SamplingSettings(temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        SamplingSettings(top_p=0)
    assert candidate_seed(0, 1) != candidate_seed(1, 0)


def test_images_for_a_text_only_model_are_refused(causal):
    from PIL import Image

    messages = build_messages("cad", "like this", images=1)
    with pytest.raises(ValueError, match="takes text only"):
        sample(causal, messages, n=1, images=[Image.new("RGB", (8, 8))])
