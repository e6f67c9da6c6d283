"""FDM printability: overhang, wall thickness, build volume."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from tests.validators.physics import shapes
from validators.physics import (
    PrintOptions,
    build_volume,
    overhang,
    printability_checks,
    wall_thickness,
)


def test_a_thin_walled_cup_fails_wall_thickness() -> None:
    check = wall_thickness(shapes.cup(wall=0.3))
    assert not check.passed and check.score < 0.5
    assert check.detail["percentile_thickness_mm"] == pytest.approx(0.3, abs=0.01)
    assert check.detail["min_thickness_mm"] == pytest.approx(0.3, abs=0.01)
    assert check.detail["thin_fraction"] > 0.9


@pytest.mark.parametrize("wall", [2.0, 0.8])
def test_a_cup_with_walls_thick_enough_passes(wall: float) -> None:
    check = wall_thickness(shapes.cup(wall=wall))
    assert check.passed and check.score == 1.0, check.detail
    assert check.detail["percentile_thickness_mm"] == pytest.approx(wall, rel=0.01)


def test_wall_thickness_is_deterministic() -> None:
    cup = shapes.cup(wall=1.2)
    assert wall_thickness(cup).detail == wall_thickness(cup.copy()).detail


def test_a_solid_block_is_thick_everywhere() -> None:
    check = wall_thickness(shapes.box(20, 20, 20))
    assert check.passed and check.detail["min_thickness_mm"] == check.detail["probe_mm"]


def test_a_mushroom_cap_fails_overhang_and_a_block_passes() -> None:
    mushroom = overhang(shapes.mushroom())
    assert not mushroom.passed and mushroom.detail["overhang_fraction"] > 0.3
    assert mushroom.score == pytest.approx(1 - mushroom.detail["overhang_fraction"])
    block = overhang(shapes.box(20, 20, 20))
    assert block.passed and block.score == 1.0  # its bottom lies on the plate


def test_small_horizontal_holes_and_45_degree_chamfers_print() -> None:
    bore = trimesh.creation.cylinder(radius=2.5, height=30, sections=32)
    bore.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, (1, 0, 0)))
    bore.apply_translation((10, 10, 10))
    block = trimesh.boolean.difference([shapes.box(20, 20, 20), bore], engine="manifold")
    holed = overhang(block)
    assert holed.passed and 0 < holed.detail["overhang_fraction"] < 0.05
    # An upside-down pyramid frustum with 45° sides: exactly at the limit, printable.
    corners = [(x, y) for x in (-1, 1) for y in (-1, 1)]
    points = [(x, y, 0) for x, y in corners] + [(11 * x, 11 * y, 10) for x, y in corners]
    frustum = trimesh.convex.convex_hull(
        np.array(points, dtype=float)
    )  # 10 mm wider on each side over 10 mm up
    assert overhang(frustum).passed
    assert not overhang(frustum, PrintOptions(max_overhang_deg=40)).passed


def test_build_volume() -> None:
    assert build_volume(shapes.box(200, 200, 240)).passed
    big = build_volume(shapes.box(240, 100, 100))
    assert not big.passed and big.score == pytest.approx(220 / 240)
    assert "does not fit" in big.detail["reason"]
    assert not build_volume(shapes.box(100, 100, 260)).passed  # Z stays up
    wide = PrintOptions(build_volume_mm=(300.0, 200.0, 200.0))
    turned = build_volume(shapes.box(150, 280, 50), wide)
    assert turned.passed and turned.detail["orientation"] == "turned 90° about Z"


def test_printability_checks_names() -> None:
    checks = printability_checks(shapes.box(20, 20, 20))
    assert set(checks) == {"overhang", "wall_thickness", "build_volume"}
    assert all(check.passed for check in checks.values())
