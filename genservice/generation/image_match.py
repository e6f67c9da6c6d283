"""How well a candidate matches the picture it was asked from (the `image_match` check).

The request's picture is the only reference there is: no shape behind it is ever used. The
part in the picture is told from its background by colour (the border's colour is the
background), and the candidate is drawn by the same renderer from many viewpoints (the
four-view rig's and a ring of orbits, as a person photographs a part). Both silhouettes are
cropped to their extent and scaled to one square grid, so neither the size in millimetres nor
the distance of the camera matters, only shape. At each viewpoint two things are compared:

- silhouette IoU: the outline and the holes one can see through;
- outline agreement (F1 of edge pixels within one cell): creases, steps and the rims of blind
  holes that a silhouette cannot show. A photograph carries no normals, so the edges a shaded
  picture shows stand in for the normals the renderer knows.

A picture's style decides which edges it shows (a line drawing or a shaded render inks every
crease, a depth map only steps in depth), so where the picture shows shading the candidate is
also painted in the picture's style and light (`Light`, the shading fit's) and its edges read
as the picture's are; the better of the two F1s counts. A viewpoint scores 0.6 * IoU + 0.4 *
outline F1. A picture with shading (a render, a screenshot, a photograph: not a silhouette or a
line drawing) says more than its outline: the brightness of each face follows which way the
face turns. So for such a picture a third thing is compared, the shading: how much of the
colour of the picture's faces the candidate's own surface explains, as a light would
(`shading_fit`: the R² of the picture's colours fitted linearly to the candidate's normals
and depth, cell by cell away from edges; any light, any colour, a normal map or a depth map all
fit). Two parts alike in outline, a tray and a box, a plate and a leaning plate seen edge-on,
differ there. Such a viewpoint scores (1 - SHADING) * (0.6 * IoU + 0.4 * F1) + SHADING * R².
From the best coarse viewpoints a finer search moves the camera (and changes its lens: LENSES,
or orthographic) while the match improves, and the score is the best viewpoint's (it passes at
PASS). A fit to the picture (fit.py) asks for its trials' matches from near the camera its
best part so far was seen from (`Target.seen_from`, HELD_STEPS): one photograph is taken from
one place, a part one parameter away from it is seen from about the same place, and a short
search there costs a fraction of a search from anywhere. A picture of the rig (four panels in
a 2x2 grid, as previews and image tasks draw it) is compared panel by panel with the
candidate's rig instead: the collage as a whole looks like no one view. Several pictures of
one part (a person's photographs of it from two or three sides, `Pictures`) are each matched
from a camera of their own, and the part's score is their mean: one picture leaves a part's
depth along its line of sight open, and another taken from elsewhere shows it. The picture is
part of what was asked: a sound part that fails the check is NOT AS ASKED, never VALID
(rerank.with_image_match), and best-of-N ranks candidates by the score.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

GRID = 48  # cells a side of the normalised silhouettes
DRAW = 96  # pixels a side the candidate is drawn at per viewpoint
PASS = 0.75  # score at which the check passes (bench/image_match.py: right and wrong parts)
REFINE_FROM = 2  # the best coarse viewpoints a finer search starts from
REFINE_STEPS = (12.0, 6.0, 3.0)  # degrees of the finer search's moves
LENSES = (25.0, 35.0, 50.0)  # fields of view (degrees) the finer search tries: tele to wide
HELD_STEPS = (6.0, 3.0)  # degrees of the moves round a camera held by a fit (Target.seen_from)
HELD_WITHIN = 12.0  # degrees the camera may move from where the fit held it
BACKGROUND_DISTANCE = 40.0  # colour distance (0-441) beyond which a pixel is the part, at most
BACKGROUND_MIN = 12.0  # ... and at least (a flat, clean background)
BACKGROUND_MARGIN = 10.0  # added to three times the border's own noise
SHADING = 0.3  # the weight of shading agreement in a shaded picture's score
FLAT = 8.0  # colour spread (0-255, across the faces) below which a picture shows no shading
MIN_FACE_CELLS = 12  # face cells (away from edges) a picture needs to show shading
RIDGE = 0.005  # how little a feature may vary over the faces and still explain their shading


def _views() -> list[Any]:
    from exporters.render import RIG, View

    views = [View.named(name) for name in (*RIG, "back", "left", "bottom")]
    for elevation in (15.0, 35.0, 60.0):
        for azimuth in range(0, 360, 30):
            views.append(View.orbit(float(azimuth), elevation, perspective=True))
    return views


def foreground(picture: np.ndarray) -> np.ndarray:
    """Pixels of the part: those whose colour is far from the border's (median) colour. How
    far is read off the border itself: a clean render's flat background lets a part as pale
    as it (a depth map's nearest face, a white part on grey) be told from it, while a noisy
    photograph's border sets the bar above its own noise."""
    rgb = np.asarray(picture, dtype=np.float64)[..., :3]
    border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]])
    background = np.median(border, axis=0)
    noise = float(np.percentile(np.linalg.norm(border - background, axis=-1), 90))
    threshold = float(np.clip(BACKGROUND_MARGIN + 3.0 * noise, BACKGROUND_MIN, BACKGROUND_DISTANCE))
    return np.linalg.norm(rgb - background, axis=-1) > threshold


