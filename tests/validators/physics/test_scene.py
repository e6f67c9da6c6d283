"""Interference, floating parts and support of multi-part scenes, and physics_checks."""

from __future__ import annotations

import itertools
import math
import time

import pytest
import trimesh

from tests.validators.physics import shapes
from validators.physics import (
    PhysicsOptions,
    floating_parts,
    interference,
    physics_checks,
    support,
)
from validators.physics.meshes import vet_parts
from validators.physics.scene import candidate_pairs

Parts = list[tuple[str, trimesh.Trimesh]]


def stacked() -> Parts:
    return [("low", shapes.box(20, 20, 20)), ("high", shapes.box(20, 20, 20, (0, 0, 20)))]


def table() -> Parts:
    legs = [
        (f"leg{i}", shapes.box(4, 4, 40, (x, y, 0)))
        for i, (x, y) in enumerate([(0, 0), (56, 0), (0, 36), (56, 36)])
    ]
    return [*legs, ("top", shapes.box(60, 40, 3, (0, 0, 40)))]


def test_stacked_cubes_pass_every_scene_check() -> None:
    checks = physics_checks(stacked(), scene=True)
    assert set(checks) == {"stability", "interference", "floating_parts", "support"}
    assert all(check.passed and check.score == 1.0 for check in checks.values()), checks


def test_a_part_alone_gets_only_stability() -> None:
    assert set(physics_checks([("block", shapes.box(10, 10, 10))], scene=False)) == {"stability"}


def test_a_hovering_box_floats_and_is_unsupported() -> None:
    parts = [*stacked(), ("hovering", shapes.box(10, 10, 10, (40, 0, 10)))]
    floating = floating_parts(parts)
    assert not floating.passed and floating.detail["floating_parts"] == ["hovering"]
    assert floating.score == pytest.approx(2 / 3)
    unsupported = support(parts)
    assert not unsupported.passed
    assert unsupported.detail["unsupported_parts"] == [
        {"name": "hovering", "reason": "nothing below it"}
    ]


def test_a_gap_wider_than_the_tolerance_breaks_contact() -> None:
    near = [("low", shapes.box(20, 20, 20)), ("high", shapes.box(20, 20, 20, (0, 0, 20.03)))]
    far = [("low", shapes.box(20, 20, 20)), ("high", shapes.box(20, 20, 20, (0, 0, 20.2)))]
    assert floating_parts(near).passed and support(near).passed
    assert not floating_parts(far).passed and not support(far).passed


def test_half_overlapping_boxes_interfere() -> None:
    parts = [("a", shapes.box(20, 20, 20)), ("b", shapes.box(20, 20, 20, (10, 0, 0)))]
    check = interference(parts)
    assert not check.passed and check.score == pytest.approx(0.5, rel=1e-4)
    (pair,) = check.detail["worst_pairs"]
    assert pair["parts"] == ["a", "b"]
    assert pair["fraction"] == pytest.approx(0.5, rel=1e-4)
    assert pair["overlap_mm3"] == pytest.approx(4000, rel=1e-4)


def test_interference_is_relative_to_the_smaller_part() -> None:
    parts = [("big", shapes.box(100, 100, 10)), ("pin", shapes.box(2, 2, 20, (10, 10, 0)))]
    check = interference(parts)
    assert check.detail["max_fraction"] == pytest.approx(0.5, rel=1e-4)


def test_parts_touching_along_faces_do_not_interfere() -> None:
    row = [(f"b{i}", shapes.box(10, 10, 10, (10 * i, 0, 0))) for i in range(4)]
    check = interference(row)
    assert check.passed and check.detail["max_fraction"] == 0.0
    assert check.detail["pairs_checked"] == 3  # the broad phase skips boxes that do not meet


def test_a_table_stands_on_its_legs() -> None:
    parts = table()
    assert floating_parts(parts).passed
    assert support(parts).passed
    assert interference(parts).passed


def test_a_plank_overhanging_its_support_is_unsupported() -> None:
    # The plank touches the block, but its centre of mass is 15 mm past the block's edge.
    parts = [("block", shapes.box(20, 20, 20)), ("plank", shapes.box(50, 20, 4, (0, 0, 20)))]
    check = support(parts)
    assert floating_parts(parts).passed
    assert not check.passed
    (row,) = check.detail["unsupported_parts"]
    assert row["name"] == "plank" and row["reason"] == "centre of mass outside its support"
    assert row["margin_mm"] == pytest.approx(-5, abs=0.1)


def test_a_part_held_only_from_the_side_is_connected_but_unsupported() -> None:
    parts = [("wall", shapes.box(5, 20, 60)), ("shelf", shapes.box(30, 20, 3, (5, 0, 40)))]
    assert floating_parts(parts).passed
    assert not support(parts).passed


def test_the_broad_phase_finds_every_touching_pair() -> None:
    grid = [(f"c{i}", shapes.box(10, 10, 10, (10 * (i % 4), 10 * (i // 4), 0))) for i in range(12)]
    vetted = vet_parts(grid, max_parts=100, max_triangles=10**6)
    found = set(candidate_pairs(vetted, 0.05))
    for i, j in itertools.combinations(range(12), 2):
        a, b = vetted[i].mesh.bounds, vetted[j].mesh.bounds
        meet = all(a[0][k] <= b[1][k] + 0.1 and b[0][k] <= a[1][k] + 0.1 for k in range(3))
        assert ((i, j) in found) is meet


def test_hundreds_of_parts_are_checked_in_bounded_time() -> None:
    # 10 × 10 columns of two stacked cubes: 200 parts, each touching several others.
    parts = [
        (f"c{i}{level}", shapes.box(10, 10, 10, (10 * (i % 10), 10 * (i // 10), 10 * level)))
        for i in range(100)
        for level in range(2)
    ]
    for check in (interference, floating_parts, support):
        started = time.perf_counter()
        result = check(parts)
        assert time.perf_counter() - started < 10, check.__name__
        assert result.passed, (check.__name__, result.detail)


def test_more_parts_than_allowed_fail_with_the_reason() -> None:
    parts = [(f"c{i}", shapes.box(1, 1, 1, (2 * i, 0, 0))) for i in range(11)]
    options = PhysicsOptions(max_parts=10)
    for check in physics_checks(parts, scene=True, options=options).values():
        assert not check.passed and "max_parts=10" in check.detail["reason"]


@pytest.mark.parametrize("lying", [False, True])
def test_large_coplanar_faces_in_contact_stay_fast(lying: bool) -> None:
    # Two 5000-section cylinders end to end: their caps are coplanar 5000-gons. Booleans or
    # min_gap on them in place take manifold3d seconds to minutes; shifted, milliseconds.
    cylinder = trimesh.creation.cylinder(radius=40, height=80, sections=5000)
    cylinder.apply_translation((0, 0, 40))
    parts = [("a", cylinder), ("b", cylinder.copy().apply_translation((0, 0, 80)))]
    if lying:
        turn = trimesh.transformations.rotation_matrix(math.pi / 2, (1, 0, 0))
        parts = [(name, mesh.copy().apply_transform(turn)) for name, mesh in parts]
    for check in (interference, floating_parts, support):
        started = time.perf_counter()
        assert check(parts).passed, check.__name__
        assert time.perf_counter() - started < 3, check.__name__
