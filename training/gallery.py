"""Build a model's picture gallery (genservice/generation/gallery.py) from a task corpus.

Only train-split CAD and scene rows with a program are taken (the families and the
compositional parts; never a test-split or held-out one, so an evaluation on the test split
never finds its own reference), one entry per distinct program. Each runs in the sandbox once
and is drawn from every gallery viewpoint; rows whose program builds nothing are counted and
left out. Same corpus, limit and seed: the same gallery.
"""

from __future__ import annotations

import random
import shutil
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genservice.generation.gallery import Gallery, GalleryEntry, silhouettes

CHUNK = 64  # rows drawn between progress updates


@dataclass
class GalleryStats:
    """What a build took in and left out."""

    candidates: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    families: Counter[str] = field(default_factory=Counter)


def gallery_rows(source: Path, limit: int, seed: int) -> list[dict[str, Any]]:
    """The corpus's train-split drawable rows, one per distinct program, shuffled by seed and
    cut to `limit` (0: all)."""
    from training.corpus.base import read_task_rows
    from training.corpus.images import drawable

    rows: dict[str, dict[str, Any]] = {}
    for row in read_task_rows(source):
        if row.get("split") == "train" and drawable(row):
            rows.setdefault(row["reference"], row)
    chosen = sorted(rows.values(), key=lambda r: r["id"])
    random.Random(seed).shuffle(chosen)
    return chosen[:limit] if limit > 0 else chosen


def build_gallery(
    source: Path,
    output: Path,
    pool: Any,
    workers: int,
    limits: Any = None,
    limit: int = 0,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Gallery, GalleryStats]:
    """Draw the corpus's train-split programs and write the gallery into `output`."""
    from exporters.export import ExportError, script_parts
    from exporters.render import RenderError

    rows = gallery_rows(source, limit, seed)
    if not rows:
        raise ValueError(f"{source} has no train-split CAD or scene rows with a program")
    stats = GalleryStats(candidates=len(rows))

    def draw(row: dict[str, Any]) -> tuple[np.ndarray, Any] | str:
        try:
            parts, report = script_parts(
                row["reference"], pool, limits=limits, domain=row["domain"]
            )
            extent = report.metrics.get("bbox_mm")
            return Gallery.pack(silhouettes(parts)), extent
        except (ExportError, RenderError) as exc:
            return f"{row['id']}: {exc}"
        except Exception as exc:  # one row's surprise never ends a long build: it is reported
            return f"{row['id']}: {type(exc).__name__}: {exc}"

    entries: list[GalleryEntry] = []
    packed: list[np.ndarray] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            for row, drawn in zip(chunk, threads.map(draw, chunk), strict=True):
                if isinstance(drawn, str):
                    stats.failed += 1
                    stats.failures.append(drawn)
                    continue
                silhouettes_of, extent = drawn
                entries.append(
                    GalleryEntry(
                        row["id"], row["domain"], row["family"], row["reference"],
                        tuple(round(float(v), 3) for v in extent) if extent else None,
                        (row.get("params") or {}).get("composition"),
                    )
                )  # fmt: skip
                packed.append(silhouettes_of)
                stats.families[row["family"]] += 1
            if progress is not None:
                progress(min(start + CHUNK, len(rows)), len(rows))
    if not entries:
        raise ValueError(f"none of the {len(rows)} programs of {source} could be drawn")
    gallery = Gallery(entries, np.stack(packed))
    # Written beside the output and moved into place: a failed build leaves the old gallery.
    partial = output.with_name(f".{output.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    gallery.save(partial, {"source": str(source), "limit": limit, "seed": seed,
                           "failed": stats.failed})  # fmt: skip
    if output.exists():
        shutil.rmtree(output)
    partial.replace(output)
    return gallery, stats
