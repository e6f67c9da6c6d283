"""The renderer: deterministic pictures, cameras that look where they say, clear errors."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import trimesh
from PIL import Image

from exporters.parts import PartMesh
from exporters.render import (
    RIG,
    STYLES,
    RenderError,
    Scene,
    View,
    compose,
    parts_from_mesh_file,
    png_bytes,
    render,
    shade,
    views_from_names,
)


def _part(mesh: trimesh.Trimesh, name: str = "part") -> PartMesh:
    return PartMesh(name, mesh.vertices.astype(np.float32), mesh.faces.astype(np.int32))


def _block(x: float = 40, y: float = 20, z: float = 10) -> PartMesh:
    return _part(trimesh.creation.box((x, y, z)))


def _extent(mask: np.ndarray) -> tuple[int, int]:
    """Width and height in pixels of a silhouette."""
    rows, cols = np.nonzero(mask)
    return int(cols.max() - cols.min() + 1), int(rows.max() - rows.min() + 1)


def test_the_same_mesh_gives_the_same_png_bytes() -> None:
    part = _block()
    first = png_bytes(render([part], size=96))
    second = png_bytes(render([_block()], size=96))
    assert first == second
    assert first[:8] == b"\x89PNG\r\n\x1a\n"


def test_each_named_view_sees_the_axes_it_should() -> None:
    scene = Scene([_block(40, 20, 10)])  # long in X, deep in Y, low in Z
    front = _extent(scene.cast(View.named("front"), 200).hit)  # sees X across, Z up
    top = _extent(scene.cast(View.named("top"), 200).hit)  # sees X across, Y up
    right = _extent(scene.cast(View.named("right"), 200).hit)  # sees Y across, Z up
    assert front[0] / front[1] == pytest.approx(4.0, rel=0.08)
    assert top[0] / top[1] == pytest.approx(2.0, rel=0.08)
    assert right[0] / right[1] == pytest.approx(2.0, rel=0.08)
    # One scale for every view of a picture: the 40 mm side is as wide in front and top.
    assert front[0] == pytest.approx(top[0], abs=1)


def test_orthographic_views_measure_in_proportion_to_the_bounding_sphere() -> None:
    part = _block(40, 20, 10)
    size = 200
    frame = Scene([part]).cast(View.named("front"), size)
    width, _ = _extent(frame.hit)
    radius = math.sqrt(20**2 + 10**2 + 5**2)
    expected = 40 / (2 * radius * 1.06) * size
    assert width == pytest.approx(expected, abs=2)


def test_normals_face_the_camera_and_depth_grows_away_from_it() -> None:
    frame = Scene([_block()]).cast(View.named("top"), 64)
    facing = frame.normals[frame.hit]
    assert np.allclose(facing[:, 2], 1.0, atol=1e-5)  # the top face looks straight at the eye
    iso = Scene([_block()]).cast(View.named("iso"), 64)
    assert (iso.normals[iso.hit][:, 2] > 0).all()
    assert np.isnan(iso.depth[~iso.hit]).all()
    assert (iso.depth[iso.hit] >= iso.near - 1e-6).all() and (iso.depth[iso.hit] <= iso.far).all()


def test_a_perspective_orbit_frames_the_whole_part() -> None:
    frame = Scene([_block()]).cast(View.orbit(30, 25), 128)
    rows, cols = np.nonzero(frame.hit)
    assert rows.min() > 0 and cols.min() > 0 and rows.max() < 127 and cols.max() < 127
    assert frame.hit.mean() > 0.1


def test_looking_straight_down_the_up_vector_still_has_a_basis() -> None:
    right, up, back = View((0.0, 0.0, 1.0), up=(0.0, 0.0, 1.0)).basis()
    assert abs(np.dot(right, up)) < 1e-9 and abs(np.dot(up, back)) < 1e-9
    assert np.allclose(np.cross(right, up), back)


@pytest.mark.parametrize("style", STYLES)
def test_every_style_draws_the_part_on_the_background(style: str) -> None:
    frame = Scene([_part(trimesh.creation.cylinder(10, 30))]).cast(View.named("iso"), 64)
    picture = shade(frame, style)
    assert picture.shape == (64, 64, 3) and picture.dtype == np.uint8
    background = picture[0, 0]
    assert (picture != background).any(axis=-1).sum() > 50


def test_the_rig_composes_four_views_in_a_grid() -> None:
    picture = render([_block()], size=50)
    assert len(RIG) == 4 and picture.shape == (102, 102, 3)
    assert compose([picture] * 3, columns=3).shape == (102, 310, 3)


def test_png_text_chunks_carry_provenance() -> None:
    data = png_bytes(render([_block()], size=32), {"genservice:provenance": "gs-1"})
    image = Image.open(io.BytesIO(data))
    assert image.mode == "RGB" and image.text["genservice:provenance"] == "gs-1"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: render([], size=64), "nothing to render"),
        (lambda: render([_block()], size=8), "size"),
        (lambda: render([_block()], style="cartoon"), "style"),
        (lambda: views_from_names(["sideways"]), "unknown view"),
        (
            lambda: render([PartMesh("flat", np.zeros((3, 3), np.float32), np.array([[0, 1, 2]]))]),
            "no extent",
        ),
    ],
)
def test_bad_arguments_say_what_is_wrong(call, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        call()


def test_a_glb_is_turned_back_to_z_up(tmp_path) -> None:
    from exporters.gltf import glb_bytes
    from exporters.provenance import GenerationRecord, make_provenance

    provenance = make_provenance("x = 1", {}, GenerationRecord.for_script(), "tall")
    path = tmp_path / "tall.glb"
    path.write_bytes(glb_bytes([_block(10, 10, 40)], "tall", provenance, "none"))
    parts = parts_from_mesh_file(path)
    front = _extent(Scene(parts).cast(View.named("front"), 100).hit)
    assert front[1] / front[0] == pytest.approx(4.0, rel=0.1)  # tall on screen, as in CAD


def test_a_file_that_is_not_a_mesh_is_refused(tmp_path) -> None:
    path = tmp_path / "junk.stl"
    path.write_bytes(b"not a mesh at all")
    with pytest.raises(RenderError):
        parts_from_mesh_file(path)
