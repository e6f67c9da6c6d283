"""Build a task corpus: draw samples from the families, deduplicate them, write JSONL.

The draw is deterministic by seed. Families take turns (an equal share each); the k-th draw of
a family uses `random.Random(f"{seed}:{family}:{k}")`, so a corpus of n rows is a prefix of a
corpus of more rows with the same seed and families. A sample whose parameters were already
drawn (same params_key, hence same id) is skipped and the family draws again; a family that
finds nothing new in MAX_MISSES draws in a row is exhausted and drops out of the rotation. With a
split filter only rows of that split are kept.

With `phrasings` K > 1, a train-split parameter set may come back up to K times, each time
worded anew (a row's id gains `-p2`, `-p3`...): families with few parameter sets (a code family
has a few hundred) then fill their share with more requests to learn from instead of running
out. Val and test rows stay one per parameter set, and at 1 the corpus is unchanged.

With `unstated` > 0, that share of the draws of families that can leave dimensions unstated (a
`sample_unstated` method: "a 60 mm flange with six M5 bolt holes", no bore or bolt circle, the
reference deriving them) comes from that method; whether a draw does depends on its own seeded
stream, so other families' rows, and the whole corpus at 0, stay the same.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.corpus.base import SPLITS, Family, params_key, split_of, to_task

ALL_SPLITS = (*SPLITS, "ood")
MAX_MISSES = 200  # draws in a row with nothing new before a family counts as exhausted


@dataclass
class CorpusSummary:
    """What a build wrote: rows per family and split, and whether families ran out."""

    path: Path | None
    rows: int
    requested: int
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # family -> split -> rows
    domains: dict[str, str] = field(default_factory=dict)  # family -> domain

    @property
    def short(self) -> bool:
        """True when the families ran out of new tasks before `requested` rows."""
        return self.rows < self.requested

    def add(self, row: dict[str, Any]) -> None:
        """Count one row."""
        self.rows += 1
        self.counts.setdefault(row["family"], Counter())[row["split"]] += 1
        self.domains[row["family"]] = row["domain"]


def select_families(
    families: Sequence[str | Family] | None = None,
    domains: Sequence[str] | None = None,
    split: str | None = None,
) -> list[Family]:
    """The families to draw from; ValueError for unknown names or domains, or an empty choice."""
    from training.corpus.families import FamilyError, families_for

    if split is not None and split not in ALL_SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(ALL_SPLITS)}")
    objects = [f for f in families or [] if not isinstance(f, str)]
    names = [f for f in families or [] if isinstance(f, str)]
    try:
        if objects:
            chosen = objects + (families_for(None, names) if names else [])
            if domains is not None:
                chosen = [f for f in chosen if f.domain in domains]
        else:
            chosen = families_for(
                list(domains) if domains is not None else None,
                names if families is not None else None,
            )
    except FamilyError as exc:
        raise ValueError(str(exc.args[0] if exc.args else exc)) from exc
    if split is not None:
        chosen = [f for f in chosen if f.held_out == (split == "ood")]
    if not chosen:
        raise ValueError("no family matches the chosen families, domains and split")
    return chosen


def build_corpus(
    n: int,
    seed: int | str,
    families: Sequence[str | Family] | None = None,
    domains: Sequence[str] | None = None,
    split: str | None = None,
    unstated: float = 0.0,
    phrasings: int = 1,
) -> Iterator[dict[str, Any]]:
    """Up to n task rows (fewer only when every family runs out), deterministic by seed.

    Bad arguments raise ValueError here, before the first row is drawn.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 <= unstated <= 1.0:
        raise ValueError(f"unstated is a share between 0 and 1, got {unstated}")
    if phrasings < 1:
        raise ValueError(f"phrasings must be at least 1, got {phrasings}")
    chosen = select_families(families, domains, split)
    return _rows(n, seed, chosen, split, unstated, phrasings)


@dataclass
class _Seen:
    """The parameter sets drawn so far, how many rows each gave, and the requests already used."""

    rows: Counter[str] = field(default_factory=Counter)
    prompts: set[tuple[str, str]] = field(default_factory=set)


def _rows(
    n: int,
    seed: int | str,
    chosen: list[Family],
    split: str | None,
    unstated: float,
    phrasings: int,
) -> Iterator[dict[str, Any]]:
    draws = dict.fromkeys((f.name for f in chosen), 0)
    seen = _Seen()
    active = list(chosen)
    produced = 0
    while produced < n and active:
        for family in list(active):
            if produced >= n:
                break
            row = _next_row(family, seed, draws, seen, split, unstated, phrasings)
            if row is None:
                active.remove(family)
                continue
            produced += 1
            yield row


def _next_row(
    family: Family,
    seed: int | str,
    draws: dict[str, int],
    seen: _Seen,
    split: str | None,
    unstated: float,
    phrasings: int,
) -> dict[str, Any] | None:
    """The family's next new row (of the split, if one is asked for); None when exhausted."""
    for _ in range(MAX_MISSES):
        sample = _draw(family, f"{seed}:{family.name}:{draws[family.name]}", unstated)
        draws[family.name] += 1
        key = params_key(family.name, sample.params)
        given = seen.rows[key]
        if given:
            # Another wording of a parameter set already drawn: a train row, a new request.
            limit = phrasings if split_of(family, sample.params) == "train" else 1
            if given >= limit or (key, sample.prompt) in seen.prompts:
                continue
        seen.rows[key] += 1
        seen.prompts.add((key, sample.prompt))
        if split is not None and split_of(family, sample.params) != split:
            continue
        task = to_task(family, sample)
        if given:
            task["id"] += f"-p{given + 1}"
        return task
    return None


def _draw(family: Family, stream: str, unstated: float) -> Any:
    """One sample of the family from its seeded stream (leaving dimensions unstated, maybe)."""
    rng = random.Random(stream)
    leave_out = getattr(family, "sample_unstated", None)
    if leave_out is None or unstated == 0:
        return family.sample(rng)
    if random.Random(f"{stream}:unstated").random() < unstated:
        return leave_out(rng)
    return family.sample(rng)


def write_corpus(
    path: Path | str,
    n: int,
    seed: int | str,
    families: Sequence[str | Family] | None = None,
    domains: Sequence[str] | None = None,
    split: str | None = None,
    progress: bool = True,
    edits: float = 0.0,
    unstated: float = 0.0,
    phrasings: int = 1,
) -> CorpusSummary:
    """Write the corpus as JSONL (one task per line, written atomically); a summary.

    With `edits` > 0, that share of CAD and scene tasks is followed by an edit task made from it
    (training/corpus/edits.py): n counts the tasks before edits.
    """
    from training.corpus.edits import with_edits

    path = Path(path)
    rows = build_corpus(n, seed, families, domains, split, unstated, phrasings)  # raises early
    if edits:
        rows = with_edits(rows, seed, edits)
    summary = CorpusSummary(path, 0, n)
    partial = path.with_name(f".{path.name}.partial")
    bar: Any = None
    try:
        with partial.open("w", encoding="utf-8") as out:
            if progress:
                bar = _progress()
                bar.start()
                task = bar.add_task("building corpus", total=n)
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                summary.add(row)
                if bar is not None and not row.get("edit"):
                    bar.advance(task)
        os.replace(partial, path)
    finally:
        if bar is not None:
            bar.stop()
        partial.unlink(missing_ok=True)
    return summary


def _progress() -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
