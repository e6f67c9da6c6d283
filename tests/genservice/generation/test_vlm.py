"""Images reach vision-language models: LLaVA (CLIP, PIL processor) and Qwen2-VL."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from genservice.generation.prompts import build_messages
from genservice.generation.sampler import encode_prompt, sample, sample_one_at_a_time

RED = Image.new("RGB", (40, 40), (255, 0, 0))
BLUE = Image.new("RGB", (40, 40), (0, 0, 255))
MESSAGES = build_messages("cad", "a part like the picture", images=1)


def _last_logits(loaded, image):
    with torch.inference_mode():
        return loaded.model(**encode_prompt(loaded, MESSAGES, [image])).logits[0, -1]


@pytest.mark.parametrize("name", ["llava", "qwen2_vl"])
def test_the_image_changes_what_the_model_sees(name, request):
    loaded = request.getfixturevalue(name)
    assert not torch.allclose(_last_logits(loaded, RED), _last_logits(loaded, BLUE))


def test_llava_vision_tower_gets_the_pixels(llava):
    seen: list[tuple[int, ...]] = []
    hook = llava.model.model.vision_tower.register_forward_hook(
        lambda module, args, output: seen.append(tuple(args[0].shape))
    )
    try:
        sample(llava, MESSAGES, n=2, seed=0, max_new_tokens=3, images=[RED])
    finally:
        hook.remove()
    assert seen == [(1, 3, 32, 32)]  # once, for the shared prefill


def test_qwen2_vl_inputs_carry_mm_token_type_ids(qwen2_vl):
    inputs = encode_prompt(qwen2_vl, MESSAGES, [RED])
    image_id = qwen2_vl.model.config.image_token_id
    assert torch.equal(inputs["mm_token_type_ids"], (inputs["input_ids"] == image_id).long())
    assert int(inputs["mm_token_type_ids"].sum()) == 4  # 56 px: 4 x 4 patches merged 2 x 2


@pytest.mark.parametrize("name", ["llava", "qwen2_vl"])
def test_vlm_batched_equals_one_at_a_time_and_generate(name, request):
    loaded = request.getfixturevalue(name)
    kwargs = {"n": 2, "seed": 4, "max_new_tokens": 8, "images": [BLUE]}
    assert [c.tokens for c in sample(loaded, MESSAGES, **kwargs, temperature=1.0)] == [
        c.tokens for c in sample_one_at_a_time(loaded, MESSAGES, **kwargs, temperature=1.0)
    ]
    greedy = sample(loaded, MESSAGES, **kwargs, temperature=0)[0]
    inputs = encode_prompt(loaded, MESSAGES, [BLUE])
    with torch.inference_mode():
        out = loaded.model.generate(
            **inputs, do_sample=False, max_new_tokens=8, eos_token_id=list(loaded.eos_token_ids)
        )
    reference = out[0, inputs["input_ids"].shape[1] :].tolist()
    assert list(greedy.tokens) == [t for t in reference if t not in loaded.eos_token_ids]


def test_text_prompts_after_an_image_prompt_use_fresh_positions(qwen2_vl):
    """Qwen2-VL keeps rope_deltas from the last image prompt; a text prompt must not reuse them."""
    text = build_messages("cad", "a plain box")
    before = sample(qwen2_vl, text, n=1, seed=0, max_new_tokens=6, temperature=0)
    sample(qwen2_vl, MESSAGES, n=1, seed=0, max_new_tokens=2, images=[RED])
    after = sample(qwen2_vl, text, n=1, seed=0, max_new_tokens=6, temperature=0)
    assert before[0].tokens == after[0].tokens


def test_image_count_must_match_placeholders(llava):
    with pytest.raises(ValueError, match="placeholder"):
        sample(llava, MESSAGES, n=1, images=[RED, BLUE])
