"""How parts sit together: overlaps, connection to the ground, and support from below.

All three use exact manifold3d booleans on the vetted parts (the scene starts at z = 0, which
is the ground) after a bounding-box broad phase, so only neighbouring pairs are measured.

Booleans of parts whose faces are coplanar and overlap (a lid on a jar) cost manifold3d time
quadratic in those faces' triangles (minutes for a 10k-gon cap; so does its min_gap), so a
boolean never sees two parts exactly in place: the second is always shifted, by a hair in a
generic direction when measuring overlap, by the touch tolerance when looking for contact.
"""

from __future__ import annotations

import itertools
from collections import deque

import manifold3d
import numpy as np
import trimesh

from validators.physics.meshes import (
    Part,
    hull_margin,
    manifold_points,
    never_raises,
    to_manifold,
    vet_scene,
)
from validators.physics.options import PhysicsOptions
from validators.report import Check

LISTED = 20  # at most this many parts or pairs named in a detail
GENERIC = np.array([0.267, 0.535, 0.802])  # a unit direction parallel to no modelled face
HAIR = 1e-6  # of the scene size: moves overlap volumes by area × 1e-6 × size, nothing


def _vetted(
    parts: list[tuple[str, trimesh.Trimesh]], options: PhysicsOptions
) -> tuple[list[Part], list[manifold3d.Manifold]]:
    vetted = vet_scene(parts, options)
    return vetted, [to_manifold(part.mesh) for part in vetted]


def candidate_pairs(parts: list[Part], pad: float) -> list[tuple[int, int]]:
    """Pairs (i < j) whose bounding boxes, grown by pad, overlap: the broad phase."""
    low = np.array([part.mesh.bounds[0] for part in parts]) - pad
    high = np.array([part.mesh.bounds[1] for part in parts]) + pad
    overlap = np.all(
        (low[:, None, :] <= high[None, :, :]) & (low[None, :, :] <= high[:, None, :]), axis=2
    )
    first, second = np.nonzero(np.triu(overlap, k=1))
    return list(zip(first.tolist(), second.tolist(), strict=True))


def _hair(parts: list[Part]) -> np.ndarray:
    size = float(np.ptp([part.mesh.bounds for part in parts], axis=(0, 1)).max())
    return HAIR * size * GENERIC


def contacts(
    parts: list[Part], solids: list[manifold3d.Manifold], tolerance: float
) -> list[set[int]]:
    """For each part, the parts it touches or overlaps.

    Two parts touch when moving one by `tolerance` along each axis, toward the other, makes
    them overlap (tried at the corners of that cube: diagonal shifts, which keep no face
    coplanar). A face-to-face gap up to the tolerance counts, along any axis.
    """
    touching: list[set[int]] = [set() for _ in parts]
    for i, j in candidate_pairs(parts, tolerance):
        a, b = parts[i].mesh.bounds, parts[j].mesh.bounds
        signs = [_toward(a[0][k], a[1][k], b[0][k], b[1][k]) for k in range(3)]
        for shift in itertools.product(*signs):
            moved = solids[j].translate(tuple(tolerance * np.array(shift)))
            if not (solids[i] ^ moved).is_empty():
                touching[i].add(j)
                touching[j].add(i)
                break
    return touching


def _toward(a_low: float, a_high: float, b_low: float, b_high: float) -> list[float]:
    """Signs of a shift along one axis that can bring [b_low, b_high] onto [a_low, a_high]."""
    return [sign for sign, useful in ((-1.0, b_high > a_low), (1.0, b_low < a_high)) if useful]


