"""Pictures of a tessellation: headless, CPU-only and deterministic (open3d's ray casting).

One renderer serves three uses: the training images of image tasks, a preview of every version
(`preview.png`), and `genservice render`. A view casts one ray per pixel at the parts' triangles
(Embree, through open3d's `RaycastingScene`) and keeps, per pixel, whether it hit, how far and
the surface normal there (a `Frame`); a style turns a frame into colours: `shaded` (a lit,
outlined part, as a CAD viewer shows it), `normals` (camera-space normals darkened with depth,
what the image model reads best), `depth`, `silhouette` and `lines` (a pen drawing of the
outline and creases, so sketches look like something the model has seen).

Conventions: millimetres, +Z up (CadQuery's). Every view of one picture is framed on the parts'
bounding sphere, so the views share one scale and a 10 mm cube and a 100 mm cube look the same:
size comes from words, shape from the picture. The same mesh and arguments give the same PNG
bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exporters.parts import PartMesh

# Where each named view looks from (a unit vector from the part towards the eye) and which way
# is up on screen. Front looks along +Y, as CadQuery's and most CAD tools' front view does.
NAMED_VIEWS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "front": ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
    "back": ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "right": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "left": ((-1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "top": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    "bottom": ((0.0, 0.0, -1.0), (0.0, -1.0, 0.0)),
    "iso": ((1.0, -1.0, 1.0), (0.0, 0.0, 1.0)),
}
RIG = ("front", "top", "right", "iso")  # the fixed multi-view rig of previews and image tasks
STYLES = ("shaded", "normals", "depth", "silhouette", "lines")
MIN_SIZE, MAX_SIZE = 16, 1024  # a 1024-px view casts a million rays (about 25 MB of them)
MARGIN = 1.06  # the bounding sphere fills this fraction less than the frame
BACKGROUND = (246, 247, 249)
PART_COLOR = (0.58, 0.66, 0.76)  # a light steel blue


class RenderError(ValueError):
    """Nothing to render, or a bad argument; the message says which."""


@dataclass(frozen=True)
class View:
    """A camera: the direction it looks from, screen-up, and an orthographic or pinhole lens."""

    eye: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    perspective: bool = False
    fov_deg: float = 35.0
    name: str = ""

    @classmethod
    def named(cls, name: str) -> View:
        """One of NAMED_VIEWS (orthographic, as engineering drawings are)."""
        if name not in NAMED_VIEWS:
            raise RenderError(f"unknown view {name!r}: use one of {', '.join(NAMED_VIEWS)}")
        eye, up = NAMED_VIEWS[name]
        return cls(eye, up, name=name)

    @classmethod
    def orbit(
        cls, azimuth_deg: float, elevation_deg: float, perspective: bool = True, fov_deg: float = 35
    ) -> View:
        """A camera on a sphere round the part: azimuth from the front (-Y) towards +X."""
        a, e = math.radians(azimuth_deg), math.radians(elevation_deg)
        eye = (math.cos(e) * math.sin(a), -math.cos(e) * math.cos(a), math.sin(e))
        up = (0.0, 0.0, 1.0) if abs(eye[2]) < 0.999 else (0.0, 1.0, 0.0)
        return cls(eye, up, perspective, fov_deg, f"orbit {azimuth_deg:g}/{elevation_deg:g}")

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit vectors right, up and backward (towards the eye) of the camera, in world space."""
        back = np.asarray(self.eye, dtype=np.float64)
        if not np.isfinite(back).all() or np.linalg.norm(back) < 1e-9:
            raise RenderError("a view needs a direction to look from")
        back /= np.linalg.norm(back)
        up = np.asarray(self.up, dtype=np.float64)
        right = np.cross(up, back)
        if np.linalg.norm(right) < 1e-6:  # looking along `up`: any perpendicular will do
            right = np.cross((0.0, 1.0, 0.0) if abs(back[1]) < 0.9 else (1.0, 0.0, 0.0), back)
        right /= np.linalg.norm(right)
        return right, np.cross(back, right), back


@dataclass(frozen=True)
class Frame:
    """What one view saw: hit mask (h, w), depth along the ray (nan where it missed), unit
    normals in camera coordinates (x right, y up, z towards the eye), and the depth range the
    bounding sphere spans."""

    hit: np.ndarray
    depth: np.ndarray
    normals: np.ndarray
    near: float
    far: float


