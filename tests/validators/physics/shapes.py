"""Test shapes in millimetres, Z up, built with trimesh.creation and manifold3d booleans."""

from __future__ import annotations

import math

import numpy as np
import trimesh


def box(
    x: float, y: float, z: float, at: tuple[float, float, float] = (0, 0, 0)
) -> trimesh.Trimesh:
    """A box of size (x, y, z) whose lowest corner is at `at`."""
    mesh = trimesh.creation.box((x, y, z))
    mesh.apply_translation(np.add(at, (x / 2, y / 2, z / 2)))
    return mesh


def union(*meshes: trimesh.Trimesh) -> trimesh.Trimesh:
    """Boolean union by manifold3d."""
    return trimesh.boolean.union(list(meshes), engine="manifold")


def cup(wall: float, radius: float = 20.0, height: float = 40.0) -> trimesh.Trimesh:
    """An open cup: a cylinder hollowed from the top, walls and bottom `wall` thick."""
    outer = trimesh.creation.cylinder(radius=radius, height=height, sections=64)
    inner = trimesh.creation.cylinder(radius=radius - wall, height=height, sections=64)
    inner.apply_translation((0, 0, wall))
    mesh = trimesh.boolean.difference([outer, inner], engine="manifold")
    mesh.apply_translation((0, 0, height / 2))
    return mesh


def cone(on_tip: bool, radius: float = 10.0, height: float = 30.0) -> trimesh.Trimesh:
    """A cone standing on its base, or turned over onto its tip."""
    mesh = trimesh.creation.cone(radius=radius, height=height, sections=64)
    if on_tip:
        mesh.apply_transform(trimesh.transformations.rotation_matrix(math.pi, (1, 0, 0)))
    return mesh


def cylinder_on_side(sections: int = 64, on_edge: bool = False) -> trimesh.Trimesh:
    """A cylinder (r 10, 40 long) lying along Y on one of its facets, or on an edge."""
    mesh = trimesh.creation.cylinder(radius=10.0, height=40.0, sections=sections)
    # trimesh puts a vertex at angle 0, which ends up at the bottom; half a step more puts the
    # middle of a facet there.
    turn = 0.0 if on_edge else math.pi / sections
    mesh.apply_transform(trimesh.transformations.rotation_matrix(turn, (0, 0, 1)))
    mesh.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, (1, 0, 0)))
    return mesh


def post_with_arm() -> trimesh.Trimesh:
    """A 10 mm post 100 mm tall with a heavy 80 mm arm at the top: falls over."""
    return union(box(10, 10, 100, (-5, -5, 0)), box(80, 20, 20, (5, -10, 80)))


def l_bracket() -> trimesh.Trimesh:
    """An angle bracket lying on its 60 mm leg, the 40 mm leg standing at one end."""
    return union(box(60, 20, 5), box(5, 20, 40))


def hook() -> trimesh.Trimesh:
    """A heavy 20 mm base with a thin rod up and out 80 mm past it: stable, though its convex
    hull's centroid lies far outside the base (mass must come from the real volume)."""
    return union(box(20, 20, 20), box(2, 2, 82, (9, 9, 18)), box(90, 2, 2, (9, 9, 98)))


def mushroom() -> trimesh.Trimesh:
    """A wide cap (r 30 mm) on a thin stem (r 5 mm): the cap's underside needs supports."""
    stem = trimesh.creation.cylinder(radius=5, height=30, sections=48)
    stem.apply_translation((0, 0, 15))
    cap = trimesh.creation.cylinder(radius=30, height=5, sections=96)
    cap.apply_translation((0, 0, 32.5))
    return union(stem, cap)


def stability_suite() -> dict[str, tuple[trimesh.Trimesh, bool]]:
    """Shapes with the drop test's expected verdict (True: stable)."""
    return {
        "upright block": (box(20, 20, 20), True),
        "tall thin block": (box(10, 10, 100), True),  # tips at 5.7°, more than the 2° nudge
        "needle column": (box(2, 2, 100), False),  # tips at 1.1°: the 2° nudge topples it
        "post with heavy arm": (post_with_arm(), False),
        "cone on its tip": (cone(on_tip=True), False),
        "cone on its base": (cone(on_tip=False), True),
        "L-bracket lying down": (l_bracket(), True),
        "hook": (hook(), True),
        # A lying cylinder rolls when its table tilts 2°, unless it rests on a facet wider
        # than 2 × 2°: a coarse tessellation (64 sections: 2.8° each way) stands, a fine one
        # (256: 0.7°) or one resting on an edge between facets rolls. Both methods agree.
        "cylinder on its side, on a 5.6° facet": (cylinder_on_side(), True),
        "cylinder on its side, on a 1.4° facet": (cylinder_on_side(sections=256), False),
        "cylinder on its side, on an edge": (cylinder_on_side(on_edge=True), False),
    }
