"""Can it be printed (FDM) as modelled, Z up? Overhangs, wall thickness, build volume.

The part is printed in its modelled orientation, standing on its lowest point: the overhang
and wall checks assume that orientation, so `build_volume` keeps Z up too (it may turn the part
90° about Z, which changes nothing about how it prints).
"""

from __future__ import annotations

import math

import numpy as np
import trimesh

from validators.physics.meshes import never_raises, vet_mesh
from validators.physics.options import PrintOptions
from validators.report import Check

PLATE_TOLERANCE_MM = 0.05  # faces this close to the lowest point lie on the build plate
WALL_SAMPLES = 4000  # surface points probed, area-weighted, seeded: the same mesh, same answer
WALL_SEED = 0
WALL_PERCENTILE = 5.0  # a few thin samples at sharp edges must not fail a part
WALL_PROBE = 5.0  # rays reach this many min_wall_mm; thicker walls are reported as that
RAY_START_MM = 1e-3  # rays start this far inside so they do not hit their own triangle
# Facets of a curved wall are closer than its radii say, by cos(half the facet angle): 0.5% at
# CadQuery's 0.2 rad angular tolerance. A wall modelled at exactly min_wall_mm must pass.
WALL_TOLERANCE = 0.01


@never_raises
def overhang(mesh: trimesh.Trimesh, options: PrintOptions | None = None) -> Check:
    """Share of the area facing down steeper than max_overhang_deg, off the build plate."""
    options = options or PrintOptions()
    mesh = vet_mesh(mesh, max_triangles=options.max_triangles)
    normals, areas = np.asarray(mesh.face_normals), np.asarray(mesh.area_faces)
    # A face at angle a from vertical has normal z = -sin(a) when it faces down.
    steep = normals[:, 2] < -math.sin(math.radians(options.max_overhang_deg)) - 1e-9
    on_plate = np.asarray(mesh.triangles)[:, :, 2].max(axis=1) <= PLATE_TOLERANCE_MM
    over = steep & ~on_plate
    area = float(areas[over].sum())
    fraction = area / float(areas.sum())
    return Check(
        1.0 - fraction,
        fraction <= options.max_overhang_fraction,
        {
            "overhang_fraction": fraction,
            "overhang_area_mm2": area,
            "max_overhang_deg": options.max_overhang_deg,
            "max_overhang_fraction": options.max_overhang_fraction,
        },
    )


@never_raises
def wall_thickness(mesh: trimesh.Trimesh, options: PrintOptions | None = None) -> Check:
    """Local thickness by rays cast inward from sampled surface points; a low percentile passes."""
    options = options or PrintOptions()
    mesh = vet_mesh(mesh, max_triangles=options.max_triangles)
    probe = WALL_PROBE * options.min_wall_mm
    points, faces = trimesh.sample.sample_surface(mesh, WALL_SAMPLES, seed=WALL_SEED)
    thickness = inward_distance(mesh, points, np.asarray(mesh.face_normals)[faces], probe)
    low = float(np.percentile(thickness, WALL_PERCENTILE))
    enough = options.min_wall_mm * (1 - WALL_TOLERANCE)
    return Check(
        min(1.0, low / enough),
        low >= enough,
        {
            "min_thickness_mm": float(thickness.min()),
            "percentile_thickness_mm": low,
            "percentile": WALL_PERCENTILE,
            "thin_fraction": float(np.mean(thickness < enough)),
            "min_wall_mm": options.min_wall_mm,
            "samples": len(thickness),
            "probe_mm": probe,
        },
    )


def inward_distance(
    mesh: trimesh.Trimesh, points: np.ndarray, normals: np.ndarray, probe: float
) -> np.ndarray:
    """Distance from each surface point along its inverted normal to the next surface (≤ probe).

    The rays are segments of length `probe`, so the rtree query (trimesh's triangles_tree) of
    each segment's box returns a handful of candidates; Möller–Trumbore tests them all at once.
    """
    direction = -np.asarray(normals, dtype=np.float64)
    origin = np.asarray(points, dtype=np.float64) + RAY_START_MM * direction
    end = origin + probe * direction
    ray_ids, counts = mesh.triangles_tree.intersection_v(
        np.minimum(origin, end), np.maximum(origin, end)
    )
    ray = np.repeat(np.arange(len(origin)), np.asarray(counts).astype(np.int64))
    tri = np.asarray(mesh.triangles)[np.asarray(ray_ids).astype(np.int64)]
    d = direction[ray]
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-15
    inv = np.divide(1.0, det, out=np.zeros_like(det), where=ok)
    s = origin[ray] - tri[:, 0]
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = np.einsum("ij,ij->i", d, q) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    edge = 1e-9  # rays through a shared edge must hit one of its triangles
    hit = ok & (u >= -edge) & (v >= -edge) & (u + v <= 1 + edge) & (t > 0) & (t <= probe)
    distance = np.full(len(origin), probe)
    np.minimum.at(distance, ray[hit], t[hit] + RAY_START_MM)
    return np.minimum(distance, probe)


@never_raises
def build_volume(mesh: trimesh.Trimesh, options: PrintOptions | None = None) -> Check:
    """The bounding box fits the printer, Z up as modelled, turned 90° about Z if that helps."""
    options = options or PrintOptions()
    mesh = vet_mesh(mesh, max_triangles=options.max_triangles)
    extents = np.ptp(np.asarray(mesh.bounds), axis=0)
    room = np.asarray(options.build_volume_mm, dtype=np.float64)
    turns = {"as modelled": extents, "turned 90° about Z": extents[[1, 0, 2]]}
    ratios = {name: float(np.min(room / np.maximum(size, 1e-12))) for name, size in turns.items()}
    best = max(ratios, key=lambda name: ratios[name])
    fits = ratios[best] >= 1.0
    detail: dict[str, object] = {
        "extents_mm": [float(v) for v in extents],
        "build_volume_mm": [float(v) for v in room],
        "orientation": best if fits else None,
    }
    if not fits:
        size, limit = " × ".join(f"{v:.4g}" for v in extents), " × ".join(f"{v:g}" for v in room)
        detail["reason"] = f"the part is {size} mm, it does not fit the {limit} mm build volume"
    return Check(min(1.0, ratios[best]), fits, detail)


def printability_checks(
    mesh: trimesh.Trimesh, options: PrintOptions | None = None
) -> dict[str, Check]:
    """The FDM checks of one (combined) mesh: overhang, wall_thickness, build_volume."""
    return {
        "overhang": overhang(mesh, options),
        "wall_thickness": wall_thickness(mesh, options),
        "build_volume": build_volume(mesh, options),
    }
