"""Retrieval of solved examples: the nearest same-domain task, never the task itself, saved with
the model, put in the prompt only when it fits — the same in training and serving."""

from __future__ import annotations

from pathlib import Path

import pytest

from genservice.generation.prompts import build_messages
from genservice.generation.retrieval import (
    INDEX_DIR,
    ExampleIndex,
    SolvedExample,
    request_messages,
)
from training.corpus.build import build_corpus

ROWS = list(build_corpus(900, seed=3))


def corpus_index(max_seq_len: int | None = None) -> ExampleIndex:
    return ExampleIndex.from_tasks(
        [r for r in ROWS if r["split"] == "train"], per_family=20, seed=0, max_seq_len=max_seq_len
    )


class CharTokenizer:
    """One token a character: enough to measure prompt lengths."""

    def apply_chat_template(self, messages: list, tokenize: bool, add_generation_prompt: bool):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


def test_nearest_is_a_train_task_of_the_same_family_for_held_out_requests() -> None:
    index = corpus_index()
    held_out = [r for r in ROWS if r["split"] in ("val", "test")]
    assert held_out
    same = 0
    for row in held_out:
        found = index.nearest(row["domain"], row["prompt"])
        assert found is not None and found.domain == row["domain"]
        assert found.id != row["id"]
        same += found.family == row["family"]
    # Requests are worded many ways, but the family's words still find the family.
    assert same / len(held_out) >= 0.9, f"{same} of {len(held_out)}"


def test_a_task_never_retrieves_itself_and_other_domains_never_match() -> None:
    index = corpus_index()
    indexed = index.examples[0]
    assert index.nearest(indexed.domain, indexed.prompt) == indexed
    other = index.nearest(indexed.domain, indexed.prompt, exclude=[indexed.id])
    assert other is not None and other.id != indexed.id
    only_cad = ExampleIndex([e for e in index.examples if e.domain == "cad"])
    assert only_cad.nearest("code", "Write a function that reverses a string") is None
    assert index.nearest("cad", "zzz qqq") is None  # nothing in common: no example at all


def test_index_saves_beside_the_model_and_loads_identically(tmp_path: Path) -> None:
    index = corpus_index(max_seq_len=900)
    folder = index.save(tmp_path)
    assert folder == tmp_path / INDEX_DIR
    first = (folder / "examples.jsonl.gz").read_bytes()
    index.save(tmp_path)
    assert (folder / "examples.jsonl.gz").read_bytes() == first  # reproducible bytes
    loaded = ExampleIndex.load(tmp_path)
    assert loaded is not None and loaded.max_seq_len == 900
    assert loaded.examples == index.examples
    for row in ROWS[:30]:
        assert loaded.nearest(row["domain"], row["prompt"]) == index.nearest(
            row["domain"], row["prompt"]
        )
    assert ExampleIndex.load(tmp_path / "elsewhere") is None


def test_from_tasks_draws_per_family_and_leaves_edits_out() -> None:
    rows = [r for r in ROWS if r["split"] == "train"]
    edit = {**rows[0], "id": "edit-1", "previous_program": "x = 1\n", "instruction": "more"}
    index = ExampleIndex.from_tasks([*rows, edit], per_family=2, seed=0)
    families = {r["family"] for r in rows}
    assert len(index) <= 2 * len(families)
    assert {e.family for e in index.examples} == families
    assert "edit-1" not in {e.id for e in index.examples}
    again = ExampleIndex.from_tasks([*rows, edit], per_family=2, seed=0)
    assert again.examples == index.examples


def test_prompt_carries_the_example_before_the_request() -> None:
    index = corpus_index()
    row = next(r for r in ROWS if r["domain"] == "cad" and r["split"] == "test")
    messages = request_messages(CharTokenizer(), index, "cad", row["prompt"])
    example = index.nearest("cad", row["prompt"])
    assert example is not None
    text = messages[1]["content"]
    assert text.startswith(f"Example request: {example.prompt.strip()}")
    assert example.program.strip() in text
    assert text.endswith(f"Request: {row['prompt'].strip()}")
    assert messages[0] == build_messages("cad", row["prompt"])[0]


def test_no_example_for_edits_for_models_without_an_index_or_when_it_does_not_fit() -> None:
    tok = CharTokenizer()
    prompt = "a plate 80 x 40 mm, 5 mm thick"
    plain = build_messages("cad", prompt)
    assert request_messages(tok, None, "cad", prompt) == plain
    edit = request_messages(tok, corpus_index(), "cad", prompt, "x = 1\n", "make it 6 mm thick")
    assert edit == build_messages("cad", prompt, "x = 1\n", "make it 6 mm thick")
    # The prompt with the example plus a reply as long as its program must fit.
    assert request_messages(tok, corpus_index(max_seq_len=300), "cad", prompt) == plain
    assert request_messages(tok, corpus_index(max_seq_len=100_000), "cad", prompt) != plain


def test_an_edit_with_an_example_is_refused() -> None:
    with pytest.raises(ValueError, match="takes no example"):
        build_messages("cad", "p", "x = 1\n", "change", example=("q", "y = 2\n"))


def test_an_empty_index_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one example"):
        ExampleIndex([])
    assert SolvedExample("a", "cad", "f", "p", "q").to_dict()["family"] == "f"
