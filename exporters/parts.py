"""The exporters' input: the parts a script built, as triangle meshes in millimetres, Z up.

The sandbox tessellates every part (see validators/cad/guest.py); this module decodes that
payload on the host without merging vertices, so per-face normals stay sharp at B-rep edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import trimesh

from validators.sandbox.protocol import unpack_bytes

Color = tuple[float, float, float, float]


class PartsError(ValueError):
    """The payload holds no usable geometry; the message says why."""


@dataclass(frozen=True)
class PartMesh:
    """One named part: float32 vertices (mm), optional unit normals, int32 triangles, colour."""

    name: str
    vertices: np.ndarray
    triangles: np.ndarray
    normals: np.ndarray | None = None
    color: Color | None = None

    def trimesh(self) -> trimesh.Trimesh:
        """A closed trimesh of the part (coincident B-rep edge points merged)."""
        mesh = trimesh.Trimesh(self.vertices.astype(np.float64), self.triangles, process=False)
        mesh.merge_vertices(digits_vertex=5)
        mesh.update_faces(mesh.nondegenerate_faces())
        mesh.remove_unreferenced_vertices()
        return mesh


def _array(data: dict[str, Any], key: str, dtype: type) -> np.ndarray:
    return np.frombuffer(unpack_bytes(data[key]), dtype=dtype).reshape(-1, 3)


def _color(value: Any) -> Color | None:
    if value is None:
        return None
    rgba = [float(v) for v in value][:4]
    if len(rgba) == 3:
        rgba.append(1.0)
    if len(rgba) != 4 or not all(0.0 <= v <= 1.0 for v in rgba):
        raise PartsError(f"a part colour must be RGBA in [0, 1], not {value!r}")
    return (rgba[0], rgba[1], rgba[2], rgba[3])


def unique_names(names: list[str]) -> list[str]:
    """The names with repeats numbered (`a`, `a_2`, ...), as formats want distinct names."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def drop_collapsed(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Triangles without those that have two corners at the same point.

    OCCT's meshes of some faces (sweep seams, poles) contain such slivers; they have no area
    but leave edges used three times, so a reader would see the mesh as not watertight.
    Points count as the same at the precision validation welds them (1e-5 mm).
    """
    _, ids = np.unique(np.round(vertices, 5), axis=0, return_inverse=True)
    corner = ids.reshape(-1)[triangles]
    keep = (
        (corner[:, 0] != corner[:, 1])
        & (corner[:, 1] != corner[:, 2])
        & (corner[:, 0] != corner[:, 2])
    )
    return np.ascontiguousarray(triangles[keep])


def parts_from_payload(payload: dict[str, Any]) -> list[PartMesh]:
    """The meshed parts of a sandbox payload; raise PartsError when there are none."""
    parts: list[PartMesh] = []
    raw = [p for p in payload.get("parts", []) if p.get("mesh")]
    names = unique_names([str(p.get("name") or f"part_{i}") for i, p in enumerate(raw)])
    for name, part in zip(names, raw, strict=True):
        mesh = part["mesh"]
        try:
            vertices = _array(mesh, "vertices", np.float32)
            triangles = _array(mesh, "triangles", np.int32)
            normals = _array(mesh, "normals", np.float32) if mesh.get("normals") else None
        except (KeyError, ValueError, TypeError) as exc:
            raise PartsError(f"part {name!r} has a malformed mesh: {exc}") from exc
        if not len(triangles):
            continue
        if triangles.min() < 0 or triangles.max() >= len(vertices):
            raise PartsError(f"part {name!r} has triangles that index missing vertices")
        if not np.isfinite(vertices).all():
            raise PartsError(f"part {name!r} has non-finite vertices")
        if normals is not None and normals.shape != vertices.shape:
            raise PartsError(f"part {name!r} has {len(normals)} normals for {len(vertices)} points")
        triangles = drop_collapsed(vertices, triangles)
        parts.append(PartMesh(name, vertices, triangles, normals, _color(part.get("color"))))
    if not parts:
        raise PartsError("the script built no solid geometry to export")
    return parts
