"""Host side: turn the sandbox's tessellation back into meshes and check them independently."""

from __future__ import annotations

from typing import Any

import manifold3d
import numpy as np
import trimesh

from validators.sandbox.protocol import unpack_bytes


class MeshError(ValueError):
    """The mesh in a payload is malformed."""


def decode_mesh(data: dict[str, Any] | None) -> trimesh.Trimesh | None:
    """A trimesh from a part's packed mesh, with coincident vertices merged; None when absent."""
    if not data:
        return None
    try:
        vertices = np.frombuffer(unpack_bytes(data["vertices"]), dtype=np.float32).reshape(-1, 3)
        faces = np.frombuffer(unpack_bytes(data["triangles"]), dtype=np.int32).reshape(-1, 3)
    except (KeyError, ValueError, TypeError) as exc:
        raise MeshError(f"malformed mesh: {exc}") from exc
    if len(faces) and (faces.min() < 0 or faces.max() >= len(vertices)):
        raise MeshError("mesh triangles index missing vertices")
    if not np.isfinite(vertices).all():
        raise MeshError("mesh has non-finite vertices")
    mesh = trimesh.Trimesh(vertices.astype(np.float64), faces, process=False)
    # B-rep faces are meshed separately but share their edges' points: merging joins them.
    mesh.merge_vertices(digits_vertex=5)
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.remove_unreferenced_vertices()
    return mesh


def combine(meshes: list[trimesh.Trimesh | None]) -> trimesh.Trimesh | None:
    """All parts' meshes as one (None when there are none)."""
    present = [m for m in meshes if m is not None and len(m.faces)]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    joined = trimesh.util.concatenate(present)
    assert isinstance(joined, trimesh.Trimesh)
    return joined


def watertight_facts(mesh: trimesh.Trimesh) -> dict[str, Any]:
    """Closed (every edge shared by exactly two triangles), consistently wound, outward normals;
    and for a closed mesh its through holes (the genus of its surfaces)."""
    closed = bool(mesh.is_watertight)
    wound = bool(mesh.is_winding_consistent)
    volume = float(mesh.volume) if closed and wound else float("nan")
    return {
        "closed": closed,
        "winding_consistent": wound,
        "outward": bool(volume > 0) if closed and wound else False,
        "mesh_volume_mm3": volume,
        "triangles": len(mesh.faces),
        "through_holes": through_holes(mesh) if closed else None,
    }


def through_holes(mesh: trimesh.Trimesh) -> int:
    """How many times one can pass right through a closed mesh: the genus of its surfaces, from
    Euler's V - E + F = 2 (surfaces - genus). A washer has one, a plate with four through holes
    four, a cup or a blind hole none; no program's numbers enter it, only its surface."""
    surfaces = int(mesh.body_count)
    return max(0, (2 * surfaces - int(mesh.euler_number)) // 2)


def outlines(mesh: trimesh.Trimesh) -> tuple[list[float], list[int]]:
    """What the part's outline is seen along each axis (x, y, z), from its projected convex
    hull: how much of the rectangle of the other two extents it fills (a disc about 0.785,
    pi / 4; a square or a rounded-corner box 1.0 or nearly; a flat extent 1.0), and how many
    straight sides it has (a hexagon 6, a square 4, a disc 0: a side is a straight run of the
    hull at least SIDE_SHARE of its perimeter long)."""
    from scipy.spatial import ConvexHull, QhullError

    points = np.asarray(mesh.vertices, dtype=np.float64)
    extents = np.ptp(points, axis=0) if len(points) else np.zeros(3)
    fills, sides = [], []
    for axis in range(3):
        others = [a for a in range(3) if a != axis]
        rectangle = float(extents[others[0]] * extents[others[1]])
        seen = points[:, others]
        try:
            hull = ConvexHull(seen) if rectangle > 1e-9 else None
        except (QhullError, ValueError):
            hull = None
        fills.append(round(min(1.0, float(hull.volume) / rectangle), 4) if hull else 1.0)
        sides.append(_straight_sides(seen[hull.vertices]) if hull else 0)
    return fills, sides


SIDE_SHARE = 0.08  # a hexagon's side is a sixth of its perimeter, a disc's facets far less
SIDE_TURN_DEG = 8.0  # edges of one side turn less than this from its first edge


def _straight_sides(polygon: np.ndarray) -> int:
    """The straight sides of a convex polygon (its vertices in order): runs of edges that turn
    less than SIDE_TURN_DEG from the run's first edge, SIDE_SHARE of the perimeter or longer."""
    edges = np.roll(polygon, -1, axis=0) - polygon
    lengths = np.hypot(edges[:, 0], edges[:, 1])
    keep = lengths > 1e-9
    edges, lengths = edges[keep], lengths[keep]
    if len(edges) < 3:
        return 0
    angles = np.degrees(np.arctan2(edges[:, 1], edges[:, 0]))
    turns = np.abs((np.diff(angles, prepend=angles[-1]) + 180.0) % 360.0 - 180.0)
    start = int(np.argmax(turns))  # a run begins at the sharpest corner
    order = np.roll(np.arange(len(edges)), -start)
    runs: list[float] = []
    first = None
    for index in order:
        turn = abs((angles[index] - first + 180.0) % 360.0 - 180.0) if first is not None else 0.0
        if first is None or turn >= SIDE_TURN_DEG:
            runs.append(0.0)
            first = angles[index]
        runs[-1] += float(lengths[index])
    perimeter = float(lengths.sum())
    return sum(run >= SIDE_SHARE * perimeter for run in runs)


def to_manifold(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    """A manifold3d solid (double precision) for exact booleans; ValueError if not closed."""
    solid = manifold3d.Manifold(
        manifold3d.Mesh64(
            vert_properties=np.ascontiguousarray(mesh.vertices, dtype=np.float64),
            tri_verts=np.ascontiguousarray(mesh.faces, dtype=np.uint64),
        )
    )
    if solid.status() != manifold3d.Error.NoError:
        raise ValueError(f"mesh is not a closed manifold ({solid.status()})")
    return solid
