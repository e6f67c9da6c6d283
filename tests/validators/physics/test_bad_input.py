"""Bad input: every check returns a failing Check with a reason, in bounded time, never raises."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest
import trimesh

from tests.validators.physics import shapes
from validators.physics import (
    PhysicsOptions,
    PrintOptions,
    build_volume,
    floating_parts,
    interference,
    overhang,
    stability,
    stability_analytic,
    support,
    wall_thickness,
)
from validators.report import Check

PART_CHECKS: list[Callable[..., Check]] = [
    stability,
    stability_analytic,
    interference,
    floating_parts,
    support,
]
MESH_CHECKS: list[Callable[..., Check]] = [overhang, wall_thickness, build_volume]


def _with_vertex(value: float) -> trimesh.Trimesh:
    block = shapes.box(10, 10, 10)
    vertices = block.vertices.copy()
    vertices[3, 1] = value
    return trimesh.Trimesh(vertices, block.faces, process=False)


def _open() -> trimesh.Trimesh:
    block = shapes.box(10, 10, 10)
    return trimesh.Trimesh(block.vertices, block.faces[:-2], process=False)


def _flat() -> trimesh.Trimesh:
    # Two triangles back to back: closed (every edge shared twice) but with no volume.
    return trimesh.Trimesh(
        [[0, 0, 0], [10, 0, 0], [0, 10, 0]], [[0, 1, 2], [0, 2, 1]], process=False
    )


def _million_triangles() -> trimesh.Trimesh:
    rng = np.random.default_rng(0)
    return trimesh.Trimesh(
        rng.random((500_000, 3)), rng.integers(0, 500_000, (1_000_000, 3)), process=False
    )


BAD = {
    "NaN vertex": (_with_vertex(float("nan")), "non-finite"),
    "inf vertex": (_with_vertex(float("inf")), "non-finite"),
    "open mesh": (_open(), "not a closed surface"),
    "zero volume": (_flat(), "zero volume"),
    "no triangles": (trimesh.Trimesh(), "no triangles"),
    "10^6 triangles": (_million_triangles(), "max_triangles=200000"),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("check", PART_CHECKS + MESH_CHECKS, ids=lambda c: c.__name__)
def test_bad_meshes_fail_with_a_reason(check: Callable[..., Check], case: str) -> None:
    mesh, reason = BAD[case]
    argument = mesh if check in MESH_CHECKS else [("bad", mesh)]
    started = time.perf_counter()
    result = check(argument)
    assert time.perf_counter() - started < 10  # bounded: no O(n) work on a rejected mesh
    assert not result.passed and result.score == 0.0
    assert reason in result.detail["reason"]


@pytest.mark.parametrize("check", PART_CHECKS + MESH_CHECKS, ids=lambda c: c.__name__)
def test_a_shape_far_from_the_origin_is_checked_normally(check: Callable[..., Check]) -> None:
    far = shapes.box(20, 20, 20, (1e6, -1e6, 1e6))
    result = check(far if check in MESH_CHECKS else [("far", far), ("near", far.copy())])
    near = shapes.box(20, 20, 20)
    expected = check(near if check in MESH_CHECKS else [("far", near), ("near", near.copy())])
    assert result.passed == expected.passed and result.score == pytest.approx(expected.score)


def test_a_stable_block_far_away_is_stable() -> None:
    check = stability([("far", shapes.box(20, 20, 20, (1e6, 1e6, -1e6)))])
    assert check.passed and check.detail["slide_mm"] < 0.1


def test_an_absurdly_large_shape_fails_physics_and_build_volume_with_a_reason() -> None:
    huge = shapes.box(1e5, 1e5, 1e5)
    for check in PART_CHECKS:
        result = check([("huge", huge)])
        assert not result.passed and "max_size_mm" in result.detail["reason"]
    result = build_volume(huge)
    assert not result.passed and "does not fit" in result.detail["reason"]
    assert overhang(huge).passed and wall_thickness(huge).passed  # still measurable


def test_not_a_list_of_named_meshes() -> None:
    for parts in ([], [("x",)], [("x", "not a mesh")], None):
        for check in PART_CHECKS:
            result = check(parts)
            assert not result.passed and result.detail["reason"]
    for check in MESH_CHECKS:
        assert not check("not a mesh").passed


def test_an_inside_out_mesh_is_turned_the_right_way() -> None:
    block = shapes.box(20, 20, 20)
    block.invert()
    assert stability([("block", block)]).passed
    assert overhang(block).passed and wall_thickness(block).passed


def test_duplicate_names_are_kept_apart() -> None:
    parts = [("cube", shapes.box(10, 10, 10)), ("cube", shapes.box(10, 10, 10, (0, 0, 30)))]
    assert floating_parts(parts).detail["floating_parts"] == ["cube#1"]


@pytest.mark.parametrize(
    ("make", "fix"),
    [
        (lambda: PhysicsOptions(max_tilt_deg=0), "max_tilt_deg"),
        (lambda: PhysicsOptions(timestep_s=0.05), "timestep_s"),
        (lambda: PhysicsOptions(settle_s=1.0), "settle_s"),
        (lambda: PhysicsOptions(max_interference=1.5), "max_interference"),
        (lambda: PhysicsOptions(max_parts=0), "max_parts"),
        (lambda: PhysicsOptions(decompose="sometimes"), "decompose"),
        (lambda: PhysicsOptions(density_kg_m3=float("nan")), "density_kg_m3"),
        (lambda: PhysicsOptions(perturb_deg=60), "perturb_deg"),
        (lambda: PrintOptions(max_overhang_deg=90), "max_overhang_deg"),
        (lambda: PrintOptions(build_volume_mm=(200.0, -1.0, 200.0)), "build_volume_mm"),
        (lambda: PrintOptions(max_overhang_fraction=2), "max_overhang_fraction"),
        (lambda: PrintOptions(min_wall_mm=0), "min_wall_mm"),
    ],
)
def test_options_say_how_to_fix_them(make: Callable[[], object], fix: str) -> None:
    with pytest.raises(ValueError, match=fix):
        make()