def picture_edges(picture: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Edge pixels of a picture: the outline of its mask and strong steps in brightness."""
    grey = np.asarray(picture, dtype=np.float64)[..., :3].mean(axis=-1)
    step = np.zeros_like(grey, dtype=bool)
    step[:, 1:] |= np.abs(np.diff(grey, axis=1)) > 28
    step[1:, :] |= np.abs(np.diff(grey, axis=0)) > 28
    outline = np.zeros_like(mask)
    outline[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    outline[1:, :] |= mask[1:, :] != mask[:-1, :]
    return (step & grown(mask)) | outline


def grown(mask: np.ndarray) -> np.ndarray:
    """Cells set or next to a set one (the last two axes are the grid): one cell of tolerance."""
    out = mask.copy()
    out[..., 1:, :] |= mask[..., :-1, :]
    out[..., :-1, :] |= mask[..., 1:, :]
    out[..., :, 1:] |= mask[..., :, :-1]
    out[..., :, :-1] |= mask[..., :, 1:]
    return out


def _grid_cells(
    mask: np.ndarray, layer: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The cell (rows, columns) of each set pixel of `layer` (default the mask) inside the
    mask's extent, in np.nonzero order, when that extent is centred in a square scaled to GRID x
    GRID cells; None for an empty mask."""
    rows, cols = np.nonzero(mask)
    if not len(rows):
        return None
    top, left = rows.min(), cols.min()
    height, width = rows.max() + 1 - top, cols.max() + 1 - left
    side = max(height, width)
    oy, ox = (side - height) // 2, (side - width) // 2
    if layer is not None:
        rows, cols = np.nonzero(layer)
        inside = (rows >= top) & (rows < top + height) & (cols >= left) & (cols < left + width)
        rows, cols = rows[inside], cols[inside]
    return (rows - top + oy) * GRID // side, (cols - left + ox) * GRID // side


def normalise(mask: np.ndarray, layer: np.ndarray | None = None) -> np.ndarray | None:
    """`layer` (default the mask) cropped to the mask's extent, centred in a square and scaled
    to GRID x GRID cells (a cell is set when any pixel in it is); None for an empty mask."""
    placed = _grid_cells(mask, layer)
    if placed is None:
        return None
    cells = np.zeros((GRID, GRID), dtype=bool)
    cells[placed] = True
    return cells


def cell_means(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The mean of `values` (h, w, c) over the mask's pixels in each cell of normalise()'s grid:
    (GRID, GRID, c), NaN in cells the mask does not reach."""
    out = np.full((GRID, GRID, values.shape[-1]), np.nan)
    placed = _grid_cells(mask)
    if placed is None:
        return out
    cell = placed[0] * GRID + placed[1]
    counts = np.bincount(cell, minlength=GRID * GRID)
    pixels = values[np.nonzero(mask)]
    sums = np.stack(
        [np.bincount(cell, weights=pixels[:, c], minlength=GRID * GRID)
         for c in range(values.shape[-1])], axis=-1,
    )  # fmt: skip
    seen = counts > 0
    flat = out.reshape(GRID * GRID, -1)
    flat[seen] = sums[seen] / counts[seen, None]
    return out


def shrunk(mask: np.ndarray) -> np.ndarray:
    """Cells set whose four neighbours are set too (the last two axes are the grid)."""
    return ~grown(~mask)


def shading_fit(reading: Reading, surface: np.ndarray) -> tuple[float, Light | None]:
    """How much of the colour of the picture's faces the candidate's surface explains: the R²
    (0-1) of a least-squares fit of the colour of each of the picture's face cells (away from
    its edges: an edge cell mixes two faces) to the candidate's normal (x, y, z) and depth in
    the same cell. A light from anywhere on a part of any colour is linear in the normal, and
    a normal map or depth map is linear in them too, so the right part at the right viewpoint
    explains nearly all of it and a part that turns its faces elsewhere does not; a face cell
    the candidate does not cover is explained by nothing. Every candidate is judged on the same
    cells: the picture's. `surface` is the candidate's cell means of normal and depth
    (surface()) at the viewpoint."""
    colours = reading[3]
    if colours is None:
        return 0.0, None
    faces = np.isfinite(colours[..., 0])
    seen = colours[faces] / 255.0
    seen = seen - seen.mean(axis=0)
    spread = float((seen**2).sum())
    covered = np.isfinite(surface[faces][:, 0])
    if spread <= 1e-12 or np.count_nonzero(covered) < 2:
        return 0.0, None
    features = surface[faces][covered]
    explained = features - features.mean(axis=0)
    fitted = seen[covered] - seen[covered].mean(axis=0)
    # Ridge: a feature that barely varies over the faces (the depth across a flat face seen
    # square on) cannot be scaled up to mimic a gradient of light it does not make.
    gram = explained.T @ explained + RIDGE * len(seen) * np.eye(explained.shape[1])
    coefficients = np.linalg.lstsq(gram, explained.T @ fitted, rcond=None)[0]
    left = float(((fitted - explained @ coefficients) ** 2).sum())
    left += float((seen[~covered] ** 2).sum())
    light = Light(coefficients, features.mean(axis=0), colours[faces][covered].mean(axis=0))
    return float(np.clip(1.0 - left / spread, 0.0, 1.0)), light


class Light(NamedTuple):
    """The linear map shading_fit found from a surface's normal and depth to the picture's
    colours (0-255): what the part looks like under the picture's light and style."""

    coefficients: np.ndarray  # (4, 3): normal x, y, z and depth to colour (0-1)
    features: np.ndarray  # the mean normal and depth it was fitted about
    colour: np.ndarray  # the mean colour (0-255) it was fitted about

    def paint(self, frame: Any) -> np.ndarray:
        """A frame's colours (h, w, 3; 0-255) as the picture would show them."""
        return self.colour + 255.0 * (surface_values(frame) - self.features) @ self.coefficients


def surface_values(frame: Any) -> np.ndarray:
    """A rendered frame's normal (x, y, z) and depth (0 near .. 1 far) per pixel: (h, w, 4)."""
    from exporters.render import unit_depth

    return np.concatenate([frame.normals, unit_depth(frame)[..., None]], axis=-1)


def surface(frame: Any) -> np.ndarray:
    """A rendered frame's normals and depth (0 near .. 1 far) as cell means over what it hit:
    (GRID, GRID, 4)."""
    return cell_means(frame.hit, surface_values(frame))


def face_colours(
    pixels: np.ndarray, mask: np.ndarray, silhouette: np.ndarray, outline: np.ndarray
) -> np.ndarray | None:
    """A picture's face colours for shading_fit: the mean colour of each cell inside its
    silhouette and away from its edges (NaN elsewhere), or None when the faces show no shading
    (a silhouette, a flat fill: their colours spread less than FLAT) or too few cells."""
    colours = cell_means(mask, np.asarray(pixels, dtype=np.float64)[..., :3])
    faces = shrunk(silhouette) & ~grown(outline) & np.isfinite(colours[..., 0])
    if np.count_nonzero(faces) < MIN_FACE_CELLS:
        return None
    spread = float(np.sqrt(((colours[faces] - colours[faces].mean(axis=0)) ** 2).sum(-1).mean()))
    if spread < FLAT:
        return None
    colours[~faces] = np.nan
    return colours


def _filled(mask: np.ndarray) -> np.ndarray:
    from scipy.ndimage import binary_fill_holes

    return np.asarray(binary_fill_holes(mask), dtype=bool)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.count_nonzero(a | b)
    return float(np.count_nonzero(a & b) / union) if union else 0.0


def _f1(a: np.ndarray, b: np.ndarray) -> float:
    """Edge F1 with one cell of tolerance."""
    if not a.any() or not b.any():
        return 0.0
    precision = np.count_nonzero(a & grown(b)) / np.count_nonzero(a)
    recall = np.count_nonzero(b & grown(a)) / np.count_nonzero(b)
    return float(2 * precision * recall / (precision + recall)) if precision + recall else 0.0


Pose = tuple[float, float, float]  # azimuth, elevation, lens (0: orthographic; else the fov)

# silhouette, outline, framed mask, face colours (None: no shading to compare)
Reading = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


class Target:
    """A request's picture, read once: its normalised silhouette and edges (and its panels
    when it is a 2x2 rig)."""

    def __init__(self, picture: Any) -> None:
        pixels = np.asarray(picture.convert("RGB") if hasattr(picture, "convert") else picture)
        mask = foreground(pixels)
        self.whole = _read(pixels, mask)
        self.panels = _rig_panels(pixels)
        # A drawing shows no see-through holes: candidates' silhouettes are filled likewise.
        self.drawing = is_drawing(mask)
        self.held: Pose | None = None  # the camera a fit holds (seen_from), None: any

    def seen_from(self, pose: Sequence[float] | None) -> Target:
        """The same picture, with candidates scored from near one camera (a pose from an
        earlier score's detail: azimuth, elevation, lens) instead of from anywhere; a fit
        asks this of each round, from the camera its best part so far was seen from. None:
        from anywhere."""
        held = copy.copy(self)
        held.held = None if pose is None else (float(pose[0]), float(pose[1]), float(pose[2]))
        return held

    @property
    def readable(self) -> bool:
        """Whether a part could be told from the background at all."""
        return self.whole is not None


class Pictures:
    """Several pictures of one part, each taken from a camera of its own, read once: a part
    matches them as well as it matches each, on average (image_match)."""

    def __init__(self, pictures: Sequence[Any]) -> None:
        self.targets = [p if isinstance(p, Target) else Target(p) for p in pictures]
        if not self.targets:
            raise ValueError("Pictures needs at least one picture")

    @property
    def readable(self) -> bool:
        """Whether a part could be told from the background in any of them."""
        return any(target.readable for target in self.targets)

    def seen_from(self, poses: Sequence[Any] | None) -> Pictures:
        """The same pictures, each seen from near its own camera (a pose per picture, as a
        score's detail gives them; None for one leaves it free); None: all from anywhere."""
        held = copy.copy(self)
        wanted = list(poses) if poses is not None else [None] * len(self.targets)
        if len(wanted) != len(self.targets):
            raise ValueError(f"{len(self.targets)} pictures, {len(wanted)} cameras")
        held.targets = [t.seen_from(pose) for t, pose in zip(self.targets, wanted, strict=True)]
        return held


def as_target(picture: Any) -> Target | Pictures:
    """What image_match compares with: a picture (PIL or array) read as a Target, several
    (a list or tuple) as Pictures (one alone as its Target); a Target or Pictures as it is."""
    if isinstance(picture, Target | Pictures):
        return picture
    if isinstance(picture, list | tuple):
        return Target(picture[0]) if len(picture) == 1 else Pictures(picture)
    return Target(picture)


def _read(pixels: np.ndarray, mask: np.ndarray | None = None) -> Reading | None:
    mask = foreground(pixels) if mask is None else mask
    if np.count_nonzero(mask) < 12 or mask.mean() > 0.97:
        return None
    drawing = is_drawing(mask)
    if drawing:  # a line drawing: the part is what its outline encloses
        from scipy.ndimage import binary_closing, binary_fill_holes

        mask = binary_fill_holes(binary_closing(mask, iterations=2)) | mask
    silhouette = normalise(mask)
    outline = normalise(mask, picture_edges(pixels, mask))
    if silhouette is None or outline is None:
        return None
    colours = None if drawing else face_colours(pixels, mask, silhouette, outline)
    # Also as framed (for a rig's panels): the rig frames every view on the part's bounding
    # sphere, so where and how large the part sits in a panel says how its sizes compare.
    return silhouette, outline, framed(mask), colours


def is_drawing(mask: np.ndarray) -> bool:
    """Whether a foreground is lines rather than areas: it covers little of its own extent."""
    rows, cols = np.nonzero(mask)
    if not len(rows):
        return False
    extent = (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)
    return np.count_nonzero(mask) / extent < 0.3


def _rig_panels(pixels: np.ndarray) -> list[Reading | None] | None:
    """The four panels of a rig picture (a square split by a pale cross), or None."""
    h, w = pixels.shape[:2]
    if abs(h - w) > 2 or h < 40:
        return None
    mid_row, mid_col = pixels[h // 2 - 1 : h // 2 + 1], pixels[:, w // 2 - 1 : w // 2 + 1]
    # A gap of white across the middle, crossed by nothing: a part drawn in one view (a line
    # drawing on white, say) crosses the middle somewhere.
    if min(mid_row.min(axis=-1).min(), mid_col.min(axis=-1).min()) < 200:
        return None
    half_h, half_w = h // 2, w // 2
    quarters = [
        pixels[: half_h - 1, : half_w - 1],
        pixels[: half_h - 1, half_w + 1 :],
        pixels[half_h + 1 :, : half_w - 1],
        pixels[half_h + 1 :, half_w + 1 :],
    ]
    return [_read(q) for q in quarters]


def framed(mask: np.ndarray) -> np.ndarray:
    """A whole picture's mask at GRID x GRID cells (a cell is set when any pixel in it is)."""
    ys, xs = np.nonzero(mask)
    cells = np.zeros((GRID, GRID), dtype=bool)
    cells[(ys * GRID) // mask.shape[0], (xs * GRID) // mask.shape[1]] = True
    return cells


def image_match(target: Target | Pictures, parts: Sequence[Any]) -> tuple[float, dict[str, Any]]:
    """The score (0-1) of the parts against the picture (or the mean over several pictures of
    one part), and what it is made of."""
    from exporters.render import Scene

    if isinstance(target, Pictures):
        return _several(target, parts)
    if not target.readable:
        return 0.0, {"reason": "no part could be told from the picture's background"}
    scene = Scene(parts)
    if target.panels is not None and all(p is not None for p in target.panels):
        best = _rig_reading(scene, target, target.panels)
    elif target.held is not None:
        best = _held_view(scene, target, target.held)
    else:
        best = _best_view(scene, target)
    score = float(max(0.0, best.pop("score")))
    detail = {k: round(v, 4) if isinstance(v, float) else v for k, v in best.items()}
    return round(score, 4), {**detail, "pass": PASS}


def _several(pictures: Pictures, parts: Sequence[Any]) -> tuple[float, dict[str, Any]]:
    """Several pictures of one part: each matched from its own camera, the mean of those
    that show a part at all; each one's score, view and camera in the detail (`pose`, one
    per picture, is what a fit holds)."""
    read = [image_match(t, parts) if t.readable else None for t in pictures.targets]
    scores = [found[0] for found in read if found is not None]
    if not scores:
        return 0.0, {"reason": "no part could be told from any picture's background", "pass": PASS}
    details = [found[1] if found is not None else {} for found in read]
    detail = {
        "pictures": len(read),
        "scores": [found[0] if found is not None else None for found in read],
        "views": [d.get("view") for d in details],
        "pose": [d.get("pose") for d in details],
        "pass": PASS,
    }
    return round(float(np.mean(scores)), 4), detail


def _best_view(scene: Any, target: Target) -> dict[str, Any]:
    """The candidate's viewpoint that looks most like the picture, and its score: the best of
    a coarse set of viewpoints, then a finer search round the best few of them."""
    coarse = sorted(
        (_view_score(scene, target, view) for view in _views()), key=lambda r: -r["score"]
    )
    best = coarse[0]
    seen: dict[Pose, dict[str, Any]] = {}  # both searches may pass a pose
    for start in coarse[:REFINE_FROM]:
        if start["score"] >= 0:
            found = _refine(scene, target, start, seen)
            best = found if found["score"] > best["score"] else best
    return _posed(best)


def _held_view(scene: Any, target: Target, held: Pose) -> dict[str, Any]:
    """The best viewpoint near a held camera: the pattern search of `_refine` from it, in
    HELD_STEPS, its lens kept, each move at most HELD_WITHIN degrees from where it was held."""
    from exporters.render import View

    view = View.orbit(held[0], held[1], held[2] > 0, held[2] or LENSES[1])
    start = _view_score(scene, target, view)
    return _posed(_refine(scene, target, start, {}, HELD_STEPS, held))


def _posed(best: dict[str, Any]) -> dict[str, Any]:
    """A viewpoint's score with its pose as a list (the detail a fit holds the camera at)."""
    return {**best, "pose": [round(float(v), 2) for v in best["pose"]]}


def _view_score(scene: Any, target: Target, view: Any) -> dict[str, Any]:
    """One viewpoint's score against the picture, with what it is made of."""
    assert target.whole is not None
    silhouette, outline = target.whole[:2]
    frame = scene.cast(view, DRAW)
    drawn = normalise(_filled(frame.hit) if target.drawing else frame.hit)
    if drawn is None:
        return {"score": -1.0, "view": view.name, "pose": _pose(view)}
    shading, light = shading_fit(target.whole, surface(frame))
    iou, f1 = _iou(drawn, silhouette), _outline_f1(frame, outline, light)
    found = {"score": 0.6 * iou + 0.4 * f1, "silhouette_iou": iou, "outline_f1": f1,
             "lens_deg": float(view.fov_deg) if view.perspective else 0.0}  # fmt: skip
    if target.whole[3] is not None:
        found["score"] = (1 - SHADING) * found["score"] + SHADING * shading
        found["shading"] = shading
    return {**found, "view": view.name, "pose": _pose(view)}


def _outline_f1(frame: Any, outline: np.ndarray, light: Light | None) -> float:
    """The F1 of a frame's edges against the picture's outline. A picture shows the edges its
    style shows: a line drawing or a shaded render with ink every crease and step, a depth map
    only its steps in depth, a normal map the creases its colours tell apart. So with a light
    (shading_fit's, the picture's own style) the frame is also painted as the picture would
    show it and its brightness steps read the way the picture's are; the better of the two
    counts, for the right part at the right viewpoint matches one of them closely."""
    from exporters.render import edges

    lines = normalise(frame.hit, edges(frame))
    f1 = _f1(lines, outline) if lines is not None else 0.0
    if light is not None:
        painted = normalise(frame.hit, picture_edges(light.paint(frame), frame.hit))
        f1 = max(f1, _f1(painted, outline)) if painted is not None else f1
    return f1


def _pose(view: Any) -> Pose:
    """A view's azimuth and elevation (degrees, as View.orbit takes them) and its lens (0 for
    orthographic, else the field of view in degrees)."""
    x, y, z = np.asarray(view.eye, dtype=np.float64) / np.linalg.norm(view.eye)
    azimuth = float(np.degrees(np.arctan2(x, -y)))
    lens = float(view.fov_deg) if view.perspective else 0.0
    return azimuth, float(np.degrees(np.arcsin(np.clip(z, -1.0, 1.0)))), lens


def _lens_moves(lens: float) -> list[float]:
    """The lenses one step from `lens`: the next wider and narrower of LENSES, and
    orthographic from the middle one (a screenshot of a CAD viewer is often orthographic)."""
    if lens == 0.0:
        return [LENSES[1]]
    index = LENSES.index(lens) if lens in LENSES else 1
    moves = [LENSES[i] for i in (index - 1, index + 1) if 0 <= i < len(LENSES)]
    return moves + ([0.0] if index == 1 else [])


def _refine(
    scene: Any,
    target: Target,
    start: dict[str, Any],
    seen: dict[Pose, Any],
    steps: tuple[float, ...] = REFINE_STEPS,
    held: Pose | None = None,
) -> Any:
    """A pattern search from a viewpoint: move the camera a step round the part (or change its
    lens, at the first step) while the picture matches better, then halve the step. A picture
    is taken from any angle through any lens, and the coarse viewpoints are 30 degrees apart at
    one lens: at the right angle and lens the right part matches closely, a wrong one gains far
    less (bench/image_pick.py). `seen` keeps the scores of poses already drawn: a step back is
    a pose drawn before. `held`: a camera a fit holds (its lens kept, no move further than
    HELD_WITHIN degrees from it)."""
    from exporters.render import View

    best = start
    for index, step in enumerate(steps):
        moved = True
        while moved:
            moved = False
            azimuth, elevation, lens = best["pose"]
            poses = [
                (azimuth + step, elevation, lens),
                (azimuth - step, elevation, lens),
                (azimuth, elevation + step, lens),
                (azimuth, elevation - step, lens),
            ]
            if index == 0 and held is None:
                poses += [(azimuth, elevation, other) for other in _lens_moves(lens)]
            for a, e, fov in poses:
                if held is not None and _turned_from(held, a, e) > HELD_WITHIN + 1e-6:
                    continue
                pose = (round(a, 2), round(float(np.clip(e, -89.0, 89.0)), 2), fov)
                if pose not in seen:
                    view = View.orbit(pose[0], pose[1], fov > 0, fov or LENSES[1])
                    seen[pose] = _view_score(scene, target, view)
                tried = seen[pose]
                if tried["score"] > best["score"] + 1e-4:
                    best, moved = tried, True
    return best


def _turned_from(held: Pose, azimuth: float, elevation: float) -> float:
    """How many degrees a camera is from a held one, round (azimuths wrap at 180) or up."""
    turned = (azimuth - held[0] + 180.0) % 360.0 - 180.0
    return max(abs(turned), abs(elevation - held[1]))


def _rig_reading(scene: Any, target: Target, panels: Sequence[Any]) -> dict[str, Any]:
    """A rig picture against the candidate's rig, panel by panel: the mean of the panels'
    scores. Four views fix the part far better than any one, and the collage as a whole looks
    like no single view of a part, so a rig picture is read this way only."""
    from exporters.render import RIG, View

    scores = []
    for name, panel in zip(RIG, panels, strict=True):
        frame = scene.cast(View.named(name), DRAW)
        hit = _filled(frame.hit) if target.drawing else frame.hit
        drawn = normalise(hit)
        if drawn is None:
            scores.append(0.0)
            continue
        shading, light = shading_fit(panel, surface(frame))
        placed = _iou(framed(hit), panel[2])
        outline = _outline_f1(frame, panel[1], light)
        score = 0.3 * _iou(drawn, panel[0]) + 0.3 * placed + 0.4 * outline
        if panel[3] is not None:
            score = (1 - SHADING) * score + SHADING * shading
        scores.append(score)
    return {
        "score": float(np.mean(scores)),
        "view": "rig",
        "panels": [round(float(s), 4) for s in scores],
    }
