"""Image tasks: a CAD or scene task's reference drawn as a person would photograph or screenshot it.

An image row is made from a task row whose reference is a program (the families and the
compositional parts; not edits, repairs or code). The reference runs in the sandbox once, its
tessellation is drawn by the renderer (exporters/render.py) with a `Look` drawn at random —
mostly one view from a random viewpoint through a pinhole lens, sometimes the orthographic
four-view rig; shaded, outlined (a sketch), silhouette, normals or depth; varied part colour,
background, light and resolution — and the row asks for the part with a short request, with or
without words ("make this", "this part, 60 mm across", "like this, 120 x 40 x 10 mm").

Row: the source's id + `-image-<k>`, domain, family, split (the source's: no leak across
splits), `prompt` (the words, possibly only "make this"), `images` (paths relative to the
JSONL file), `look` (how the picture was taken), `reference`, params, `source_prompt` and a
spec. A picture has no scale, so the spec keeps the source's sizes (`bbox_mm`, `volume_mm3`)
only when the words give the size; counts (solids, holes) always. `image: true` marks it.

With `views` above one, each image task shows its part in that many pictures, as a person
photographs a part from two or three sides: the first as ever (so a set's first pictures are
the same with or without more views), each other one from another side (at least 60 degrees
round from the first, any height above the horizon) in the first's style, colours, light and
size. A rig picture stays alone: it shows four views already.

Pictures are cached by content: the file name is the digest of the reference, its parameters
and the look, so a rebuild with the same seed renders nothing twice. Same seed, same rows and
the same PNG bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from training.corpus.base import read_task_rows

CHUNK = 32  # references run and drawn together
MAX_VIEWS = 4  # pictures of one part a task may show (as a request may carry)
# The share of pictures that are the four-view rig (the rest: one view from a random place);
# an evaluation of multi-view reading (as research systems read pictures) asks for all rig.
RIG_SHARE = 0.15
IMAGE_DIR = "images"  # beside the JSONL file
STYLES = {"shaded": 0.5, "lines": 0.18, "normals": 0.14, "silhouette": 0.08, "depth": 0.1}
PART_COLOURS = [
    (0.58, 0.66, 0.76),  # steel blue
    (0.72, 0.72, 0.72),  # aluminium grey
    (0.85, 0.45, 0.25),  # orange plastic
    (0.30, 0.55, 0.35),  # green
    (0.80, 0.75, 0.55),  # sand
    (0.35, 0.40, 0.75),  # blue
    (0.75, 0.30, 0.35),  # red
    (0.25, 0.25, 0.28),  # black anodised
]
BACKGROUNDS = [(246, 247, 249), (255, 255, 255), (230, 232, 236), (214, 222, 232), (40, 42, 48)]
NO_WORDS = [
    "make this",
    "Make this.",
    "model this part",
    "this part in CadQuery",
    "build the part in the picture",
    "recreate this",
    "CAD for this, please",
    "the object shown",
    "write the CadQuery program for this part",
    "same as the picture",
]
ACROSS = [
    "this part, {big} mm across",
    "make this, {big} mm across",
    "like this, about {big} mm overall",
    "this, largest side {big} mm",
    "model this part; it is {big} mm at its widest",
]
SIZED = [
    "like this, {x} x {y} x {z} mm",
    "make this part: {x} by {y} by {z} mm",
    "this one, overall {x} x {y} x {z}",
    "model the part in the picture, {x} mm long, {y} mm wide, {z} mm tall",
    "this, {x} x {y} x {z} mm overall",
]


@dataclass(frozen=True)
class Look:
    """How a picture is taken: camera (one orbit view or the rig), style, colours and size."""

    views: str  # "orbit" or "rig"
    azimuth: float
    elevation: float
    fov_deg: float
    style: str
    size: int
    color: tuple[float, float, float]
    background: tuple[int, int, int]
    light: tuple[float, float, float]

    def key(self) -> str:
        """A stable text of the look (part of the picture's cache digest)."""
        return json.dumps(asdict(self), sort_keys=True)


def draw_look(rng: random.Random, rig_share: float = RIG_SHARE) -> Look:
    """A random look: mostly one view from above the horizon, the four-view rig `rig_share`
    of the time."""
    rig = rng.random() < rig_share
    style = rng.choices(list(STYLES), weights=list(STYLES.values()))[0]
    if rng.random() < 0.1:  # square on, as a screenshot of a front or side view would be
        azimuth, elevation = rng.choice([0.0, 90.0, 180.0, 270.0]), rng.choice([0.0, 90.0])
    else:
        azimuth, elevation = rng.uniform(0, 360), rng.uniform(12, 65)
    light_azimuth = math.radians(rng.uniform(-160, -20))
    light = (math.cos(light_azimuth) * 0.6, 0.55 + rng.uniform(-0.2, 0.3), 0.75)
    return Look(
        views="rig" if rig else "orbit",
        azimuth=round(azimuth, 1),
        elevation=round(elevation, 1),
        fov_deg=round(rng.uniform(25, 50), 1),
        style=style,
        size=rng.choice([112, 128, 160, 192, 224]) if not rig else rng.choice([96, 112, 128]),
        color=rng.choice(PART_COLOURS),
        background=rng.choice(BACKGROUNDS) if style != "lines" else (255, 255, 255),
        light=(round(light[0], 3), round(light[1], 3), light[2]),
    )


def other_sides(first: Look, rng: random.Random, count: int) -> list[Look]:
    """`count` more looks at the part from other sides than `first`, in its style (none for
    a rig picture)."""
    if first.views == "rig":
        return []
    looks = []
    for _ in range(count):
        azimuth = (first.azimuth + rng.uniform(60, 300)) % 360
        looks.append(replace(first, views="orbit", azimuth=round(azimuth, 1),
                             elevation=round(rng.uniform(12, 65), 1)))  # fmt: skip
    return looks


def picture(parts: Any, look: Look) -> Any:
    """The look's picture of the parts, (h, w, 3) uint8."""
    from exporters.render import RIG, Scene, View, compose, shade

    scene = Scene(parts)
    if look.views == "rig":
        views = [View.named(name) for name in RIG]
    else:
        views = [View.orbit(look.azimuth, look.elevation, True, look.fov_deg)]
    ink = (20, 24, 30) if sum(look.background) > 300 else (235, 235, 240)
    frames = [
        shade(
            scene.cast(view, look.size),
            look.style,
            color=look.color,
            light=look.light,
            background=look.background,
            ink=ink,
        )
        for view in views
    ]
    return compose(frames, columns=2)


def image_words(row: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """The request's words and how much size they give: "none", "across" or "bbox"."""
    bbox = (row.get("spec") or {}).get("bbox_mm")
    roll = rng.random()
    if not bbox or roll < 0.4:
        return rng.choice(NO_WORDS), "none"
    sizes = [_mm(v) for v in bbox]
    if roll < 0.65:
        return rng.choice(ACROSS).format(big=_mm(max(bbox))), "across"
    x, y, z = sizes
    return rng.choice(SIZED).format(x=x, y=y, z=z), "bbox"


def _mm(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def drawable(row: dict[str, Any]) -> bool:
    """Whether an image task can be made from the row: a CAD or scene part with a program."""
    return (
        row.get("domain") in ("cad", "scene")
        and bool(row.get("reference"))
        and not row.get("edit")
        and not row.get("repair")
        and not row.get("image")
    )


def image_spec(spec: dict[str, Any] | None, sized: str) -> dict[str, Any]:
    """The source spec less what the picture and words cannot say (sizes, unless given)."""
    spec = dict(spec or {})
    if sized != "bbox":
        spec.pop("bbox_mm", None)
        spec.pop("volume_mm3", None)
    if sized == "across":
        spec.pop("any_orientation", None)
    return spec


def picture_name(row: dict[str, Any], look: Look) -> str:
    """The cache file name of a row's picture: a digest of what it shows and how."""
    what = json.dumps(
        [row["reference"], row.get("params") or {}, row["domain"], look.key()], sort_keys=True
    )
    digest = hashlib.sha256(what.encode()).hexdigest()[:24]
    return f"{IMAGE_DIR}/{digest[:2]}/{digest}.png"


@dataclass
class ImageStats:
    """What the image pass did: rows written per style and words, and sources it could not draw."""

    written: Counter[str] = field(default_factory=Counter)
    words: Counter[str] = field(default_factory=Counter)
    cached: int = 0
    failed: int = 0  # the reference built no geometry in the sandbox
    failures: list[str] = field(default_factory=list)


def image_row(
    row: dict[str, Any],
    k: int,
    path: str,
    look: Look,
    words: str,
    sized: str,
    more: Sequence[tuple[str, Look]] = (),
) -> dict[str, Any]:
    """The image task made from `row` (see the module docstring); `more`: its other pictures
    of the part (path, look), after the first."""
    return {
        "id": f"{row['id']}-image-{k}",
        "domain": row["domain"],
        "family": row["family"],
        "split": row["split"],
        "prompt": words,
        "images": [path, *(other for other, _ in more)],
        "look": asdict(look),
        **({"more_looks": [asdict(other) for _, other in more]} if more else {}),
        "sized": sized,
        "reference": row["reference"],
        "params": row.get("params") or {},
        "spec": image_spec(row.get("spec"), sized),
        "source_prompt": row.get("prompt", ""),
        "image": True,
    }


# picture path, look, words, how much size the words give, the task's other pictures (path, look)
Plan = tuple[str, Look, str, str, tuple[tuple[str, Look], ...]]


def plan_images(
    row: dict[str, Any],
    seed: int | str,
    per_task: int,
    share: float,
    views: int = 1,
    rig_share: float = RIG_SHARE,
) -> list[Plan]:
    """The pictures to draw of a row (none when it is not drawable or not drawn), `views`
    pictures of the part a task, the four-view rig `rig_share` of the time."""
    if not drawable(row):
        return []
    rng = random.Random(f"{seed}:image:{row['id']}")
    if rng.random() >= share:
        return []
    plans = []
    for k in range(per_task):
        look = draw_look(rng, rig_share)
        words, sized = image_words(row, rng)
        # A generator of its own, so that the first pictures are the same whatever `views` is.
        sides = random.Random(f"{seed}:views:{row['id']}:{k}")
        more = tuple((picture_name(row, other), other)
                     for other in other_sides(look, sides, views - 1))  # fmt: skip
        plans.append((picture_name(row, look), look, words, sized, more))
    return plans


def image_tasks(
    rows: Iterable[dict[str, Any]],
    folder: Path,
    seed: int | str,
    per_task: int,
    share: float,
    pool: Any,
    workers: int,
    limits: Any = None,
    stats: ImageStats | None = None,
    progress: Callable[[int], None] | None = None,
    views: int = 1,
    rig_share: float = RIG_SHARE,
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each row with its image rows (`share` of the drawable rows get `per_task` tasks of
    `views` pictures each, drawn into `folder`, the JSONL file's folder), in order;
    `progress(k)` after each chunk with the k rows of it that were drawn."""
    if not 0 <= share <= 1:
        raise ValueError(f"the share of rows drawn must be in [0, 1], got {share}")
    if per_task < 1:
        raise ValueError(f"pictures per task must be at least 1, got {per_task}")
    if not 1 <= views <= MAX_VIEWS:
        raise ValueError(f"views of a part must be 1 to {MAX_VIEWS}, got {views}")
    if not 0 <= rig_share <= 1:
        raise ValueError(f"the share of rig pictures must be in [0, 1], got {rig_share}")
    stats = stats if stats is not None else ImageStats()
    chunk: list[tuple[dict[str, Any], list[Plan]]] = []
    for row in rows:
        chunk.append((row, plan_images(row, seed, per_task, share, views, rig_share)))
        if sum(1 for _, plans in chunk if plans) >= CHUNK:
            yield from _draw_chunk(chunk, folder, pool, workers, limits, stats, progress)
            chunk = []
    if chunk:
        yield from _draw_chunk(chunk, folder, pool, workers, limits, stats, progress)


def _draw_chunk(
    chunk: list[tuple[dict[str, Any], list[Plan]]],
    folder: Path,
    pool: Any,
    workers: int,
    limits: Any,
    stats: ImageStats,
    progress: Callable[[int], None] | None,
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    def draw(item: tuple[dict[str, Any], list[Plan]]) -> tuple[int, str]:
        """Draw the row's missing pictures: how many were cached, and why it failed ("" if not)."""
        row, plans = item
        drawn = [(path, look) for path, look, _, _, more in plans for path, look in
                 ((path, look), *more)]  # fmt: skip
        missing = [(path, look) for path, look in drawn if not (folder / path).is_file()]
        if not missing:
            return len(drawn), ""
        from exporters.export import ExportError, script_parts
        from exporters.render import RenderError, png_bytes

        try:
            parts, _ = script_parts(row["reference"], pool, limits=limits, domain=row["domain"])
            for path, look in missing:
                target = folder / path
                target.parent.mkdir(parents=True, exist_ok=True)
                temporary = target.with_suffix(".partial")
                temporary.write_bytes(png_bytes(picture(parts, look)))
                temporary.replace(target)
        except (ExportError, RenderError) as exc:
            return 0, f"{row['id']}: {exc}"
        except Exception as exc:  # one row's surprise never ends a long pass: it is reported
            return 0, f"{row['id']}: {type(exc).__name__}: {exc}"
        return len(drawn) - len(missing), ""

    todo = [item for item in chunk if item[1]]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        outcomes = dict(zip((id(item) for item in todo), threads.map(draw, todo), strict=True))
    for item in chunk:
        row, plans = item
        images: list[dict[str, Any]] = []
        if plans:
            cached, failure = outcomes[id(item)]
            stats.cached += cached
            if failure:
                stats.failed += 1
                stats.failures.append(failure)
            else:
                for k, (path, look, words, sized, more) in enumerate(plans):
                    stats.written[look.style] += 1
                    stats.words[sized] += 1
                    images.append(image_row(row, k, path, look, words, sized, more))
        yield row, images
    if progress is not None and todo:
        progress(len(todo))


@dataclass
class ImageSummary:
    """What `write_image_corpus` wrote."""

    path: Path
    rows: int
    image_rows: int
    stats: ImageStats


def write_image_corpus(
    source: Path,
    output: Path,
    seed: int | str,
    per_task: int,
    share: float,
    pool: Any,
    workers: int,
    limits: Any = None,
    splits: list[str] | None = None,
    images_only: bool = False,
    progress: bool = True,
    views: int = 1,
    rig_share: float = RIG_SHARE,
) -> ImageSummary:
    """Read a task JSONL, write it again with image tasks after the rows they were drawn from
    (only the image tasks with `images_only`), pictures under output's folder; atomic."""
    rows = read_task_rows(source)
    if splits is not None:
        rows = [row for row in rows if row.get("split") in splits]
    total = sum(1 for row in rows if plan_images(row, seed, 1, share))
    stats = ImageStats()
    partial = output.with_name(f".{output.name}.partial")
    bar = _progress(progress, total)
    written = pictures = 0
    advance = (lambda k: bar[0].advance(bar[1], k)) if bar is not None else None
    try:
        with partial.open("w", encoding="utf-8") as out:
            for row, images in image_tasks(
                rows,
                output.parent,
                seed,
                per_task,
                share,
                pool,
                workers,
                limits,
                stats,
                advance,
                views,
                rig_share,
            ):
                for kept in ([] if images_only else [row]) + images:
                    out.write(json.dumps(kept, ensure_ascii=False) + "\n")
                    written += 1
                pictures += len(images)
        partial.replace(output)
    finally:
        if bar is not None:
            bar[0].stop()
        partial.unlink(missing_ok=True)
    return ImageSummary(output, written, pictures, stats)


def _progress(shown: bool, total: int) -> tuple[Any, Any] | None:
    if not shown:
        return None
    from training.corpus.build import _progress as progress_bar

    bar = progress_bar()
    bar.start()
    return bar, bar.add_task("drawing image tasks", total=total)
