"""IoU and Chamfer distance: the fast paths agree with their slow references and with geometry."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from validators.cad import similarity

CYLINDER_SECTIONS = 32


def _box(
    x: float, y: float, z: float, at: tuple[float, float, float] = (0, 0, 0)
) -> trimesh.Trimesh:
    mesh = trimesh.creation.box(extents=(x, y, z))
    mesh.apply_translation(at)
    return mesh


def _cylinder(radius: float, height: float) -> trimesh.Trimesh:
    return trimesh.creation.cylinder(radius=radius, height=height, sections=CYLINDER_SECTIONS)


def _prism_in_square(sections: int) -> float:
    """Area of a regular n-gon inscribed in a circle of diameter 1, over the unit square's."""
    return sections / 8 * math.sin(2 * math.pi / sections)


# (a, b, IoU after each is centred on its bbox and scaled to a largest extent of 1)
PAIRS = {
    "identical box": (_box(2, 2, 2), _box(2, 2, 2), 1.0),
    "box vs shifted box": (_box(2, 2, 2), _box(2, 2, 2, at=(10, -3, 7)), 1.0),
    # 2x2x1 becomes 1 x 1 x 0.5 inside the unit cube: half of it.
    "box vs shifted flat box": (_box(2, 2, 2), _box(2, 2, 1, at=(5, 5, 5)), 0.5),
    # 4x2x2 becomes 1 x 0.5 x 0.5: a quarter of the unit cube.
    "box vs long box": (_box(2, 2, 2), _box(4, 2, 2, at=(-1, 2, 0)), 0.25),
    # The cylinder (diameter = height) becomes a prism inscribed in the unit cube.
    "box vs cylinder": (_box(2, 2, 2), _cylinder(1, 2), _prism_in_square(CYLINDER_SECTIONS)),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_iou_matches_the_analytic_value(name: str) -> None:
    a, b, expected = PAIRS[name]
    assert similarity.iou(a, b) == pytest.approx(expected, abs=1e-6)
    assert similarity.iou(b, a) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("name", list(PAIRS))
def test_iou_agrees_with_the_sampling_reference(name: str) -> None:
    a, b, _ = PAIRS[name]
    assert similarity.iou(a, b) == pytest.approx(
        similarity.iou_by_sampling(a, b, samples=20_000), abs=0.02
    )


def test_a_scaled_and_moved_copy_has_iou_one() -> None:
    shape = _cylinder(3, 10)
    copy = shape.copy()
    copy.apply_scale(3.7)
    copy.apply_translation((40, -12, 5))
    assert similarity.iou(shape, copy) == pytest.approx(1.0, abs=1e-6)


def test_normalise_centres_and_scales_to_unit_extent() -> None:
    out = similarity.normalise(_box(10, 4, 2, at=(100, 50, -20)))
    np.testing.assert_allclose(out.bounds, [[-0.5, -0.2, -0.1], [0.5, 0.2, 0.1]], atol=1e-12)


def test_normalise_rejects_a_shape_without_extent() -> None:
    point = trimesh.Trimesh(vertices=np.zeros((3, 3)), faces=[[0, 1, 2]], process=False)
    with pytest.raises(ValueError):
        similarity.normalise(point)


def test_iou_rejects_a_mesh_that_is_not_closed() -> None:
    closed = _box(2, 2, 2)
    open_box = closed.copy()
    open_box.update_faces(np.arange(1, len(closed.faces)))  # drop one triangle
    assert not open_box.is_watertight
    with pytest.raises(ValueError, match="closed"):
        similarity.iou(open_box, closed)
    with pytest.raises(ValueError, match="closed"):
        similarity.iou(closed, open_box)


@pytest.mark.parametrize(("count_a", "count_b", "seed"), [(1, 1, 0), (50, 400, 1), (600, 250, 2)])
def test_chamfer_of_points_equals_brute_force(count_a: int, count_b: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pa = rng.normal(size=(count_a, 3))
    pb = rng.normal(loc=0.3, size=(count_b, 3))
    fast = similarity.chamfer_of_points(pa, pb)
    assert fast > 0
    assert fast == pytest.approx(similarity.chamfer_brute_force(pa, pb), rel=1e-9)


def test_chamfer_of_a_point_set_with_itself_is_zero() -> None:
    points = np.random.default_rng(3).uniform(size=(300, 3))
    assert similarity.chamfer_of_points(points, points) == 0.0


def test_chamfer_of_identical_meshes_is_near_zero_and_below_a_different_shape() -> None:
    cylinder = _cylinder(1, 2)
    same = similarity.chamfer(cylinder, cylinder)
    different = similarity.chamfer(cylinder, _box(2, 2, 2))
    assert 0 <= same < 1e-3
    assert different > 5 * same


def test_chamfer_is_invariant_to_scale_and_position() -> None:
    cylinder = _cylinder(1, 2)
    copy = cylinder.copy()
    copy.apply_scale(25.0)
    copy.apply_translation((5, 6, 7))
    assert similarity.chamfer(cylinder, copy) == pytest.approx(
        similarity.chamfer(cylinder, cylinder), rel=1e-6
    )


def _corner(a: float, b: float, c: float, sign: float = 1.0) -> trimesh.Trimesh:
    """Three arms from one corner along x (a long, mirrored by `sign`), y (b) and z (c): a
    chiral shape, so its mirror image is no rotation of it."""
    arms = [
        _box(a, 1, 1, at=(sign * a / 2, 0.5, 0.5)),
        _box(1, b, 1, at=(sign * 0.5, b / 2, 0.5)),
        _box(1, 1, c, at=(sign * 0.5, 0.5, c / 2)),
    ]
    return trimesh.boolean.union(arms, engine="manifold")


def test_there_are_24_axis_rotations_and_no_mirrors() -> None:
    """Signed permutations of determinant +1: the cube's rotation group."""
    turns = similarity.AXIS_ROTATIONS
    assert len(turns) == 24
    assert all(abs(np.linalg.det(t) - 1) < 1e-9 for t in turns)
    assert len({t.tobytes() for t in turns}) == 24


def test_aligned_finds_a_turned_copy_and_plain_iou_does_not() -> None:
    """A copy turned a quarter about y (and moved, scaled) scores 1 aligned, much less as
    modelled; the turn found maps it back."""
    shape = _corner(6, 4, 2)
    turned = shape.copy()
    turned.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, (0, 1, 0)))
    turned.apply_scale(3.0)
    turned.apply_translation((5, -2, 9))
    assert similarity.iou(shape, turned) < 0.6
    value, chamfer = similarity.aligned(turned, shape)
    assert value == pytest.approx(1.0, abs=1e-6)
    assert chamfer < 1e-3


def test_aligned_never_mirrors() -> None:
    """A mirror image of a chiral shape is no rotation of it: aligned IoU stays below 1."""
    shape, mirrored = _corner(6, 4, 2), _corner(6, 4, 2, sign=-1.0)
    assert similarity.iou(shape, shape) == pytest.approx(1.0)
    value, _ = similarity.aligned(mirrored, shape)
    assert value < 0.9
