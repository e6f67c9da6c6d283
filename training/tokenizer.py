"""A byte-level BPE tokenizer trained on the corpus, with a ChatML chat template.

Byte-level BPE round-trips any NFC text exactly (unicode, code, whitespace). Digits are split one
per token, so a model copies dimensions from the prompt digit by digit instead of having to learn
a separate token for every number. The result is a transformers `PreTrainedTokenizerFast` saved
with `save_pretrained`, so serving loads it with `AutoTokenizer` like any other model's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genservice.generation.prompts import SYSTEM, build_messages, repair_messages_of

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

# Qwen2's pre-tokenizer (its `\p{N}` takes one digit at a time) and NFC normaliser. transformers
# loads a tokenizer saved next to a qwen2 config as Qwen2Tokenizer, which rebuilds exactly this
# pipeline whatever tokenizer.json says, so training and serving split text the same way only if
# the tokenizer is trained with it.
PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
ENDOFTEXT, IM_START, IM_END, PAD = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, IM_END, PAD]

# ChatML. Content may be a string or a list of parts ({"type": "text", "text": ...}); a text-only
# model sees the text parts. The assistant turn ends with <|im_end|>, which is the eos token.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{%- set content = message['content'] -%}"
    "{%- else -%}{%- set content = message['content'] | selectattr('type', 'equalto', 'text') "
    "| map(attribute='text') | join('') -%}{%- endif -%}"
    "{{ '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)


def iter_corpus_texts(jsonl_path: str | Path) -> Iterator[str]:
    """The texts of a task JSONL a tokenizer should learn: user messages and reference programs."""

    def rows() -> Iterator[dict[str, Any]]:
        with Path(jsonl_path).open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{jsonl_path}:{number}: not JSON: {exc}") from exc
                if isinstance(row, dict):
                    yield row

    yield from iter_rows_texts(rows())


def iter_rows_texts(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """User messages (as build_messages writes them) and reference programs of task rows."""
    for row in rows:
        domain, prompt = row.get("domain"), row.get("prompt")
        if isinstance(domain, str) and isinstance(prompt, str) and domain in SYSTEM:
            if row.get("repair") and isinstance(row.get("failed_program"), str):
                messages = repair_messages_of(row)
            else:
                messages = build_messages(
                    domain, prompt, row.get("previous_program"), row.get("instruction")
                )
            yield str(messages[1]["content"])
        elif isinstance(prompt, str):
            yield prompt
        if isinstance(row.get("reference"), str):
            yield row["reference"]


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, out_dir: str | Path | None = None
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE (digits split) on texts plus the system messages; save if out_dir."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(
            f"vocab_size must be at least {256 + len(SPECIAL_TOKENS)} (the 256 bytes plus the "
            f"special tokens), got {vocab_size}"
        )
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )

    def everything() -> Iterator[str]:
        # The system messages are in every example: learn them as a few long tokens.
        for _ in range(50):
            yield from SYSTEM.values()
        yield from texts

    tokenizer.train_from_iterator(everything(), trainer=trainer)
    wrapped = wrap_tokenizer(tokenizer)
    if out_dir is not None:
        wrapped.save_pretrained(str(out_dir))
    return wrapped


def wrap_tokenizer(tokenizer: Any) -> PreTrainedTokenizerFast:
    """A `tokenizers.Tokenizer` as a transformers tokenizer with the ChatML template."""
    from transformers import PreTrainedTokenizerFast

    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=IM_END,
        pad_token=PAD,
        clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],
    )
    wrapped.add_special_tokens({"additional_special_tokens": [ENDOFTEXT, IM_START]})
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped
