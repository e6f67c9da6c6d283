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

With `compositional` > 0, that share of the n rows comes from the compositional family (an
opt-in family, training/corpus/compositional.py), spread evenly through the corpus: row i is
compositional when floor((i + 1) * share) > floor(i * share). The other rows are the rows the
chosen families would give without it, in the same order; at 0 (the default) the corpus is
byte-for-byte what it was. The compositional rows are those of `--families compositional`.

With a `Wording` (`novel_names`, `more_words`, `unsaid_defaults` > 0), that share of the rows of
grammar-drawn families (compositional, furniture: those whose `sample` takes `called`) calls the
thing by a name no family uses (training/corpus/novel_names.py), may use the wider vocabulary
of phrasings (phrasing.pick_more), or draws a part's conventional default and leaves it unsaid
(phrasing.defaults_unsaid: a right-angle bend said by its radius, a backrest as thick as the
legs): each row decides by its own seeded stream, and at 0 (the default) the corpus is what it
was.

With `repair` > 0 (write_corpus), that share of CAD and scene tasks is followed by a repair task
made from it (training/corpus/repair.py: a broken program, the validator's real error, the
original program as the target); with `verify`, every row of a grammar-drawn (opt-in) family
(compositional, furniture) is validated in the sandbox first and dropped when its reference
fails (counted in the summary).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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
    repairs: Counter[str] = field(default_factory=Counter)  # breakage -> repair rows written
    repairs_discarded: Counter[str] = field(default_factory=Counter)  # breakage -> did not fail
    dropped: Counter[str] = field(default_factory=Counter)  # family -> rows failing --verify
    invalid_sources: int = 0  # rows given no repair because their own reference failed

    @property
    def short(self) -> bool:
        """True when the families ran out of new tasks before `requested` rows."""
        return self.rows < self.requested

    def add(self, row: dict[str, Any]) -> None:
        """Count one row."""
        self.rows += 1
        self.counts.setdefault(row["family"], Counter())[row["split"]] += 1
        self.domains[row["family"]] = row["domain"]


@dataclass(frozen=True)
class Wording:
    """Shares of grammar-drawn rows reworded: a made-up name, the wider vocabulary, conventional
    defaults left unsaid."""

    novel_names: float = 0.0
    more_words: float = 0.0
    unsaid_defaults: float = 0.0

    def __post_init__(self) -> None:
        for name in ("novel_names", "more_words", "unsaid_defaults"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a share between 0 and 1, got {getattr(self, name)}")


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
    if split is not None:  # a family with its own split rule may have rows of any split
        chosen = [f for f in chosen if hasattr(f, "split_rule") or f.held_out == (split == "ood")]
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
    compositional: float = 0.0,
    check: Callable[[Iterator[dict[str, Any]]], Iterator[dict[str, Any]]] | None = None,
    wording: Wording = Wording(),
) -> Iterator[dict[str, Any]]:
    """Up to n task rows (fewer only when every family runs out), deterministic by seed;
    `compositional` is the share of them drawn from the compositional family, `check` a filter
    of the stream of drawn rows (dropping rows that fail a sandbox run, say) before n are taken.

    Bad arguments raise ValueError here, before the first row is drawn.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 <= unstated <= 1.0:
        raise ValueError(f"unstated is a share between 0 and 1, got {unstated}")
    if phrasings < 1:
        raise ValueError(f"phrasings must be at least 1, got {phrasings}")
    if not 0.0 <= compositional <= 1.0:
        raise ValueError(f"compositional is a share between 0 and 1, got {compositional}")
    composed = _composed(domains) if compositional else None
    if compositional >= 1.0:
        chosen: list[Family] = []
    else:
        chosen = select_families(families, domains, split)
        if composed is not None and composed.name in {f.name for f in chosen}:
            raise ValueError(
                f"{composed.name} is among the families already: name it or give it a share"
            )
    seen = _Seen()
    draws: dict[str, int] = {}
    stream = _rotation(seed, chosen, split, unstated, wording, phrasings, seen, draws)
    if composed is not None:
        extra = _rotation(seed, [composed], split, unstated, wording, phrasings, seen, draws)
        stream = _interleaved(stream, extra, compositional)
    return itertools.islice(check(stream) if check is not None else stream, n)


def _composed(domains: Sequence[str] | None) -> Family:
    """The compositional family, for a share of a corpus; ValueError when its domain is out."""
    from training.corpus.families import FamilyError, get_family

    try:
        family = get_family("compositional")
    except FamilyError as exc:
        raise ValueError(str(exc.args[0] if exc.args else exc)) from exc
    if domains is not None and family.domain not in domains:
        raise ValueError(f"the compositional family is {family.domain}, not in {list(domains)}")
    return family


def _interleaved(
    plain: Iterator[dict[str, Any]], extra: Iterator[dict[str, Any]], share: float
) -> Iterator[dict[str, Any]]:
    """Rows of `extra` at a share of the positions, spread evenly; the other stream when one
    runs out."""
    for i in itertools.count():
        first, second = (
            (extra, plain)
            if math.floor((i + 1) * share) > math.floor(i * share)
            else (plain, extra)
        )
        row = next(first, None)
        if row is None:
            row = next(second, None)
        if row is None:
            return
        yield row


@dataclass
class _Seen:
    """The parameter sets drawn so far, how many rows each gave, and the requests already used."""

    rows: Counter[str] = field(default_factory=Counter)
    prompts: set[tuple[str, str]] = field(default_factory=set)


def _rotation(
    seed: int | str,
    chosen: list[Family],
    split: str | None,
    unstated: float,
    wording: Wording,
    phrasings: int,
    seen: _Seen,
    draws: dict[str, int],
) -> Iterator[dict[str, Any]]:
    """The families' rows, taking turns, until every family runs out (drawn lazily)."""
    for family in chosen:
        draws.setdefault(family.name, 0)
    active = list(chosen)
    while active:
        for family in list(active):
            row = _next_row(family, seed, draws, seen, split, unstated, wording, phrasings)
            if row is None:
                active.remove(family)
                continue
            yield row


def _next_row(
    family: Family,
    seed: int | str,
    draws: dict[str, int],
    seen: _Seen,
    split: str | None,
    unstated: float,
    wording: Wording,
    phrasings: int,
) -> dict[str, Any] | None:
    """The family's next new row (of the split, if one is asked for); None when exhausted."""
    for _ in range(MAX_MISSES):
        stream = f"{seed}:{family.name}:{draws[family.name]}"
        sample = _draw(family, stream, unstated, wording)
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


def _draw(family: Family, stream: str, unstated: float, wording: Wording = Wording()) -> Any:
    """One sample of the family from its seeded stream (leaving dimensions unstated, or
    reworded, maybe)."""
    rng = random.Random(stream)
    if getattr(family, "opt_in", False) and (
        wording.novel_names or wording.more_words or wording.unsaid_defaults
    ):
        from training.corpus.novel_names import novel_name
        from training.corpus.phrasing import defaults_unsaid, more_words

        called = None
        if random.Random(f"{stream}:novel").random() < wording.novel_names:
            called = novel_name(random.Random(f"{stream}:novel-name"))
        wider = random.Random(f"{stream}:wider").random() < wording.more_words
        unsaid = random.Random(f"{stream}:unsaid").random() < wording.unsaid_defaults
        sample: Any = family.sample  # a grammar-drawn family's sample also takes `called`
        with more_words(wider), defaults_unsaid(unsaid):
            return sample(rng, called=called) if called else sample(rng)
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
    compositional: float = 0.0,
    repair: float = 0.0,
    verify: bool = False,
    pool: Any = None,
    workers: int = 2,
    limits: Any = None,
    wording: Wording = Wording(),
) -> CorpusSummary:
    """Write the corpus as JSONL (one task per line, written atomically); a summary.

    With `edits` > 0, that share of CAD and scene tasks is followed by an edit task made from it
    (training/corpus/edits.py): n counts the tasks before edits. `compositional` is the share of
    rows drawn from the compositional family; with `verify` each of those is validated in the
    sandbox and dropped if it fails (summary.dropped). With `repair` > 0, that share of CAD and
    scene tasks is followed by a repair task (training/corpus/repair.py; summary.repairs, and
    summary.repairs_discarded for breakages that did not fail). Both run in `pool`, or in a pool
    of `workers` opened here.
    """
    if not 0.0 <= repair <= 1.0:
        raise ValueError(f"repair is a share between 0 and 1, got {repair}")
    path = Path(path)
    summary = CorpusSummary(path, 0, n)
    drawn = (n, seed, families, domains, split, unstated, phrasings, compositional)
    build_corpus(*drawn, wording=wording)  # raises

    def draw(check: Any) -> Iterator[dict[str, Any]]:
        return build_corpus(*drawn, check, wording=wording)

    if (repair or verify) and pool is None:
        from validators.sandbox import Limits, SandboxPool

        with SandboxPool(size=workers, limits=limits or Limits(wall_s=20.0)) as opened:
            sandbox = (opened, workers, limits)
            return _write(path, n, seed, summary, progress, edits, repair, verify, sandbox, draw)
    sandbox = (pool, workers, limits)
    return _write(path, n, seed, summary, progress, edits, repair, verify, sandbox, draw)


def _write(
    path: Path,
    n: int,
    seed: int | str,
    summary: CorpusSummary,
    progress: bool,
    edits: float,
    repair: float,
    verify: bool,
    sandbox: tuple[Any, int, Any],
    draw: Callable[[Any], Iterator[dict[str, Any]]],
) -> CorpusSummary:
    """Draw, verify, add edits and repairs, and write the rows atomically with a progress bar."""
    from training.corpus.edits import with_edits
    from training.corpus.families import all_families, is_opt_in
    from training.corpus.repair import RepairStats, verified, with_repairs

    pool, workers, limits = sandbox
    # Rows of the grammar-drawn (opt-in) families are the ones --verify runs in the sandbox.
    grammar_drawn = {f.name for f in all_families(opt_in=True) if is_opt_in(f)}

    def composed(row: dict[str, Any]) -> bool:
        return bool(row["family"] in grammar_drawn)

    def check(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        return verified(rows, pool, composed, summary.dropped, limits, workers)

    rows = draw(check if verify else None)
    if edits:
        rows = with_edits(rows, seed, edits)
    stats = RepairStats()
    if repair:
        rows = with_repairs(rows, seed, repair, pool, stats, limits, workers)
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
                if bar is not None and not row.get("edit") and not row.get("repair"):
                    bar.advance(task)
        os.replace(partial, path)
    finally:
        if bar is not None:
            bar.stop()
        partial.unlink(missing_ok=True)
    summary.repairs, summary.repairs_discarded = stats.written, stats.discarded
    summary.invalid_sources = stats.invalid_sources
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