class Scene:
    """The parts' triangles, ready for rays; built once, viewed as often as needed."""

    def __init__(self, parts: Sequence[PartMesh]) -> None:
        import open3d as o3d  # imported here: the CLI and API load without it

        vertices = [np.asarray(p.vertices, dtype=np.float64).reshape(-1, 3) for p in parts]
        triangles = [np.asarray(p.triangles, dtype=np.int64).reshape(-1, 3) for p in parts]
        if not parts or not any(len(t) for t in triangles):
            raise RenderError("nothing to render: the geometry has no triangles")
        points = np.concatenate([v for v, t in zip(vertices, triangles, strict=True) if len(t)])
        if not np.isfinite(points).all():
            raise RenderError("nothing to render: the geometry has non-finite coordinates")
        low, high = points.min(axis=0), points.max(axis=0)
        self.center = (low + high) / 2
        self.radius = float(np.linalg.norm(points - self.center, axis=1).max())
        if self.radius <= 1e-9:
            raise RenderError("nothing to render: the geometry has no extent")
        self._scene = o3d.t.geometry.RaycastingScene()
        for v, t in zip(vertices, triangles, strict=True):
            if len(t):
                # Centred, so that float32 keeps its precision for parts far from the origin.
                mesh = o3d.t.geometry.TriangleMesh(
                    o3d.core.Tensor.from_numpy((v - self.center).astype(np.float32)),
                    o3d.core.Tensor.from_numpy(t.astype(np.int32)),
                )
                self._scene.add_triangles(mesh)

    def cast(self, view: View, size: int) -> Frame:
        """Cast one ray per pixel centre of a size x size picture from `view`."""
        import open3d as o3d

        _check_size(size)
        right, up, back = view.basis()
        centres = (np.arange(size, dtype=np.float64) + 0.5) / size * 2 - 1
        xs, ys = np.meshgrid(centres, -centres)  # row 0 is the top of the picture
        reach = self.radius * MARGIN
        if view.perspective:
            half = math.radians(min(max(view.fov_deg, 5.0), 120.0)) / 2
            distance = reach / math.sin(half)
            eye = back * distance
            directions = -back[None, None, :] + math.tan(half) * (
                xs[..., None] * right + ys[..., None] * up
            )
            directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
            origins = np.broadcast_to(eye, directions.shape)
            near, far = distance - self.radius, distance + self.radius
        else:
            distance = 2 * self.radius + 1.0
            origins = back * distance + reach * (xs[..., None] * right + ys[..., None] * up)
            directions = np.broadcast_to(-back, origins.shape)
            near, far = distance - self.radius, distance + self.radius
        rays = np.concatenate([origins, directions], axis=-1).astype(np.float32)
        answer = self._scene.cast_rays(o3d.core.Tensor.from_numpy(np.ascontiguousarray(rays)))
        depth = answer["t_hit"].numpy().astype(np.float64)
        hit = np.isfinite(depth)
        world = answer["primitive_normals"].numpy().astype(np.float64)
        # A triangle seen from behind (an open or inverted mesh) still faces the camera.
        facing = np.einsum("hwc,hwc->hw", world, np.asarray(directions, dtype=np.float64))
        world = np.where((facing > 0)[..., None], -world, world)
        normals = np.stack([world @ right, world @ up, world @ back], axis=-1)
        normals[~hit] = 0.0
        depth[~hit] = np.nan
        return Frame(hit, depth, normals, near, far)


def _check_size(size: int) -> None:
    if not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise RenderError(f"the picture size must be {MIN_SIZE}-{MAX_SIZE} pixels, got {size}")


def unit_depth(frame: Frame) -> np.ndarray:
    """Depth scaled to 0 (nearest the sphere allows) .. 1 (farthest); 1 where nothing was hit."""
    scaled = (frame.depth - frame.near) / max(frame.far - frame.near, 1e-9)
    return np.clip(np.nan_to_num(scaled, nan=1.0), 0.0, 1.0)


def edges(frame: Frame, crease_deg: float = 35.0, depth_jump: float = 0.04) -> np.ndarray:
    """Pixels on an outline (hit next to miss), a crease (normals turn) or a step in depth."""
    hit, n, d = frame.hit, frame.normals, unit_depth(frame)
    cos = math.cos(math.radians(crease_deg))
    edge = np.zeros_like(hit)
    for axis in (0, 1):
        a = (slice(None, -1), slice(None)) if axis == 0 else (slice(None), slice(None, -1))
        b = (slice(1, None), slice(None)) if axis == 0 else (slice(None), slice(1, None))
        both = hit[a] & hit[b]
        turn = both & (np.einsum("hwc,hwc->hw", n[a], n[b]) < cos)
        step = both & (np.abs(d[a] - d[b]) > depth_jump)
        changed = (hit[a] != hit[b]) | turn | step
        edge[a] |= changed & hit[a]
        edge[b] |= changed & hit[b]
    return edge


