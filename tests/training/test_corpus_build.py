"""The corpus builder and `genservice corpus`: deterministic, deduplicated, split by hash."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from genservice.task_audit import schema_problems
from training.corpus import families as registry
from training.corpus.base import SPLITS, Family, params_key, split_of
from training.corpus.build import build_corpus, select_families, write_corpus
from training.corpus.code_tasks import FAMILIES as CODE_FAMILIES

ROOT = Path(__file__).resolve().parents[2]
CODE_NAMES = [f.name for f in CODE_FAMILIES]


def loadable_families() -> list[Family]:
    """Families of every module that exists and loads (others are still being written)."""
    found: list[Family] = []
    for module in registry.MODULES:
        try:
            found += registry._load(module) or []
        except Exception:
            continue
    return found


def rows(path: Path) -> list[dict]:
    """The tasks of a JSONL file."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    """The corpus is a function of the seed."""
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    write_corpus(a, 120, 3, domains=["code"], progress=False)
    write_corpus(b, 120, 3, domains=["code"], progress=False)
    write_corpus(c, 120, 4, domains=["code"], progress=False)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert len(rows(a)) == 120
    assert not list(tmp_path.glob(".*partial"))


def test_a_smaller_corpus_is_a_prefix() -> None:
    """More rows with the same seed extend the corpus; they do not reshuffle it."""
    small = list(build_corpus(30, 9, domains=["code"]))
    large = list(build_corpus(90, 9, domains=["code"]))
    assert large[:30] == small


def test_equal_share_per_family_no_duplicates_valid_schema() -> None:
    """Families take turns; ids are unique; every row is a well-formed task."""
    corpus = list(build_corpus(12 * len(CODE_NAMES), 1, domains=["code"]))
    shares = Counter(row["family"] for row in corpus)
    assert shares == dict.fromkeys(CODE_NAMES, 12)
    assert len({row["id"] for row in corpus}) == len(corpus)
    assert len({params_key(r["family"], r["params"]) for r in corpus}) == len(corpus)
    for row in corpus:
        assert schema_problems(row) == [], row["id"]
        assert row["domain"] == "code"


def test_an_exhausted_family_drops_out() -> None:
    """A family with few distinct tasks gives each once, then the others fill the corpus."""
    alone = list(build_corpus(500, 2, families=["roman_numerals"]))
    assert 20 <= len(alone) < 500
    assert len({r["id"] for r in alone}) == len(alone)
    assert {r["split"] for r in alone} == {"ood"}
    mixed = list(build_corpus(200, 2, families=["roman_numerals", "caesar_shift"]))
    assert len(mixed) == 200 and len({r["id"] for r in mixed}) == 200


def test_phrasings_word_a_train_parameter_set_anew_and_leave_val_and_test_alone() -> None:
    """--phrasings K: a family with few parameter sets fills its share with new wordings of its
    train rows (each id unique, each request new); val and test keep one row per parameter set."""
    once = list(build_corpus(600, 2, families=["gcd_lcm"]))
    assert list(build_corpus(600, 2, families=["gcd_lcm"], phrasings=1)) == once
    assert len(once) < 300  # the family runs out of parameter sets
    many = list(build_corpus(400, 2, families=["gcd_lcm"], phrasings=4))
    assert len(many) == 400
    assert len({r["id"] for r in many}) == 400
    by_key: dict[str, list[dict]] = {}
    for row in many:
        by_key.setdefault(params_key(row["family"], row["params"]), []).append(row)
    repeated = [group for group in by_key.values() if len(group) > 1]
    assert repeated and max(len(group) for group in repeated) <= 4
    for group in repeated:
        assert {r["split"] for r in group} == {"train"}
        assert len({r["prompt"] for r in group}) == len(group)
        assert len({r["reference"] for r in group}) == 1
        assert [r["id"].rsplit("-p", 1)[-1] for r in group[1:]] == [
            str(k) for k in range(2, len(group) + 1)
        ]
    held = {r["id"] for r in many if r["split"] != "train"}
    assert held <= {r["id"] for r in once if r["split"] != "train"}
    with pytest.raises(ValueError, match="at least 1"):
        build_corpus(5, 1, phrasings=0)


@pytest.mark.parametrize("family", loadable_families(), ids=lambda f: f.name)
def test_splits_by_hash(family: Family) -> None:
    """Over 500 draws an in-distribution family splits roughly 80/10/10; held out is all ood.
    (A family with its own split rule is tested with it: test_compositional.py.)"""
    if hasattr(family, "split_rule"):
        pytest.skip("the family has its own split rule")
    splits = Counter(
        split_of(family, family.sample(random.Random(f"split:{family.name}:{i}")).params)
        for i in range(500)
    )
    if family.held_out:
        assert set(splits) == {"ood"}
        return
    assert set(splits) == set(SPLITS)
    shares = {split: splits[split] / 500 for split in SPLITS}
    assert 0.68 <= shares["train"] <= 0.9, shares
    assert 0.04 <= shares["val"] <= 0.18, shares
    assert 0.04 <= shares["test"] <= 0.18, shares


def test_split_filter() -> None:
    """--split keeps only that split; ood draws only from held-out families."""
    val = list(build_corpus(40, 5, domains=["code"], split="val"))
    assert len(val) == 40 and {r["split"] for r in val} == {"val"}
    ood = list(build_corpus(10, 5, domains=["code"], split="ood"))
    assert {r["family"] for r in ood} == {"roman_numerals"}
    with pytest.raises(ValueError, match="no family"):
        list(build_corpus(5, 5, families=["roman_numerals"], split="train"))


def test_bad_arguments_raise_before_drawing() -> None:
    """Unknown family or domain, n < 1, bad split: a ValueError from the call itself."""
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        build_corpus(5, 1, families=["nope"])
    with pytest.raises(ValueError, match="unknown domain"):
        build_corpus(5, 1, domains=["audio"])
    with pytest.raises(ValueError, match="at least 1"):
        build_corpus(0, 1)
    with pytest.raises(ValueError, match="unknown split"):
        build_corpus(5, 1, split="dev")


def test_unstated_changes_only_the_families_that_can_leave_dimensions_out() -> None:
    """--unstated: that share of flange rows leaves dimensions unstated; every other family's
    rows are the same as without it, and a share of 0 is the plain corpus."""
    families = ["flange", "washer_spacer", "primes"]
    plain = list(build_corpus(150, 3, families=families))
    assert list(build_corpus(150, 3, families=families, unstated=0.0)) == plain
    mixed = list(build_corpus(150, 3, families=families, unstated=0.5))
    for name in ("washer_spacer", "primes"):
        assert [r for r in mixed if r["family"] == name] == [
            r for r in plain if r["family"] == name
        ]
    flanges = [r for r in mixed if r["family"] == "flange"]
    terse = [r for r in flanges if "unstated" in r["params"]]
    assert 0.3 < len(terse) / len(flanges) < 0.7
    assert not [r for r in plain if "unstated" in r["params"]]
    assert all(r["spec"]["holes"] == r["params"]["bolt_count"] + 1 for r in terse)
    with pytest.raises(ValueError, match="between 0 and 1"):
        build_corpus(5, 1, unstated=1.5)


def test_registry() -> None:
    """Code families are registered; names are unique; lookups by name work."""
    names = registry.family_names(["code"])
    assert names == CODE_NAMES
    assert registry.get_family("primes").domain == "code"
    assert [f.name for f in select_families(["primes", "durations"])] == ["primes", "durations"]
    every = [f.name for f in loadable_families()]
    assert len(every) == len(set(every))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "genservice", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_cli_build_then_validate_tasks(tmp_path: Path) -> None:
    """`genservice corpus build` writes a sound task set: `validate-tasks` exits 0 on it."""
    build = _cli(
        "corpus", "build", "--n", "40", "--seed", "1", "-o", "f.jsonl", "--domains", "code",
        cwd=tmp_path,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    assert "caesar_shift" in build.stdout and "wrote 40 tasks" in build.stdout
    corpus = rows(tmp_path / "f.jsonl")
    assert len(corpus) == 40 and {r["domain"] for r in corpus} == {"code"}
    audit = _cli("validate-tasks", "f.jsonl", "--workers", "2", cwd=tmp_path)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "40 sound, 0 broken" in audit.stdout


def test_cli_summary_json_and_split(tmp_path: Path) -> None:
    """--json prints the counts per family and split; --split filters."""
    run = _cli(
        "corpus", "build", "--n", "12", "--seed", "2", "-o", "v.jsonl", "--families",
        "primes,durations", "--split", "val", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["rows"] == 12
    assert summary["families"] == {
        "primes": {"domain": "code", "val": 6},
        "durations": {"domain": "code", "val": 6},
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--n", "5", "-o", "x.jsonl", "--families", "nope"], "unknown family 'nope'"),
        (["--n", "0", "-o", "x.jsonl"], "--n must be at least 1"),
        (["--n", "5", "-o", "missing/dir/x.jsonl", "--domains", "code"], "no such directory"),
        (["--n", "5", "-o", ".", "--domains", "code"], "is a directory"),
        (["--n", "5", "-o", "x.jsonl", "--domains", "audio"], "unknown domain"),
        (["--n", "5", "-o", "x.jsonl", "--unstated", "2"], "between 0 and 1"),
    ],
)
def test_cli_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    """Usage errors: exit 2 with a clear message, and no file written."""
    run = _cli("corpus", "build", *args, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_corpus_help_loads_neither_torch_nor_cadquery() -> None:
    """`genservice corpus build --help` stays light."""
    probe = (
        "import contextlib, io, json, sys\n"
        "import genservice.cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    genservice.cli.main(['corpus', 'build', '--help'])\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert set(json.loads(run.stdout)).isdisjoint({"torch", "cadquery", "OCP"})
