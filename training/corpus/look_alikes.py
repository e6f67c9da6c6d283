"""Give a corpus's picture rows the look-alike a model that reads them is shown (gallery.py).

A model trained with look-alikes sees, before a picture request, the program of the gallery
part that looks most like the picture, scaled to the size the words state. Serving finds it
from the picture alone; training rows carry it (`look_alike`, with `look_alike_from`, the
entry's id), found here exactly as serving finds it, except that a row's own reference is never
its look-alike: the model is to learn to adapt a near part, not to copy the answer. Rows with
no picture, edits, code and rows whose look-alike is too long are written as they were.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHUNK = 64  # rows looked up between progress updates
LOOKED_UP = 2  # entries found per picture: the closest, and the next where it is the row's own


@dataclass
class LookAlikeStats:
    """What `attach_look_alikes` wrote: rows, pictures given a look-alike, and why not."""

    rows: int = 0
    pictures: int = 0
    shown: int = 0
    same_kind: int = 0  # the look-alike is of the row's own family (and base)
    skipped: Counter[str] = field(default_factory=Counter)


def attach_look_alikes(
    source: Path,
    output: Path,
    model_dir: Path,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> LookAlikeStats:
    """Write `source` to `output` with each new CAD/scene picture row given its look-alike from
    the gallery of the model in `model_dir`; picture paths are rewritten for the new folder."""
    from genservice.generation.gallery import Gallery
    from training.corpus.base import read_task_rows

    gallery = Gallery.load(model_dir)
    if gallery is None:
        raise ValueError(f"the model at {model_dir} has no gallery/ to find look-alikes in")
    rows = read_task_rows(source)
    stats = LookAlikeStats(rows=len(rows))
    wanted = [i for i, row in enumerate(rows) if _pictured(row)]
    stats.pictures = len(wanted)
    stats.skipped["no picture, an edit or code"] = len(rows) - len(wanted)

    def look_up(index: int) -> tuple[str, str] | str:
        return _look_alike(gallery, rows[index], source.parent)

    found: dict[int, tuple[str, str] | str] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            found.update(zip(chunk, threads.map(look_up, chunk), strict=True))
            if progress is not None:
                progress(min(start + CHUNK, len(wanted)), len(wanted))
    kinds = {entry.id: entry.kind for entry in gallery.entries}
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial")
    with partial.open("w", encoding="utf-8") as out:
        for index, row in enumerate(rows):
            row = dict(row)
            if row.get("images"):
                row["images"] = [_moved(name, source.parent, output.parent)
                                 for name in row["images"]]  # fmt: skip
            shown = found.get(index)
            if isinstance(shown, tuple):
                row["look_alike"], row["look_alike_from"] = shown
                stats.shown += 1
                stats.same_kind += kinds.get(shown[1]) == _kind(row)
            elif isinstance(shown, str):
                stats.skipped[shown] += 1
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    partial.replace(output)
    return stats


def _pictured(row: dict[str, Any]) -> bool:
    """A new CAD or scene request with a picture: serving shows such a request a look-alike."""
    return (
        bool(row.get("images"))
        and row.get("domain") in ("cad", "scene")
        and row.get("previous_program") is None
        and not row.get("repair")
        and isinstance(row.get("reference"), str)
    )


def _look_alike(gallery: Any, row: dict[str, Any], folder: Path) -> tuple[str, str] | str:
    """The row's look-alike (program, entry id), or why it has none."""
    from genservice.generation.gallery import look_alike_program
    from training.evaluate import picture_target

    try:  # read as an evaluation reads a task's pictures
        target = picture_target({"images": [str(folder / name) for name in row["images"]]})
    except OSError:
        return "picture unreadable"
    found = gallery.nearest(target, row["domain"], LOOKED_UP)
    if not found:
        return "no part read in the picture"
    shown = look_alike_program(found, row["prompt"], avoid=row["reference"])
    return shown if shown is not None else "look-alike too long"


def _kind(row: dict[str, Any]) -> str:
    """The row's kind as GalleryEntry.kind names it (family, or family:base)."""
    composition = (row.get("params") or {}).get("composition")
    family = str(row.get("family", ""))
    return f"{family}:{str(composition).split('+')[0]}" if composition else family


def _moved(name: str, old: Path, new: Path) -> str:
    """A picture path relative to `old`'s folder, made relative to `new`'s."""
    path = Path(name)
    if path.is_absolute():
        return name
    return os.path.relpath((old / path).resolve(), new.resolve())