@never_raises
def interference(
    parts: list[tuple[str, trimesh.Trimesh]], options: PhysicsOptions | None = None
) -> Check:
    """Overlap volume of each pair of parts over the smaller one's volume; touching is fine."""
    options = options or PhysicsOptions()
    vetted, solids = _vetted(parts, options)
    pairs = candidate_pairs(vetted, 0.0)
    hair = tuple(_hair(vetted))
    overlaps = []
    for i, j in pairs:
        volume = (solids[i] ^ solids[j].translate(hair)).volume()  # ^ is intersection
        if volume > 0:
            fraction = volume / min(vetted[i].volume, vetted[j].volume)
            overlaps.append((fraction, volume, i, j))
    overlaps.sort(reverse=True)
    worst = overlaps[0][0] if overlaps else 0.0
    passed = worst <= options.max_interference
    return Check(
        1.0 - worst,
        passed,
        {
            "max_fraction": worst,
            "max_interference": options.max_interference,
            "worst_pairs": [
                {
                    "parts": [vetted[i].name, vetted[j].name],
                    "overlap_mm3": volume,
                    "fraction": fraction,
                }
                for fraction, volume, i, j in overlaps[:LISTED]
            ],
            "overlapping_pairs": sum(f > options.max_interference for f, *_ in overlaps),
            "pairs_checked": len(pairs),
        },
    )


@never_raises
def floating_parts(
    parts: list[tuple[str, trimesh.Trimesh]], options: PhysicsOptions | None = None
) -> Check:
    """Every part is connected to the ground through parts that touch (contact graph)."""
    options = options or PhysicsOptions()
    vetted, solids = _vetted(parts, options)
    tolerance = options.touch_tolerance_mm
    touching = contacts(vetted, solids, tolerance)
    # The ground is the plane through the lowest point: parts that reach it are grounded.
    grounded = [i for i, part in enumerate(vetted) if part.mesh.bounds[0, 2] <= tolerance]
    reached = set(grounded)
    todo = deque(grounded)
    while todo:
        for j in touching[todo.popleft()] - reached:
            reached.add(j)
            todo.append(j)
    floating = [part.name for i, part in enumerate(vetted) if i not in reached]
    return Check(
        1.0 - len(floating) / len(vetted),
        not floating,
        {
            "floating_parts": floating[:LISTED],
            "floating": len(floating),
            "grounded_parts": len(grounded),
            "contacts": sum(len(t) for t in touching) // 2,
            "touch_tolerance_mm": tolerance,
        },
    )


@never_raises
def support(
    parts: list[tuple[str, trimesh.Trimesh]], options: PhysicsOptions | None = None
) -> Check:
    """Every part rests on the ground or on parts below it, its centre of mass over that support.

    The support region of a part is where it lies within touch_tolerance_mm above the ground
    (its vertices there) or above another part (the part intersected with that neighbour raised
    by the tolerance, exactly), seen from above. Parts only held from the side or from above
    (glued, hung) are unsupported here, though `floating_parts` counts them as connected.
    """
    options = options or PhysicsOptions()
    vetted, solids = _vetted(parts, options)
    tolerance = options.touch_tolerance_mm
    touching = contacts(vetted, solids, tolerance)
    # Raise each neighbour by the tolerance (and a hair sideways, so no side face stays
    # coplanar): what of the part it then overlaps is where it rests on that neighbour.
    raise_by = tuple(_hair(vetted) * [1, 1, 0] + [0, 0, tolerance])
    unsupported: list[dict[str, object]] = []
    for i, part in enumerate(vetted):
        patches = []
        vertices = np.asarray(part.mesh.vertices)
        patches.append(vertices[vertices[:, 2] <= tolerance])  # where it rests on the ground
        for j in touching[i]:
            slab = solids[i] ^ solids[j].translate(raise_by)
            if not slab.is_empty():
                patches.append(manifold_points(slab))
        points = np.concatenate(patches)
        if len(points) == 0:
            unsupported.append({"name": part.name, "reason": "nothing below it"})
            continue
        margin = hull_margin(points[:, :2], np.asarray(part.mesh.center_mass)[:2])
        if margin < -tolerance:
            unsupported.append(
                {
                    "name": part.name,
                    "reason": "centre of mass outside its support",
                    "margin_mm": margin,
                }
            )
    return Check(
        1.0 - len(unsupported) / len(vetted),
        not unsupported,
        {
            "unsupported_parts": unsupported[:LISTED],
            "unsupported": len(unsupported),
            "touch_tolerance_mm": tolerance,
        },
    )
