"""The vision-language model: a vision encoder trained from scratch joined to the language model.

A LLaVA model (transformers' `LlavaForConditionalGeneration`, which the loader serves as it
serves any image-text-to-text model): a small CLIP-style vision transformer reads the picture
as patches, a two-layer projector maps each patch into the language model's embedding space,
and those embeddings stand in for `<image>` tokens in the prompt. The language model and its
tokenizer are the text model's own (weights copied, one token added), so a text request is
tokenised and answered exactly as before; the vision encoder and projector start random and
are trained on image tasks (training/corpus/images.py) with text replay.

Pictures are padded to a square (never cropped: the part's outline is the message) and scaled
to `image_size`; the processor is built on the PIL image backend, so torchvision is never
imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IMAGE_TOKEN = "<image>"
# ChatML, as training/tokenizer.py writes it, with an image part rendered as its token.
VLM_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{%- set content = message['content'] -%}"
    "{%- else -%}{%- set content = namespace(text='') -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{%- set content.text = content.text + '<image>' -%}"
    "{%- elif part['type'] == 'text' -%}{%- set content.text = content.text + part['text'] -%}"
    "{%- endif -%}{%- endfor -%}{%- set content = content.text -%}{%- endif -%}"
    "{{ '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)
IMAGE_MEAN = [0.5, 0.5, 0.5]
IMAGE_STD = [0.5, 0.5, 0.5]


@dataclass(frozen=True)
class VisionSpec:
    """The vision encoder's shape: picture size, patch size and transformer width and depth."""

    image_size: int = 160
    patch_size: int = 16
    hidden_size: int = 192
    intermediate_size: int = 768
    num_layers: int = 4
    num_heads: int = 3

    def __post_init__(self) -> None:
        if self.image_size % self.patch_size:
            raise ValueError("image_size must be a multiple of patch_size")
        if self.hidden_size % self.num_heads:
            raise ValueError("hidden_size must be a multiple of num_heads")

    @property
    def image_tokens(self) -> int:
        """How many `<image>` positions one picture takes in the prompt (one per patch)."""
        return (self.image_size // self.patch_size) ** 2


def assemble_vlm(text_dir: Path | str, spec: VisionSpec, seed: int = 0) -> tuple[Any, Any]:
    """A LLaVA model on the text model in `text_dir` (its weights, its tokenizer plus
    `<image>`), with a random vision encoder and projector; (model, processor)."""
    import torch
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoTokenizer,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
    )

    text_dir = Path(text_dir)
    if AutoConfig.from_pretrained(str(text_dir), local_files_only=True).model_type == "llava":
        raise ValueError(f"{text_dir} is already a vision-language model")
    tokenizer = AutoTokenizer.from_pretrained(str(text_dir), local_files_only=True)
    text = AutoModelForCausalLM.from_pretrained(
        str(text_dir), local_files_only=True, dtype=torch.float32
    )
    tokenizer.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    tokenizer.chat_template = VLM_CHAT_TEMPLATE
    # The new row starts at the embeddings' mean: no other token is ever pushed toward it.
    text.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    torch.manual_seed(seed)
    vision = CLIPVisionConfig(
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        image_size=spec.image_size,
        patch_size=spec.patch_size,
        num_channels=3,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text.config,
        image_token_index=int(tokenizer.get_vocab()[IMAGE_TOKEN]),
        image_seq_length=spec.image_tokens,
        vision_feature_select_strategy="default",  # drop the class token: one token per patch
        vision_feature_layer=-1,
        tie_word_embeddings=bool(text.config.tie_word_embeddings),
    )
    model = LlavaForConditionalGeneration(config)
    model.model.language_model.load_state_dict(text.model.state_dict())
    model.lm_head.load_state_dict(text.lm_head.state_dict())
    if config.tie_word_embeddings:
        model.tie_weights()
    model.generation_config = text.generation_config
    return model.float(), make_processor(tokenizer, spec)


def build_vlm(text_dir: Path | str, out_dir: Path | str, spec: VisionSpec, seed: int = 0) -> Path:
    """Write the model `assemble_vlm` makes, with its processor, to `out_dir`."""
    model, processor = assemble_vlm(text_dir, spec, seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    processor.save_pretrained(str(out_dir))  # tokenizer, picture settings, chat template
    return out_dir


def load_vlm(folder: Path | str) -> tuple[Any, Any]:
    """A saved LLaVA model and its processor, float32, for training; (model, processor)."""
    import torch
    from transformers import AutoModelForImageTextToText

    from genservice.generation.loader import load_processor

    model = AutoModelForImageTextToText.from_pretrained(
        str(folder), local_files_only=True, dtype=torch.float32
    )
    return model, load_processor(Path(folder))


def is_vlm_dir(folder: Path | str) -> bool:
    """Whether a model directory holds a LLaVA model (read from config.json only)."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("model_type") == "llava"


def image_slots(model: Any) -> tuple[int, int] | None:
    """(image token id, positions per picture) of a LLaVA model; None for a text model."""
    config: Any = getattr(model, "config", None)
    if getattr(config, "model_type", None) != "llava":
        return None
    return int(config.image_token_index), int(config.image_seq_length)


def expand_image_tokens(ids: list[int], token: int, count: int) -> list[int]:
    """Token ids with each image token repeated `count` times (one per patch), as the
    processor expands them when serving."""
    expanded: list[int] = []
    for value in ids:
        expanded.extend([token] * count if value == token else [value])
    return expanded


def pixel_values(processor: Any, paths: list[str]) -> Any:
    """The pictures at `paths`, squared and scaled, as one (n, 3, size, size) float tensor."""
    from PIL import Image

    from genservice.generation.pictures import square

    pictures = []
    for path in paths:
        with Image.open(path) as opened:
            pictures.append(square(opened))
    return processor.image_processor(pictures, return_tensors="pt")["pixel_values"]


def make_processor(tokenizer: Any, spec: VisionSpec) -> Any:
    """A LLaVA processor on the PIL backend: square pictures of spec.image_size, mean 0.5."""
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    images = CLIPImageProcessorPil(
        size={"height": spec.image_size, "width": spec.image_size},
        do_center_crop=False,
        do_resize=True,
        image_mean=IMAGE_MEAN,
        image_std=IMAGE_STD,
    )
    return LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=spec.patch_size,
        vision_feature_select_strategy="default",
        chat_template=VLM_CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
        num_additional_image_tokens=1,  # the class token the encoder adds and the model drops
    )
