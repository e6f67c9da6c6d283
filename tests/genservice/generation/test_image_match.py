"""image_match: candidates compared with the request's picture, never with a reference shape."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from PIL import Image

from exporters.parts import PartMesh
from exporters.render import Scene, View, render, shade
from genservice.generation.image_match import (
    PASS,
    Pictures,
    Target,
    as_target,
    foreground,
    image_match,
)
from genservice.generation.rerank import match_score, rerank, valid_but_the_picture
from validators.cad.request import missed_only_the_request, what_is_off


def _parts(mesh: trimesh.Trimesh) -> list[PartMesh]:
    return [PartMesh("p", mesh.vertices.astype(np.float32), mesh.faces.astype(np.int32))]


PLATE = _parts(trimesh.creation.box((60, 30, 6)).difference(trimesh.creation.cylinder(5, 20)))
DISC = _parts(trimesh.creation.cylinder(20, 10))
POST = _parts(trimesh.creation.box((10, 10, 60)))


@pytest.mark.parametrize(
    "picture",
    [
        render(PLATE, [View.orbit(40, 30, True, 35)], 200),  # a photo from somewhere
        render(PLATE, [View.orbit(200, 50, True, 30)], 160, "lines"),  # a sketch from behind
        render(PLATE, size=96),  # the four-view rig
    ],
)
def test_the_shape_in_the_picture_scores_highest(picture: np.ndarray) -> None:
    target = Target(Image.fromarray(picture))
    scores = {name: image_match(target, parts)[0] for name, parts in
              {"plate": PLATE, "disc": DISC, "post": POST}.items()}  # fmt: skip
    assert scores["plate"] >= PASS
    assert scores["plate"] > scores["disc"] + 0.1 and scores["plate"] > scores["post"] + 0.2


def test_size_and_distance_do_not_matter_only_shape() -> None:
    small = Target(Image.fromarray(render(PLATE, [View.orbit(30, 35, True)], 120)))
    bigger = _parts(
        trimesh.creation.box((600, 300, 60)).difference(trimesh.creation.cylinder(50, 200))
    )
    assert image_match(small, bigger)[0] == pytest.approx(image_match(small, PLATE)[0], abs=0.03)


def test_a_blank_picture_matches_nothing_and_says_why() -> None:
    blank = Target(Image.new("RGB", (64, 64), (255, 255, 255)))
    score, detail = image_match(blank, PLATE)
    assert score == 0.0 and "background" in detail["reason"]


BOX = "import cadquery as cq\nresult = cq.Workplane('XY').box({x}, {y}, {z})\n"


def test_a_sound_part_unlike_the_picture_is_not_as_asked_and_ranks_below(pool) -> None:
    picture = Image.fromarray(render(POST, [View.orbit(30, 30, True)], 160))
    programs = [BOX.format(x=60, y=30, z=6), BOX.format(x=10, y=10, z=60), "result = ("]
    ranked = rerank(programs, "cad", pool, picture=picture)
    assert [s.index for s in ranked][:2] == [1, 0]  # the post looks like the picture
    best = ranked[0].report
    assert best.valid and best.checks["image_match"].passed
    plate = ranked[1].report
    assert match_score(plate) < match_score(best)
    # The plate is sound, but not what the picture asked: never VALID, and it says why.
    assert not plate.checks["image_match"].passed and not plate.valid
    assert missed_only_the_request(plate) and valid_but_the_picture(plate)
    assert "does not look like the picture" in what_is_off(plate)
    assert plate.error is not None and "image_match" in plate.error.message
    unpictured = rerank(programs[:1], "cad", pool)[0].report
    assert unpictured.valid and "image_match" not in unpictured.checks
    assert plate.reward == unpictured.reward  # the reward is the checks' as ever
    broken = ranked[2].report
    assert "image_match" not in broken.checks and not valid_but_the_picture(broken)


@pytest.mark.parametrize("azimuth, elevation", [(47.0, 23.0), (-118.0, 64.0), (161.0, 8.0)])
def test_a_picture_from_any_angle_finds_its_viewpoint(azimuth: float, elevation: float) -> None:
    """Between the coarse viewpoints (30 degrees apart) the finer search finds the angle, so the
    right part scores high wherever the picture was taken from, and a wrong one stays low."""
    picture = render(PLATE, [View.orbit(azimuth, elevation, False)], 160)
    target = Target(Image.fromarray(picture))
    score, detail = image_match(target, PLATE)
    assert score >= 0.9, detail
    assert image_match(target, DISC)[0] < PASS and image_match(target, POST)[0] < PASS


def _holed_plate(x: float, y: float, z: float) -> list[PartMesh]:
    return _parts(trimesh.creation.box((x, y, z)).difference(trimesh.creation.cylinder(5, 100)))


def test_a_camera_held_where_the_part_was_seen_tells_a_deeper_part_apart() -> None:
    """One photograph is taken from one place: seen from anywhere, a plate half as wide again
    along the line of sight passes for the pictured one seen from a little higher; seen from
    near the camera the right part was matched from (as a fit scores its trials), it does not.
    The right part scores the same either way."""
    picture = render(_holed_plate(60, 30, 6), [View.orbit(40, 30, True, 35)], 160)
    target = Target(Image.fromarray(picture))
    right, found = image_match(target, _holed_plate(60, 30, 6))
    held = target.seen_from(found["pose"])
    assert image_match(held, _holed_plate(60, 30, 6))[0] == right >= 0.9
    deeper_anywhere, deeper_held = (image_match(t, _holed_plate(60, 45, 6))[0]
                                    for t in (target, held))  # fmt: skip
    assert deeper_held < deeper_anywhere - 0.05
    assert right - deeper_held > 0.2
    assert target.seen_from(None).held is None  # None: from anywhere again


def test_a_second_picture_shows_the_depth_an_edge_on_one_leaves_open() -> None:
    """Edge-on, a plate of any width along the line of sight matches; with a second picture
    of the part from another side (each matched from its own camera), only the right one
    matches both, and the detail says how each picture was matched."""
    right = _holed_plate(60, 30, 6)
    edge = Image.fromarray(render(right, [View.orbit(0, 0, True, 35)], 160))
    side = Image.fromarray(render(right, [View.orbit(130, 40, True, 35)], 160))
    one, both = as_target([edge]), as_target([edge, side])
    assert isinstance(one, Target) and isinstance(both, Pictures)
    deeper = _holed_plate(60, 60, 6)
    assert image_match(one, deeper)[0] == pytest.approx(image_match(one, right)[0], abs=0.01)
    score, detail = image_match(both, right)
    assert score >= 0.9 and detail["pictures"] == 2 and len(detail["pose"]) == 2
    assert score - image_match(both, deeper)[0] > 0.1
    held = both.seen_from(detail["pose"])  # a fit holds each picture's camera
    assert image_match(held, right)[0] == pytest.approx(score, abs=0.01)
    with pytest.raises(ValueError, match="2 pictures, 1 cameras"):
        both.seen_from([detail["pose"][0]])


DOME = _parts(trimesh.creation.icosphere(subdivisions=4, radius=20))


def test_shading_tells_parts_alike_in_outline_apart() -> None:
    """A ball and a disc seen end-on are the same circle with no edges inside; only the shading
    of the picture (light falling off round the ball) says which it is."""
    picture = render(DOME, [View.orbit(30, 40, True)], 160)
    target = Target(Image.fromarray(picture))
    assert target.whole is not None and target.whole[3] is not None  # it shows shading
    ball, ball_detail = image_match(target, DOME)
    disc, disc_detail = image_match(target, DISC)
    assert ball_detail["shading"] >= 0.9, ball_detail
    assert disc_detail["shading"] <= 0.7, disc_detail
    assert ball >= PASS and ball > disc + 0.1


@pytest.mark.parametrize("style", ["shaded", "normals", "depth"])
def test_any_light_or_shading_style_is_explained_by_the_right_part(style: str) -> None:
    """The fit is linear in the normals and depth, so a light from anywhere, a normal map and a
    depth map are all explained by the right part at the right viewpoint."""
    target = Target(Image.fromarray(render(PLATE, [View.orbit(-60, 35, True)], 160, style)))
    score, detail = image_match(target, PLATE)
    assert detail["shading"] >= 0.8 and score >= 0.85, detail
    # A post turns its faces elsewhere: however it is lit, it explains far less of the picture.
    assert image_match(target, POST)[1]["shading"] < detail["shading"] - 0.3


@pytest.mark.parametrize("style", ["silhouette", "lines"])
def test_a_picture_without_shading_is_judged_by_its_outline_alone(style: str) -> None:
    picture = render(PLATE, [View.orbit(40, 30, True)], 160, style)
    target = Target(Image.fromarray(picture))
    assert target.whole is not None and target.whole[3] is None
    score, detail = image_match(target, PLATE)
    assert "shading" not in detail
    assert score == pytest.approx(0.6 * detail["silhouette_iou"] + 0.4 * detail["outline_f1"],
                                  abs=1e-3)  # fmt: skip


STEPPED = _parts(
    trimesh.creation.box((60, 30, 10)).union(
        trimesh.creation.box(
            (20, 30, 30), transform=trimesh.transformations.translation_matrix((-20, 0, 10))
        )
    )
)


@pytest.mark.parametrize("fov", [25.0, 50.0])
def test_a_picture_through_any_lens_is_matched_through_a_lens_like_it(fov: float) -> None:
    """A telephoto picture flattens a part and a wide one stretches its near end; the finer
    search tries other lenses, so the right part still matches closely. A wide lens distorts
    most: that picture is matched through a wide lens."""
    picture = render(STEPPED, [View.orbit(30, 40, True, fov)], 160)
    score, detail = image_match(Target(Image.fromarray(picture)), STEPPED)
    assert score >= 0.9, detail
    if fov > 35.0:
        assert detail["lens_deg"] > 35.0, detail


def test_a_depth_map_shows_no_creases_and_none_are_asked_of_the_right_part() -> None:
    """A depth map shows where depth steps, not where faces meet at a crease: the right part's
    edges are read the way the picture shows them, so its outline agrees closely."""
    picture = render(STEPPED, [View.orbit(-50, 30, True)], 160, "depth")
    score, detail = image_match(Target(Image.fromarray(picture)), STEPPED)
    assert detail["outline_f1"] >= 0.9 and score >= 0.9, detail


def test_a_part_as_pale_as_a_clean_background_is_still_told_from_it() -> None:
    """A depth map's nearest face is near white: on a flat white background it is the part,
    not background, so the ball keeps its whole silhouette."""
    frame = Scene(DOME).cast(View.orbit(30, 40, True), 160)
    found = foreground(shade(frame, "depth", background=(255, 255, 255)))
    assert np.count_nonzero(found & frame.hit) / np.count_nonzero(found | frame.hit) >= 0.99


def test_a_noisy_background_is_not_taken_for_the_part() -> None:
    """A photograph's background is never flat: the bar is set above the border's own noise."""
    rng = np.random.default_rng(0)
    picture = render(STEPPED, [View.orbit(-50, 30, True)], 160).astype(np.float64)
    truth = render(STEPPED, [View.orbit(-50, 30, True)], 160, "silhouette").mean(axis=-1) < 128
    noisy = np.clip(picture + rng.normal(0, 6, picture.shape), 0, 255).astype(np.uint8)
    found = foreground(noisy)
    assert np.count_nonzero(found & ~truth) / np.count_nonzero(~truth) < 0.01
    assert np.count_nonzero(found & truth) / np.count_nonzero(truth) >= 0.95
