"""Solved parts that look like the picture: a model's gallery of drawn train-split programs.

A small vision model reads a picture only roughly: it often names the right kind of part with
the wrong proportions, or a near kind. A person with a catalogue does better: find the parts
that look like the photo, start from the closest one and adjust it. The gallery is that
catalogue. It holds train-split references of the model's own corpus (never a test-split or
held-out one), each drawn once by the renderer from the rig's viewpoints and a ring of orbits
as coarse silhouettes and outlines (cropped to their extent and scaled to one square grid, so
only shape counts). A viewpoint scores as image_match.py scores one, on the coarse grid: 0.6 x
silhouette IoU + 0.4 x outline F1 (one cell of tolerance), so a washer and a plate seen square
on, alike in silhouette, differ by their edges. For a picture request, the programs that look
most like the picture from some viewpoint join the model's samples as candidates: they are bound to
the numbers the words state, run the same checks, are scored by `image_match` like any sample,
and the fit (fit.py) then moves the best one's parameters toward the picture. A retrieved
candidate says where it came from (`retrieved_from`, the gallery entry's id).

A model trained with look-alikes (`genservice corpus look-alikes`, then SFT) is also shown the
program of the picture's closest entry in its prompt, scaled to the words' size, so that its own
first sample adapts a part of the right kind instead of writing one from a rough reading of the
picture; `<model>/look_alike.json` says it reads them.

The gallery lives in `<model>/gallery/` (`entries.jsonl.gz`: id, domain, family, program, a
compositional part's composition;
`views.npz`: the packed silhouettes; `index.json`: how it was built). `training/gallery.py`
builds it: `genservice corpus gallery`.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Sequence
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
# Gallery candidates a picture request gets unless it asks otherwise: eight are at least four
# kinds of part (PER_KIND), and the pictured kind is among the eight entries that look most like
# the picture about four times in five (docs/pictures.md, "Kinds of part and several fits").
RETRIEVE_DEFAULT = 8
MAX_RETRIEVE = 16
LOOK_ALIKE_FILE = "look_alike.json"  # beside the weights: the model reads a look-alike
LOOK_ALIKE_MAX_CHARS = 1600  # a longer program is not shown (it would crowd out the reply)
PER_KIND = 2  # at most this many of one kind of part, so a near look-alike kind is tried too


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
    """The parts drawn from every gallery viewpoint: (views, 2, GRID, GRID) booleans, the
    silhouette and the outline (creases, steps and the rim) of each."""
    from exporters.render import Scene, edges
    from genservice.generation.image_match import normalise

    scene = Scene(parts)
    drawn = np.zeros((len(gallery_views()), 2, GRID, GRID), dtype=bool)
    for index, view in enumerate(gallery_views()):
        frame = scene.cast(view, DRAW)
        cells, lines = normalise(frame.hit), normalise(frame.hit, edges(frame))
        if cells is not None and lines is not None:
            drawn[index] = pooled(cells), pooled(lines)
    return drawn


@dataclass(frozen=True)
class GalleryEntry:
    """One solved part: its id, domain, family, program, measured extents (x, y, z mm) and, for
    a compositional part, its composition (base and features: "turned_flanged+holes_polar")."""

    id: str
    domain: str
    family: str
    program: str
    extent_mm: tuple[float, ...] | None = None
    composition: str | None = None

    @property
    def kind(self) -> str:
        """What kind of part it is, for telling look-alikes apart: its family, or a
        compositional part's base ("compositional:swept_tube"), which half the gallery shares
        one family name for."""
        if self.composition:
            return f"{self.family}:{self.composition.split('+')[0]}"
        return self.family

    @property
    def design(self) -> str:
        """Its design: the family, or a compositional part's whole composition (base and
        features). Two entries of one design differ only in their numbers, which the fit
        moves anyway, so fitting both would try the same part twice."""
        return f"{self.family}:{self.composition}" if self.composition else self.family

    def scaled_to(self, text: str) -> str:
        """The program with every measure scaled by one factor so that the part takes the
        overall size the words state ("like this, 120 x 40 x 10 mm", "60 mm across"); as it is
        when they state none. One factor keeps the proportions, which are the picture's; the
        fit then puts each stated size right (fit.py)."""
        if self.extent_mm is None:
            return self.program
        factor = size_factor(text, self.domain, self.extent_mm)
        if factor is None or abs(factor - 1.0) < 0.01:
            return self.program
        return scale_measures(self.program, factor)


def size_factor(text: str, domain: str, extent_mm: Sequence[float]) -> float | None:
    """The one scale that brings a part of these extents closest to the overall sizes the
    words state (the geometric mean over them, largest stated to largest extent and so on);
    None when they state none."""
    from genservice.generation.asked import asked_items

    stated: list[float] = []
    largest: list[float] = []
    for item in asked_items(text, domain):
        if item["what"] == "box":
            stated += [float(v) for v in item["values_mm"]]
        elif item["what"] in ("largest", "across", "diameter", "od"):
            largest.append(float(item["value_mm"]))
        elif item["what"] in ("length", "width", "height", "thickness", "depth"):
            stated.append(float(item["value_mm"]))
    extents = sorted((float(v) for v in extent_mm), reverse=True)
    if not extents or extents[0] <= 0:
        return None
    pairs = zip(sorted(stated, reverse=True), extents, strict=False)
    ratios = [want / have for want, have in pairs if have > 0 and want > 0]
    ratios += [want / extents[0] for want in largest if want > 0]
    if not ratios:
        return None
    return float(np.exp(np.mean(np.log(ratios))))


def scale_measures(program: str, factor: float) -> str:
    """The program with every float parameter that is a measure (not an angle, not zero)
    multiplied by `factor` (to four significant figures); counts stay."""
    from genservice.generation.fit import is_angle
    from validators.cad.program import ProgramError, apply_parameters, find_parameters, parse

    try:
        parameters = find_parameters(parse(program))
    except ProgramError:
        return program
    changes = {
        name: float(f"{float(p.value) * factor:.4g}")
        for name, p in parameters.items()
        if p.type == "float" and isinstance(p.value, float) and p.value and not is_angle(name)
    }
    try:
        return apply_parameters(program, changes) if changes else program
    except ProgramError:
        return program


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
        if packed.shape[:3] != (len(entries), len(gallery_views()), 2):
            raise ValueError(
                f"the gallery's silhouettes {tuple(packed.shape)} do not match its "
                f"{len(entries)} entries of {len(gallery_views())} views: rebuild it"
            )
        from genservice.generation.image_match import grown

        self.entries = entries
        self.packed = packed
        self._designs = {entry.id: entry.design for entry in entries}
        # The outlines with one cell of tolerance, for the F1's precision; grown a few hundred
        # entries at a time, so loading never holds every outline unpacked at once.
        self._outlines_grown = np.concatenate([
            _pack(grown(_unpack(packed[start : start + 256, :, 1])))
            for start in range(0, len(entries), 256)
        ])  # fmt: skip

    def __len__(self) -> int:
        return len(self.entries)

    def design_of(self, entry_id: str | None) -> str | None:
        """The design (GalleryEntry.design) of the entry with this id; None for any other."""
        return self._designs.get(entry_id) if entry_id is not None else None

    @classmethod
    def load(cls, model_dir: Path | str) -> Gallery | None:
        """The model's gallery, or None when it has none."""
        folder = Path(model_dir) / GALLERY_DIR
        if not (folder / ENTRIES_FILE).is_file() or not (folder / VIEWS_FILE).is_file():
            return None
        with gzip.open(folder / ENTRIES_FILE, "rt", encoding="utf-8") as lines:
            entries = [_entry(json.loads(line)) for line in lines if line.strip()]
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
        """(..., GRID, GRID) booleans (silhouettes()) as (..., GRID*GRID/8) bytes."""
        return _pack(drawn)

    def nearest(self, target: Any, domain: str, k: int = RETRIEVE_DEFAULT) -> list[Retrieved]:
        """Up to k entries of the domain that look most like the picture (an image_match
        Target), best first: distinct programs, at most PER_KIND of one kind (GalleryEntry.kind)."""
        if k <= 0 or not target.readable:
            return []
        scores, views = self._scores(target)
        chosen: list[Retrieved] = []
        per_kind: dict[str, int] = {}
        seen: set[str] = set()
        for index in np.argsort(-scores, kind="stable"):
            entry = self.entries[int(index)]
            if entry.domain != domain or entry.program in seen:
                continue
            if per_kind.get(entry.kind, 0) >= PER_KIND:
                continue
            seen.add(entry.program)
            per_kind[entry.kind] = per_kind.get(entry.kind, 0) + 1
            chosen.append(Retrieved(entry, round(float(scores[index]), 4), views[int(index)]))
            if len(chosen) == k:
                break
        return chosen

    def _scores(self, target: Any) -> tuple[np.ndarray, list[str]]:
        """Each entry's score against the picture at its best viewpoint (a rig picture: the
        mean over its four panels against the entry's rig views; several pictures of one part,
        image_match.Pictures: the mean over those that show a part), and that viewpoint (the
        first readable picture's)."""
        several = getattr(target, "targets", None)
        if several is not None:
            read = [self._scores(one) for one in several if one.readable]
            return np.mean([scores for scores, _ in read], axis=0), read[0][1]
        names = [v.name for v in gallery_views()]
        panels = target.panels
        if panels is not None and all(p is not None for p in panels):
            per_panel = [self._view_scores(panel, slice(i, i + 1))[:, 0] for i, panel in
                         enumerate(panels)]  # fmt: skip
            return np.mean(per_panel, axis=0), ["rig"] * len(self.entries)
        scores = self._view_scores(target.whole, slice(None))  # (entries, views)
        best = scores.argmax(axis=1)
        return scores.max(axis=1), [names[int(i)] for i in best]

    def _view_scores(self, reading: Any, views: slice) -> np.ndarray:
        """0.6 x silhouette IoU + 0.4 x outline F1 of a picture's reading (image_match's,
        pooled to GRID) against every entry at the given viewpoints: (entries, views)."""
        from genservice.generation.image_match import grown

        silhouette, outline = pooled(reading[0]), pooled(reading[1])
        drawn, lines = self.packed[:, views, 0], self.packed[:, views, 1]
        mine = _pack(silhouette)
        inter = _count(drawn & mine)
        union = _count(drawn | mine)
        iou = inter / np.maximum(union, 1)
        edges, near = _pack(outline), _pack(grown(outline))
        own = max(int(np.count_nonzero(outline)), 1)
        theirs = np.maximum(_count(lines), 1)
        precision = _count(self._outlines_grown[:, views] & edges) / own
        recall = _count(lines & near) / theirs
        f1 = np.where(precision + recall > 0, 2 * precision * recall /
                      np.maximum(precision + recall, 1e-9), 0.0)  # fmt: skip
        return np.asarray(0.6 * iou + 0.4 * f1)


