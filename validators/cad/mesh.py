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


def outline_fill(mesh: trimesh.Trimesh) -> list[float]:
    """For each axis (x, y, z), how much of the rectangle of the other two extents the part's
    outline seen along that axis fills: its projected convex hull's area over the rectangle's.
    A disc seen along its axis fills about 0.785 (pi / 4), a square or a rounded-corner box 1.0
    or nearly; a flat extent gives 1.0."""
    from scipy.spatial import ConvexHull, QhullError

    points = np.asarray(mesh.vertices, dtype=np.float64)
    extents = np.ptp(points, axis=0) if len(points) else np.zeros(3)
    fills = []
    for axis in range(3):
        others = [a for a in range(3) if a != axis]
        rectangle = float(extents[others[0]] * extents[others[1]])
        try:
            area = float(ConvexHull(points[:, others]).volume) if rectangle > 1e-9 else rectangle
        except (QhullError, ValueError):
            area = rectangle
        fills.append(round(min(1.0, area / rectangle), 4) if rectangle > 1e-9 else 1.0)
    return fills


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
