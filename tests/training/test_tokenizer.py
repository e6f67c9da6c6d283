"""The corpus tokenizer: exact round trips, one token per digit, the ChatML template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genservice.generation.prompts import build_messages
from training.tokenizer import (
    CHAT_TEMPLATE,
    IM_END,
    IM_START,
    PAD,
    SPECIAL_TOKENS,
    iter_corpus_texts,
    train_tokenizer,
)

CAD = """import cadquery as cq

outer_d = 60.0
thickness = 8.0
bolt_count = 6
bolt_d = 5.5

result = (
    cq.Workplane("XY")
    .circle(outer_d / 2)
    .extrude(thickness)
    .faces(">Z")
    .workplane()
    .polarArray(outer_d * 0.375, 0, 360, bolt_count)
    .hole(bolt_d)
)
"""
CODE = "def add(a, b):\n\t# tabs, trailing spaces   \n    return a + b\n\n\n"
PROMPTS = [
    "Ø60 mm, 8 mm thick — M5",
    "a 60 mm flange with six M5 bolt holes, 8 mm thick",
    "plate 120×80×6, corner radius 5 mm, 4x Ø6.5 holes",
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    texts = [CAD, CODE, *PROMPTS] * 20 + [f"width = {n}.5\n" for n in range(0, 400, 7)]
    out = tmp_path_factory.mktemp("tok")
    tok = train_tokenizer(texts, 600, out)
    return tok, out


@pytest.mark.parametrize(
    "text",
    [
        CAD,
        CODE,
        *PROMPTS,
        "日本語のテキスト ✓ 🚀 naïve café",
        "  leading and trailing whitespace\n\n\t ",
        "",
        "<not special> <|im_start without closing",
    ],
)
def test_round_trip_is_exact(tokenizer, text: str) -> None:
    tok, _ = tokenizer
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text


def test_every_digit_is_its_own_token(tokenizer) -> None:
    tok, _ = tokenizer
    text = "length = 1234567890.25 and 60 mm"
    tokens = tok.convert_ids_to_tokens(tok.encode(text, add_special_tokens=False))
    digits = [t for t in tokens if any(c.isdigit() for c in t)]
    assert digits == [*"123456789025", "6", "0"]
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


def test_special_tokens_are_single_and_named(tokenizer) -> None:
    tok, _ = tokenizer
    assert tok.eos_token == IM_END
    assert tok.pad_token == PAD
    for special in SPECIAL_TOKENS:
        ids = tok.encode(special, add_special_tokens=False)
        assert len(ids) == 1
        assert tok.convert_ids_to_tokens(ids) == [special]
    assert tok.encode("hello", add_special_tokens=True) == tok.encode(
        "hello", add_special_tokens=False
    )  # no bos/eos added behind the caller's back


def test_chat_template_writes_chatml(tokenizer) -> None:
    tok, _ = tokenizer
    messages = build_messages("cad", PROMPTS[0])
    text = tok.apply_chat_template(messages, tokenize=False)
    system = messages[0]["content"]
    assert text == (f"{IM_START}system\n{system}{IM_END}\n{IM_START}user\n{PROMPTS[0]}{IM_END}\n")
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt == text + f"{IM_START}assistant\n"
    full = tok.apply_chat_template(
        [*messages, {"role": "assistant", "content": CAD}], tokenize=False
    )
    assert full == prompt + CAD + f"{IM_END}\n"


def test_chat_template_reads_text_parts_of_multimodal_messages(tokenizer) -> None:
    tok, _ = tokenizer
    messages = build_messages("cad", "a cube", images=2)
    text = tok.apply_chat_template(messages, tokenize=False)
    assert f"{IM_START}user\na cube{IM_END}" in text


def test_saved_tokenizer_loads_with_auto_tokenizer(tokenizer) -> None:
    from transformers import AutoTokenizer

    tok, out = tokenizer
    loaded = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert loaded.chat_template == CHAT_TEMPLATE
    assert loaded.eos_token == IM_END and loaded.pad_token == PAD
    assert loaded.encode(CAD, add_special_tokens=False) == tok.encode(CAD, add_special_tokens=False)
    messages = build_messages("code", "add two numbers")
    assert loaded.apply_chat_template(messages, add_generation_prompt=True) == (
        tok.apply_chat_template(messages, add_generation_prompt=True)
    )


def test_a_qwen2_model_dir_loads_it_with_the_same_splits(tokenizer, tmp_path: Path) -> None:
    """transformers rebuilds a qwen2 dir's tokenizer as Qwen2Tokenizer: nothing may change."""
    from transformers import AutoTokenizer, Qwen2Config

    tok, _ = tokenizer
    model_dir = tmp_path / "model"
    tok.save_pretrained(str(model_dir))
    Qwen2Config(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1).save_pretrained(
        str(model_dir)
    )
    loaded = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    assert type(loaded).__name__ == "Qwen2Tokenizer"
    assert loaded.eos_token == IM_END and loaded.pad_token == PAD
    for text in [CAD, CODE, *PROMPTS, "x = 1234\n\n\n    y\t= 5"]:
        assert loaded.encode(text, add_special_tokens=False) == tok.encode(
            text, add_special_tokens=False
        )


def test_text_is_nfc_normalised(tokenizer) -> None:
    tok, _ = tokenizer
    decomposed = "cafe\u0301"
    assert tok.decode(tok.encode(decomposed, add_special_tokens=False)) == "caf\u00e9"


def test_trained_merges_shorten_code(tokenizer) -> None:
    tok, _ = tokenizer
    assert len(tok.encode(CAD, add_special_tokens=False)) < len(CAD.encode()) / 2


def test_too_small_vocab_is_refused() -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(["abc"], 100)


def test_iter_corpus_texts_reads_user_messages_and_programs(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "domain": "cad", "prompt": "a cube", "reference": "result = 1\n"},
        {
            "id": "b",
            "domain": "cad",
            "prompt": "a cube",
            "reference": "result = 2\n",
            "previous_program": "result = 1\n",
            "instruction": "make it 2",
        },
        {"id": "c", "domain": "code", "prompt": "add"},
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    texts = list(iter_corpus_texts(path))
    assert texts[:2] == ["a cube", "result = 1\n"]
    assert "Current program:\nresult = 1" in texts[2] and "Change: make it 2" in texts[2]
    assert texts[3:] == ["result = 2\n", "add"]