def gallery_candidates(
    bound: Sequence[str], scaled: Sequence[str], ids: Sequence[str]
) -> list[tuple[str, str]]:
    """The candidates gallery parts give, as (program, entry id): each part bound to the
    numbers its words state and, where binding changed it, also as it was only scaled. A
    gallery part's parameter names were written for another request, so a name the words use
    may mean another extent there ("5.5 mm long" set as a standoff's `length`, its height);
    the checks choose, and the size fit then meets the stated sizes by the extents."""
    found: list[tuple[str, str]] = []
    for program, plain, entry_id in zip(bound, scaled, ids, strict=True):
        found.append((program, entry_id))
        if plain != program:
            found.append((plain, entry_id))
    return found


def look_alike_program(
    found: Sequence[Retrieved], prompt: str, avoid: str | None = None
) -> tuple[str, str] | None:
    """The program a model that reads look-alikes is shown with a picture, and its entry's id:
    the closest entry (not one whose program is `avoid`, a training row's own reference),
    scaled to the size the words state; None when there is none or it is longer than
    LOOK_ALIKE_MAX_CHARS."""
    for retrieved in found:
        if retrieved.entry.program == avoid:
            continue
        program = retrieved.entry.scaled_to(prompt)
        return (program, retrieved.entry.id) if len(program) <= LOOK_ALIKE_MAX_CHARS else None
    return None


