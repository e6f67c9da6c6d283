"""Input checks and shared geometry: every mesh is vetted here before a check measures it.

Meshes arrive as trimesh.Trimesh in millimetres, Z up (validators/cad/mesh.py). A bad mesh
becomes an `InputError` whose message is the failing Check's reason; `never_raises` turns it
(and anything unexpected) into that Check, so no public check raises.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

import manifold3d
import numpy as np
import trimesh
from scipy.spatial import ConvexHull, QhullError

from validators.cad.mesh import to_manifold as shared_to_manifold
from validators.physics.options import PhysicsOptions
from validators.report import Check

P = ParamSpec("P")


class InputError(ValueError):
    """A mesh or scene that cannot be checked; the message says why and what to do."""


@dataclass(frozen=True)
class Part:
    """One vetted part: a closed, outward mesh moved into the scene frame, and its volume."""

    name: str
    mesh: trimesh.Trimesh
    volume: float  # mm³, > 0

    @property
    def size(self) -> float:
        """Largest bounding-box extent in mm."""
        return float(np.ptp(self.mesh.bounds, axis=0).max())


def failure(reason: str, **detail: Any) -> Check:
    """A failing Check that says why."""
    return Check(0.0, False, {"reason": reason, **detail})


def never_raises(check: Callable[P, Check]) -> Callable[P, Check]:
    """Wrap a check so that bad input and surprises become a failing Check (DESIGN: no raise)."""

    @functools.wraps(check)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Check:
        try:
            return check(*args, **kwargs)
        except InputError as exc:
            return failure(str(exc))
        except Exception as exc:  # a validator returns a result, never an exception
            return failure(f"internal error: {type(exc).__name__}: {exc}")

    return wrapper


def vet_parts(
    parts: Sequence[tuple[str, trimesh.Trimesh]],
    *,
    max_parts: int,
    max_triangles: int,
    max_size_mm: float = math.inf,
    single: bool = False,
) -> list[Part]:
    """Checked copies of the parts, moved so the scene's bbox is centred in X, Y and starts at Z=0.

    Recentring keeps far-away scenes (1e6 mm) precise; every check is translation-invariant.
    Cheap tests come first so a huge input fails in constant time.
    """
    if not isinstance(parts, Sequence) or len(parts) == 0:
        raise InputError("no parts to check")
    if len(parts) > max_parts:
        raise InputError(
            f"{len(parts)} parts, more than max_parts={max_parts}: "
            "merge parts or raise PhysicsOptions.max_parts"
        )
    named = [_unpack(item, index, single) for index, item in enumerate(parts)]
    seen: set[str] = set()
    for index, (name, mesh) in enumerate(named):
        if name in seen:  # details are keyed by name: keep them apart
            named[index] = (f"{name}#{index}", mesh)
        seen.add(named[index][0])
    triangles = sum(len(mesh.faces) for _, mesh in named)
    if triangles > max_triangles:
        raise InputError(
            f"{triangles} triangles, more than max_triangles={max_triangles}: "
            "tessellate more coarsely or raise the limit"
        )
    for name, mesh in named:
        _check_arrays(_what(name, single), mesh)
    low = np.min([mesh.bounds[0] for _, mesh in named], axis=0)
    high = np.max([mesh.bounds[1] for _, mesh in named], axis=0)
    extent = float((high - low).max())
    if extent > max_size_mm:
        raise InputError(
            f"the scene is {extent:.3g} mm across, more than max_size_mm={max_size_mm:g}: "
            "check the units (millimetres expected)"
        )
    shift = -np.array([(low[0] + high[0]) / 2, (low[1] + high[1]) / 2, low[2]])
    return [_vet_closed(name, _what(name, single), mesh, shift) for name, mesh in named]


def vet_mesh(mesh: trimesh.Trimesh, *, max_triangles: int) -> trimesh.Trimesh:
    """One checked mesh, moved so its bbox is centred in X, Y and starts at Z=0."""
    parts = vet_parts([("mesh", mesh)], max_parts=1, max_triangles=max_triangles, single=True)
    return parts[0].mesh


def vet_scene(parts: Sequence[tuple[str, trimesh.Trimesh]], options: PhysicsOptions) -> list[Part]:
    """vet_parts with the limits a PhysicsOptions sets."""
    return vet_parts(
        parts,
        max_parts=options.max_parts,
        max_triangles=options.max_triangles,
        max_size_mm=options.max_size_mm,
    )


def _what(name: str, single: bool) -> str:
    return "the mesh" if single else f"part {name!r}"


def _unpack(item: object, index: int, single: bool) -> tuple[str, trimesh.Trimesh]:
    if not (isinstance(item, tuple | list) and len(item) == 2):
        raise InputError(f"part {index} is not a (name, mesh) pair")
    name, mesh = str(item[0]), item[1]
    if not isinstance(mesh, trimesh.Trimesh):
        raise InputError(f"{_what(name, single)} is a {type(mesh).__name__}, not a trimesh.Trimesh")
    if len(mesh.faces) == 0:
        raise InputError(f"{_what(name, single)} has no triangles")
    return name, mesh


def _check_arrays(what: str, mesh: trimesh.Trimesh) -> None:
    vertices, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    if not np.isfinite(vertices).all():
        raise InputError(f"{what} has non-finite vertex coordinates (NaN or inf)")
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise InputError(f"{what} has triangles that index missing vertices")


def _vet_closed(name: str, what: str, mesh: trimesh.Trimesh, shift: np.ndarray) -> Part:
    mesh = mesh.copy()
    mesh.apply_translation(shift)
    if not (mesh.is_watertight and mesh.is_winding_consistent):
        raise InputError(
            f"{what} is not a closed surface (open or inconsistently wound), "
            "so it has no volume or mass"
        )
    with np.errstate(all="ignore"):  # trimesh divides by a zero volume
        volume = float(mesh.volume)
    if volume < 0:  # inside-out: the shape is still well defined
        mesh.invert()
        volume = -volume
    size = float(np.ptp(mesh.bounds, axis=0).max())
    if not volume > 1e-9 * size**3 or not volume > 1e-12:
        raise InputError(f"{what} has zero volume (flat or degenerate)")
    return Part(name, mesh, volume)


def to_manifold(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    """A manifold3d solid (double precision) from a vetted mesh."""
    try:
        return shared_to_manifold(mesh)
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def manifold_points(solid: manifold3d.Manifold) -> np.ndarray:
    """The vertices of a manifold3d solid, (n, 3)."""
    return np.asarray(solid.to_mesh64().vert_properties, dtype=np.float64)[:, :3]


def hull_margin(points: np.ndarray, point: np.ndarray) -> float:
    """Signed distance from `point` to the 2D convex hull of `points`: > 0 inside, < 0 outside.

    Exact inside; outside it is the largest edge-line distance (a lower bound). A support that
    is a single point or a line has no inside, so the best a point on it gets is 0.
    """
    points = np.unique(np.asarray(points, dtype=np.float64).reshape(-1, 2), axis=0)
    if len(points) == 0:
        return -math.inf
    if len(points) >= 3:
        try:
            hull = ConvexHull(points)
            return float(-np.max(hull.equations[:, :2] @ point + hull.equations[:, 2]))
        except QhullError:
            pass  # collinear points: a line support, handled below
    centre = points.mean(axis=0)
    axis = points[-1] - points[0]
    length = float(np.linalg.norm(axis))
    if length == 0:
        return -float(np.linalg.norm(point - centre))
    axis /= length
    along = (points - centre) @ axis
    t = float(np.clip((point - centre) @ axis, along.min(), along.max()))
    return -float(np.linalg.norm(point - (centre + t * axis)))