def shade(
    frame: Frame,
    style: str = "shaded",
    *,
    color: tuple[float, float, float] = PART_COLOR,
    light: tuple[float, float, float] = (-0.35, 0.55, 0.76),
    background: tuple[int, int, int] = BACKGROUND,
    ink: tuple[int, int, int] = (20, 24, 30),
) -> np.ndarray:
    """The frame's colours, (h, w, 3) uint8, in one of STYLES."""
    if style not in STYLES:
        raise RenderError(f"unknown style {style!r}: use one of {', '.join(STYLES)}")
    hit = frame.hit
    out = np.empty((*hit.shape, 3), dtype=np.float64)
    out[:] = np.asarray(background, dtype=np.float64) / 255
    part_ink = np.asarray(ink, dtype=np.float64) / 255
    if style == "silhouette":
        out[hit] = part_ink
    elif style == "lines":
        out[edges(frame)] = part_ink
    elif style == "depth":
        out[hit] = (0.92 - 0.75 * unit_depth(frame)[hit])[:, None]
    elif style == "normals":
        fade = 1.0 - 0.45 * unit_depth(frame)[hit]
        out[hit] = (frame.normals[hit] * 0.5 + 0.5) * fade[:, None]
    else:
        key = np.asarray(light, dtype=np.float64)
        key /= np.linalg.norm(key)
        diffuse = np.clip(frame.normals[hit] @ key, 0.0, 1.0)
        fill = np.clip(frame.normals[hit][:, 2], 0.0, 1.0)  # from the eye: no face goes black
        fade = 1.0 - 0.2 * unit_depth(frame)[hit]
        lit = (0.22 + 0.58 * diffuse + 0.2 * fill) * fade
        out[hit] = np.clip(np.asarray(color)[None, :] * lit[:, None] * 1.15, 0.0, 1.0)
        outline = edges(frame)
        out[outline] = out[outline] * 0.35 + part_ink * 0.65
    return np.round(out * 255).astype(np.uint8)


def compose(pictures: Sequence[np.ndarray], columns: int = 2, gap: int = 2) -> np.ndarray:
    """Pictures of one size in a grid (row by row), `gap` pixels of white between them."""
    if not pictures:
        raise RenderError("nothing to compose")
    h, w, _ = pictures[0].shape
    columns = max(1, min(columns, len(pictures)))
    rows = math.ceil(len(pictures) / columns)
    shape = (rows * h + (rows - 1) * gap, columns * w + (columns - 1) * gap, 3)
    sheet = np.full(shape, 255, np.uint8)
    for k, picture in enumerate(pictures):
        r, c = divmod(k, columns)
        sheet[r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w] = picture
    return sheet


def views_from_names(names: Sequence[str]) -> list[View]:
    """Named views, checked; `rig` stands for the four of RIG."""
    expanded = [v for name in names for v in (RIG if name == "rig" else (name,))]
    if not expanded:
        raise RenderError("no views asked for")
    return [View.named(name) for name in expanded]


def render(
    parts: Sequence[PartMesh],
    views: Sequence[View | str] = RIG,
    size: int = 224,
    style: str = "shaded",
    columns: int = 2,
) -> np.ndarray:
    """One picture of the parts: each view size x size, composed in a grid."""
    _check_size(size)
    if style not in STYLES:
        raise RenderError(f"unknown style {style!r}: use one of {', '.join(STYLES)}")
    scene = Scene(parts)
    cameras = [View.named(v) if isinstance(v, str) else v for v in views]
    if not cameras:
        raise RenderError("no views asked for")
    return compose([shade(scene.cast(view, size), style) for view in cameras], columns)


def png_bytes(picture: np.ndarray, text: dict[str, str] | None = None) -> bytes:
    """The picture as PNG bytes: the same picture and text give the same bytes."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    for key, value in sorted((text or {}).items()):
        info.add_text(key, value)
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(picture), "RGB").save(
        buffer, "PNG", pnginfo=info, compress_level=6
    )
    return buffer.getvalue()


def parts_from_mesh_file(path: Any) -> list[PartMesh]:
    """The meshes of an STL, OBJ, PLY, OFF, GLB or glTF file as parts, +Z up.

    glTF is +Y up (exporters/glb.py turns parts that way): its points are turned back."""
    from pathlib import Path

    import trimesh

    from exporters.glb import Z_UP_TO_Y_UP

    try:
        loaded = trimesh.load_scene(str(path))
        meshes = [m for m in loaded.dump() if isinstance(m, trimesh.Trimesh) and len(m.faces)]
    except Exception as exc:  # trimesh raises many kinds for a file it cannot read
        raise RenderError(f"cannot read {path} as a mesh: {exc}") from exc
    y_up = Path(str(path)).suffix.lower() in (".glb", ".gltf")
    parts = []
    for k, mesh in enumerate(meshes):
        vertices = np.asarray(mesh.vertices, dtype=np.float64)
        if y_up:
            vertices = vertices @ Z_UP_TO_Y_UP  # the inverse of a rotation is its transpose
        parts.append(
            PartMesh(
                str(mesh.metadata.get("name") or f"part{k}"),
                vertices.astype(np.float32),
                np.asarray(mesh.faces, dtype=np.int32),
            )
        )
    if not parts:
        raise RenderError(f"{path} holds no triangles")
    return parts