def checked_look_alike(ranked: Sequence[str]) -> str | None:
    """The look-alike a model is shown once a picture's gallery parts were checked: the first
    of them, best first as the checks rank them (scaled and bound to the words already), short
    enough to show. The checks build each part and score it against the picture from any
    viewpoint, so their best is closer to the pictured part than the closest coarse silhouette."""
    return next((program for program in ranked if len(program) <= LOOK_ALIKE_MAX_CHARS), None)


def reads_look_alikes(model_dir: Path | str) -> bool:
    """Whether the model in `model_dir` was trained to read a look-alike with a picture."""
    return (Path(model_dir) / LOOK_ALIKE_FILE).is_file()


def mark_look_alikes(output: Path | str, rows: int) -> None:
    """Record in a trained model's folder that it reads look-alikes (`rows` taught it)."""
    info = {"rows": rows, "max_chars": LOOK_ALIKE_MAX_CHARS,
            "shown": "the closest gallery entry's program, scaled to the words' size"}  # fmt: skip
    (Path(output) / LOOK_ALIKE_FILE).write_text(json.dumps(info, indent=2) + "\n")


def carry_gallery(from_dir: Path | str | None, output: Path | str) -> bool:
    """Give a model trained from `from_dir` that model's gallery (its parts and drawings do
    not depend on the weights, so a fine-tuned model reads pictures with the same catalogue)
    and, when it reads look-alikes, that mark (the weights carry the habit); whether there was
    a gallery to carry. Whatever gallery `output` held before is replaced."""
    target = Path(output) / GALLERY_DIR
    source = None if from_dir is None else Path(from_dir) / GALLERY_DIR
    if source is not None and source.resolve() == target.resolve():
        return (source / ENTRIES_FILE).is_file()  # trained in place: it is already there
    shutil.rmtree(target, ignore_errors=True)
    (Path(output) / LOOK_ALIKE_FILE).unlink(missing_ok=True)
    if source is None or not (source / ENTRIES_FILE).is_file():
        return False
    shutil.copytree(source, target)
    if reads_look_alikes(source.parent):
        shutil.copyfile(source.parent / LOOK_ALIKE_FILE, Path(output) / LOOK_ALIKE_FILE)
    return True


def _entry(data: dict[str, Any]) -> GalleryEntry:
    extent = data.pop("extent_mm", None)
    return GalleryEntry(**data, extent_mm=tuple(extent) if extent else None)


def _pack(cells: np.ndarray) -> np.ndarray:
    """(..., GRID, GRID) booleans as (..., GRID*GRID/8) bytes."""
    return np.packbits(cells.reshape(*cells.shape[:-2], GRID * GRID), axis=-1)


def _unpack(packed: np.ndarray) -> np.ndarray:
    """The inverse of _pack."""
    cells = np.unpackbits(packed, axis=-1, count=GRID * GRID)
    return cells.reshape(*packed.shape[:-1], GRID, GRID).astype(bool)


def _count(packed: np.ndarray) -> np.ndarray:
    """Set bits along the last axis."""
    return _BITS[packed].sum(axis=-1, dtype=np.int32)
