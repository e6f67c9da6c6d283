"""Solved parts that look like the picture: a model's gallery of drawn train-split programs.

A small vision model reads a picture only roughly: it often names the right kind of part with
the wrong proportions, or a near kind. A person with a catalogue does better: find the parts
that look like the photo, start from the closest one and adjust it. The gallery is that
catalogue. It holds train-split references of the model's own corpus (never a test-split or
held-out one), each drawn once by the renderer from the rig's viewpoints and a ring of orbits
as coarse silhouettes (cropped to their extent and scaled to one square grid, so only shape
counts, as in image_match.py). For a picture request, the programs whose silhouettes look most
like the picture from some viewpoint join the model's samples as candidates: they are bound to
the numbers the words state, run the same checks, are scored by `image_match` like any sample,
and the fit (fit.py) then moves the best one's parameters toward the picture. A retrieved
candidate says where it came from (`retrieved_from`, the gallery entry's id).

The gallery lives in `<model>/gallery/` (`entries.jsonl.gz`: id, domain, family, program;
`views.npz`: the packed silhouettes; `index.json`: how it was built). `training/gallery.py`
builds it: `genservice corpus gallery`.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

GALLERY_DIR = "gallery"
ENTRIES_FILE = "entries.jsonl.gz"
VIEWS_FILE = "views.npz"
META_FILE = "index.json"
GRID = 24  # cells a side of a stored silhouette (image_match's 48-cell grid, pooled 2 x 2)
DRAW = 64  # pixels a side each view is drawn at
ELEVATIONS = (15.0, 30.0, 45.0, 60.0)  # degrees: pictures are taken from above the horizon
AZIMUTH_STEP = 30
NAMED = ("front", "top", "right", "iso", "back", "left")  # the rig's four come first
RETRIEVE_DEFAULT = 4  # gallery candidates a picture request gets unless it asks otherwise
MAX_RETRIEVE = 16
PER_FAMILY = 2  # at most this many of one family, so a near look-alike family is tried too


def default_retrieve(pictured: bool) -> int:
    """The gallery parts a request gets when it does not say: RETRIEVE_DEFAULT with a picture."""
    return RETRIEVE_DEFAULT if pictured else 0


@cache
def gallery_views() -> tuple[Any, ...]:
    """The viewpoints every entry is drawn from: the named views, then the orbit ring."""
    from exporters.render import View

    views = [View.named(name) for name in NAMED]
    for elevation in ELEVATIONS:
        for azimuth in range(0, 360, AZIMUTH_STEP):
            views.append(View.orbit(float(azimuth), elevation, perspective=True))
    return tuple(views)


def pooled(cells: np.ndarray) -> np.ndarray:
    """A normalised silhouette of image_match's grid at GRID cells a side (a cell is set when
    any of the cells it covers is: exactly what normalising at GRID would give)."""
    side = cells.shape[0] // GRID
    return np.asarray(cells.reshape(GRID, side, GRID, side).any(axis=(1, 3)), dtype=bool)


def silhouettes(parts: Any) -> np.ndarray:
    """The parts drawn from every gallery viewpoint: (views, GRID, GRID) booleans."""
    from exporters.render import Scene
    from genservice.generation.image_match import normalise

    scene = Scene(parts)
    drawn = np.zeros((len(gallery_views()), GRID, GRID), dtype=bool)
    for index, view in enumerate(gallery_views()):
        cells = normalise(scene.cast(view, DRAW).hit)
        if cells is not None:
            drawn[index] = pooled(cells)
    return drawn


@dataclass(frozen=True)
class GalleryEntry:
    """One solved part: its id, domain, family and program."""

    id: str
    domain: str
    family: str
    program: str


@dataclass(frozen=True)
class Retrieved:
    """A gallery entry that looks like the picture, how closely (silhouette IoU) and from
    which of the gallery's viewpoints ("rig" for a rig picture read panel by panel)."""

    entry: GalleryEntry
    score: float
    view: str


_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint16)


