"""Reworded grammar requests (corpus build `--novel-names`, `--more-words`, `--unsaid-defaults`):
a thing called by a name no family uses still gets its own program, split and id; the wider
vocabulary still says what the part measures; a default left unsaid is the one the program
takes; and all are off unless asked for."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from genservice.generation.asked import asked_items, task_items
from training.corpus.build import Wording, build_corpus
from training.corpus.novel_names import NEVER, made_up_word, novel_name
from training.corpus.phrasing import more_words, pick, pick_more
from validators.cad.request import request_check
from validators.cad.validate import CadOptions, validate_cad

BENT = ("swept_tube", "swept_rod", "leaning")


def _rows(n: int, family: str, wording: Wording) -> list[dict[str, Any]]:
    return list(build_corpus(n, 3, [family], wording=wording))


def _failing_references(rows: list[dict[str, Any]], pool: Any) -> list[tuple[str, Any]]:
    """The rows whose reference fails its checks (spec and its own words) in the sandbox."""

    def judge(row: dict[str, Any]) -> Any:
        scene = row["domain"] == "scene"
        return validate_cad(
            row["reference"],
            pool,
            spec=row["spec"],
            domain=row["domain"],
            options=CadOptions(printability=False, physics=scene),
            request=task_items(row),
        )

    with ThreadPoolExecutor(2) as threads:
        reports = list(threads.map(judge, rows))
    return [(r["prompt"], p.error) for r, p in zip(rows, reports, strict=True) if not p.valid]


def test_made_up_names_are_pronounceable_new_words() -> None:
    """Deterministic by seed, never a held-out or real part's noun, and varied."""
    words = [made_up_word(random.Random(i)) for i in range(500)]
    assert words == [made_up_word(random.Random(i)) for i in range(500)]
    assert not [w for w in words if w in NEVER or any(w.startswith(n) for n in NEVER)]
    assert len(set(words)) > 450
    assert all(w.isalpha() and w.islower() and len(w) >= 4 for w in words)
    names = {novel_name(random.Random(i)) for i in range(200)}
    assert "part" in names or "piece" in names or "object" in names


@pytest.mark.parametrize("family", ["compositional", "furniture"])
def test_a_novel_name_replaces_only_the_words_name(family: str) -> None:
    """The same shapes, programs, specs, ids and splits as without it; the request no longer
    says the drawn name, and says every size it said before."""
    plain = _rows(60, family, Wording())
    renamed = _rows(60, family, Wording(novel_names=1.0))
    assert [r["id"] for r in renamed] == [r["id"] for r in plain]
    for before, after in zip(plain, renamed, strict=True):
        assert after["reference"] == before["reference"]
        assert after["spec"] == before["spec"] and after["split"] == before["split"]
        assert after["prompt"] != before["prompt"]
    if family == "compositional":  # its rows keep the drawn name in their parameters
        said = [r["params"]["name"].lower() in r["prompt"].lower() for r in renamed]
        assert sum(said) <= 3  # a plain noun ("part") may be inside a drawn name


def test_shares_are_checked_and_zero_changes_nothing() -> None:
    """A share outside 0-1 is refused; at 0 the corpus is the one built without the option."""
    with pytest.raises(ValueError, match="novel_names"):
        Wording(novel_names=1.5)
    with pytest.raises(ValueError, match="more_words"):
        Wording(more_words=-0.1)
    with pytest.raises(ValueError, match="unsaid_defaults"):
        Wording(unsaid_defaults=2.0)
    assert _rows(40, "compositional", Wording(0.0, 0.0)) == _rows(40, "compositional", Wording())
    reworded = Wording(0.3, 0.5)
    for family in ("compositional", "furniture"):
        assert _rows(60, family, Wording(0.3, 0.5, 0.0)) == _rows(60, family, reworded)


def test_pick_more_draws_as_pick_unless_the_wider_vocabulary_is_on() -> None:
    """Off, pick_more takes the same option and the same randomness as pick; on, the extra
    options are drawn too."""
    options = ["a", "b", "c"]

    def extra() -> list[str]:  # draws from the stream, as a phrase with a length does
        raise AssertionError("the extra phrasings are not made with the wider vocabulary off")

    for seed in range(50):
        one, two = random.Random(seed), random.Random(seed)
        assert pick_more(one, options, extra) == pick(two, options)
        assert one.random() == two.random()
    with more_words():
        drawn = {pick_more(random.Random(seed), options, lambda: ["x", "y"]) for seed in range(100)}
    assert drawn == {"a", "b", "c", "x", "y"}


def test_wider_words_still_say_what_the_part_measures(pool: Any) -> None:
    """Reworded bent, leaning and furniture requests build valid parts that pass the request
    check of their own words in the real sandbox: the wider vocabulary is read as meant."""
    wording = Wording(novel_names=0.5, more_words=1.0)
    bent = [
        r
        for r in _rows(700, "compositional", wording)
        if r["params"]["composition"].split("+")[0] in BENT
    ][:24]
    scenes = _rows(12, "furniture", wording)
    assert {r["params"]["composition"].split("+")[0] for r in bent} == set(BENT)

    assert not _failing_references(bent + scenes, pool)
    for row in scenes:  # words the request check reads are the scene's sizes
        items = asked_items(row["prompt"])
        if items:
            metrics = {"bbox_mm": row["spec"]["bbox_mm"], "holes": 0, "solids": 9}
            check = request_check(items, metrics)
            assert check is not None and check.passed, (row["prompt"], check and check.detail)


def test_unsaid_defaults_are_the_ones_the_programs_take(pool: Any) -> None:
    """With every row leaving its defaults unsaid, half the bends or more are right angles said
    by their radius alone, every backrest is as thick as the legs and its thickness goes unsaid,
    and the parts still build and pass the request check of their own words."""
    wording = Wording(unsaid_defaults=1.0)
    bends = [r for r in _rows(1500, "compositional", wording) if "bend_angle" in r["params"]]
    right = [r for r in bends if r["params"]["bend_angle"] == 90]
    assert len(bends) >= 20 and len(right) >= len(bends) / 2
    for row in right:
        words = row["prompt"].lower()
        assert not any(w in words for w in ("°", "degree", "deg ", "turn")), words
    for row in bends:
        if row["params"]["bend_angle"] != 90:
            assert f"{row['params']['bend_angle']:g}" in row["prompt"], row["prompt"]
    backed = [r for r in _rows(80, "furniture", wording) if "back" in r["params"]]
    assert len(backed) >= 20
    for row in backed:
        p = row["params"]
        assert p["back_t"] == p["leg"]
        said_thick = ("thick on the back edge", "mm thick, standing", " thick)", "as thick as")
        assert not any(w in row["prompt"] for w in said_thick), row["prompt"]
    assert not _failing_references(right[:8] + backed[:8], pool)
