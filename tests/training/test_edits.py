"""Edit tasks: one or two parameters of a reference changed, asked for in words, reproducible."""

from __future__ import annotations

import difflib
import random

from training.corpus.build import build_corpus
from training.corpus.edits import edit_row, with_edits
from validators.cad.program import find_parameters, parse


def _edits(n: int = 60, seed: int = 0) -> list[dict]:
    rows = build_corpus(n, seed, domains=["cad", "scene"])
    return [r for r in with_edits(rows, seed, 1.0) if r.get("edit")]


def test_an_edit_changes_only_the_named_parameters() -> None:
    edits = _edits()
    assert len(edits) > 40
    for row in edits:
        before = find_parameters(parse(row["previous_program"]))
        after = find_parameters(parse(row["reference"]))
        changed = {n for n in before if before[n].value != after[n].value}
        assert 1 <= len(changed) <= 2
        assert changed == {k.removeprefix("edit.") for k in row["params"] if k.startswith("edit.")}
        lines = [
            line
            for line in difflib.ndiff(
                row["previous_program"].splitlines(), row["reference"].splitlines()
            )
            if line[:1] in "+-"
        ]
        assert len(lines) == 2 * len(changed), "only the parameter lines differ"
        for name in changed:
            value = after[name].value
            shown = str(int(value)) if value == int(value) else f"{value:g}"
            assert shown in row["instruction"]
        assert "spec" not in row and row["split"] in ("train", "val", "test", "ood")


def test_edits_are_reproducible_and_optional() -> None:
    assert _edits(seed=3) == _edits(seed=3)
    rows = list(build_corpus(30, 0))
    assert list(with_edits(rows, 0, 0.0)) == rows
    code = next(r for r in rows if r["domain"] == "code")
    assert edit_row(code, random.Random(0)) is None