class Gallery:
    """Entries and their packed silhouettes; `nearest` finds those that look like a picture."""

    def __init__(self, entries: list[GalleryEntry], packed: np.ndarray) -> None:
        if not entries:
            raise ValueError("a gallery needs at least one entry")
        if packed.shape[:2] != (len(entries), len(gallery_views())):
            raise ValueError(
                f"the gallery's silhouettes ({packed.shape[0]} x {packed.shape[1]} views) do not "
                f"match its {len(entries)} entries of {len(gallery_views())} views: rebuild it"
            )
        self.entries = entries
        self.packed = packed

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def load(cls, model_dir: Path | str) -> Gallery | None:
        """The model's gallery, or None when it has none."""
        folder = Path(model_dir) / GALLERY_DIR
        if not (folder / ENTRIES_FILE).is_file() or not (folder / VIEWS_FILE).is_file():
            return None
        with gzip.open(folder / ENTRIES_FILE, "rt", encoding="utf-8") as lines:
            entries = [GalleryEntry(**json.loads(line)) for line in lines if line.strip()]
        with np.load(folder / VIEWS_FILE) as stored:
            packed = stored["silhouettes"]
        return cls(entries, packed)

    def save(self, folder: Path, meta: dict[str, Any]) -> None:
        """Write the gallery into `folder` (entries, silhouettes, how it was built)."""
        folder.mkdir(parents=True, exist_ok=True)
        with gzip.open(folder / ENTRIES_FILE, "wt", encoding="utf-8") as out:
            for entry in self.entries:
                out.write(json.dumps(entry.__dict__, ensure_ascii=False) + "\n")
        np.savez_compressed(folder / VIEWS_FILE, silhouettes=self.packed)
        (folder / META_FILE).write_text(
            json.dumps({**meta, "entries": len(self.entries), "grid": GRID,
                        "views": [v.name for v in gallery_views()]}, indent=2) + "\n",
            encoding="utf-8",
        )  # fmt: skip

    @staticmethod
    def pack(drawn: np.ndarray) -> np.ndarray:
        """(views, GRID, GRID) booleans as (views, GRID*GRID/8) bytes."""
        return np.packbits(drawn.reshape(drawn.shape[0], -1), axis=-1)

    def nearest(self, target: Any, domain: str, k: int = RETRIEVE_DEFAULT) -> list[Retrieved]:
        """Up to k entries of the domain that look most like the picture (an image_match
        Target), best first: distinct programs, at most PER_FAMILY of one family."""
        if k <= 0 or not target.readable:
            return []
        scores, views = self._scores(target)
        chosen: list[Retrieved] = []
        per_family: dict[str, int] = {}
        seen: set[str] = set()
        for index in np.argsort(-scores, kind="stable"):
            entry = self.entries[int(index)]
            if entry.domain != domain or entry.program in seen:
                continue
            if per_family.get(entry.family, 0) >= PER_FAMILY:
                continue
            seen.add(entry.program)
            per_family[entry.family] = per_family.get(entry.family, 0) + 1
            chosen.append(Retrieved(entry, round(float(scores[index]), 4), views[int(index)]))
            if len(chosen) == k:
                break
        return chosen

    def _scores(self, target: Any) -> tuple[np.ndarray, list[str]]:
        """Each entry's silhouette IoU with the picture at its best viewpoint (a rig picture:
        the mean over its four panels against the entry's rig views), and that viewpoint."""
        names = [v.name for v in gallery_views()]
        panels = target.panels
        if panels is not None and all(p is not None for p in panels):
            per_panel = [self._iou(pooled(panel[0]), self.packed[:, i]) for i, panel in
                         enumerate(panels)]  # fmt: skip
            return np.mean(per_panel, axis=0), ["rig"] * len(self.entries)
        wanted = pooled(target.whole[0])
        ious = self._iou(wanted, self.packed)  # (entries, views)
        best = ious.argmax(axis=1)
        return ious.max(axis=1), [names[int(i)] for i in best]

    @staticmethod
    def _iou(wanted: np.ndarray, packed: np.ndarray) -> np.ndarray:
        """IoU of one GRID x GRID silhouette with every packed one (any leading shape)."""
        mine = np.packbits(wanted.reshape(-1))
        inter = _BITS[packed & mine].sum(axis=-1, dtype=np.int32)
        union = _BITS[packed | mine].sum(axis=-1, dtype=np.int32)
        return np.where(union > 0, inter / np.maximum(union, 1), 0.0)
