"""Tiny random models built offline from configs (no downloads), for tests and the benchmark.

A byte-level BPE tokenizer is trained on a few strings and given a ChatML chat template; a
2-layer Qwen2 causal LM and a LLaVA VLM (tiny CLIP vision tower + tiny Llama) use it. The
weights are random: what they write is garbage, but every code path runs.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>"]
CORPUS = [
    "import cadquery as cq\nlength = 20.0\nwidth = 10.0\nheight = 5.0\n",
    "result = cq.Workplane('XY').box(length, width, height)\n",
    "Write a CadQuery Python script for the part described. Units are millimetres.",
    "def add(a, b):\n    return a + b\n",
    "a box 20 mm long, 10 mm wide and 5 mm tall; a cylinder with a hole; a plate with fillets",
]
IMAGE_SIZE, PATCH = 32, 16  # 4 patches: 4 <image> tokens per image (CLS dropped)


def build_tokenizer(vocab_size: int = 400):
    """A byte-level BPE tokenizer with ChatML special tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(CORPUS * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<image>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _text_config(tokenizer, kind: str = "qwen2") -> dict:
    return {
        "model_type": kind,
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 1024,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": None,
    }


def build_causal(path: Path, seed: int = 0) -> Path:
    """Save a tiny random Qwen2ForCausalLM and its tokenizer to `path`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    config = Qwen2Config(**{k: v for k, v in _text_config(tokenizer).items() if k != "model_type"})
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_llava(path: Path, seed: int = 0) -> Path:
    """Save a tiny random LlavaForConditionalGeneration with a PIL-only processor to `path`."""
    import torch
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tokenizer = build_tokenizer()
    vision = {
        "model_type": "clip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": IMAGE_SIZE,
        "patch_size": PATCH,
        "projection_dim": 32,
    }
    torch.manual_seed(seed)
    config = LlavaConfig(
        vision_config=vision,
        text_config=_text_config(tokenizer, "llama"),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_seq_length=(IMAGE_SIZE // PATCH) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    size = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    image_processor = CLIPImageProcessorPil(size=size, crop_size=size, do_center_crop=True)
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


QWEN_VISION_TOKENS = ["<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|video_pad|>"]
QWEN_IMAGE_SIZE = 56  # 4 x 4 patches of 14 px, merged 2 x 2: 4 image tokens


def build_qwen2_vl(path: Path, seed: int = 0) -> Path:
    """Save a tiny random Qwen2VLForConditionalGeneration with tokenizer and PIL image processor.

    transformers' Qwen2VLProcessor needs torchvision (for video), so only its parts are saved;
    the loader assembles an images-only processor from them.
    """
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    tokenizer = build_tokenizer()
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|im_start|>", "<image>", *QWEN_VISION_TOKENS]}
    )
    tokenizer.chat_template = CHAT_TEMPLATE.replace(
        "<image>", "<|vision_start|><|image_pad|><|vision_end|>"
    )
    text = {k: v for k, v in _text_config(tokenizer).items() if k != "model_type"}
    text["rope_parameters"] = {"rope_type": "default", "mrope_section": [2, 3, 3]}
    vision = {
        "depth": 2,
        "embed_dim": 32,
        "hidden_size": 64,
        "num_heads": 2,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    ids = {
        f"{name}_token_id": tokenizer.convert_tokens_to_ids(token)
        for name, token in zip(
            ("vision_start", "image", "vision_end", "video"), QWEN_VISION_TOKENS, strict=True
        )
    }
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(
        Qwen2VLConfig(text_config=text, vision_config=vision, **ids)
    )
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    pixels = QWEN_IMAGE_SIZE * QWEN_IMAGE_SIZE
    image_processor = Qwen2VLImageProcessorPil(min_pixels=pixels, max_pixels=pixels)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    image_processor.save_pretrained(path)
    return path
