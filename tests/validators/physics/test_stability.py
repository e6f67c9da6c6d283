"""The drop test and its analytic reference: known answers, agreement, collision shapes."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.validators.physics import shapes
from validators.physics import PhysicsOptions, stability, stability_analytic
from validators.physics.options import MIN_SETTLE_S
from validators.physics.stability import PERTURB_END_S, REST_S, gravity_at

SUITE = shapes.stability_suite()


def test_an_upright_block_is_stable() -> None:
    check = stability([("block", shapes.box(20, 20, 20))])
    assert check.passed and check.score == 1.0
    assert check.detail["tilt_deg"] < 1 and check.detail["slide_mm"] < 0.1
    assert check.detail["pieces"] == {"block": 1}
    assert 1.0 <= check.detail["sim_time_s"] <= PhysicsOptions().settle_s


@pytest.mark.parametrize("name", ["post with heavy arm", "cone on its tip"])
def test_top_heavy_and_balanced_shapes_fall(name: str) -> None:
    check = stability([(name, SUITE[name][0])])
    assert not check.passed and check.score < 0.5
    assert check.detail["tilt_deg"] > 20
    assert check.detail["unstable_parts"][0]["name"] == name


@pytest.mark.parametrize("name", list(SUITE))
def test_the_drop_test_and_the_analytic_check_agree(name: str) -> None:
    mesh, stable = SUITE[name]
    dropped, analytic = stability([(name, mesh)]), stability_analytic([(name, mesh)])
    assert dropped.passed is stable, dropped.detail
    assert analytic.passed is stable, analytic.detail
    assert (dropped.score == 1.0) is stable and (analytic.score == 1.0) is stable


@pytest.mark.parametrize("scale", [0.05, 50.0])
def test_the_verdict_does_not_depend_on_scale(scale: float) -> None:
    for name in ("needle column", "tall thin block", "cone on its tip"):
        mesh, stable = SUITE[name]
        mesh = mesh.copy()
        mesh.apply_scale(scale)
        assert stability([(name, mesh)]).passed is stable, name


def test_mass_comes_from_the_real_volume_not_the_hull() -> None:
    hook = shapes.hook()
    assert hook.convex_hull.volume > 3 * hook.volume
    check = stability([("hook", hook)])
    assert check.passed
    assert check.detail["mass_g"] == pytest.approx(hook.volume * 1240e-6)


def test_stacked_cubes_stay_put() -> None:
    parts = [("low", shapes.box(20, 20, 20)), ("high", shapes.box(20, 20, 20, (0, 0, 20)))]
    check = stability(parts)
    assert check.passed, check.detail
    assert set(check.detail["pieces"]) == {"low", "high"}


def test_a_part_resting_in_a_concave_corner_needs_decomposition() -> None:
    # A cube sits on the foot of an L-bracket, against its upright leg. As a hull the bracket
    # would be solid there, and the cube would shove it over.
    scene = [("bracket", shapes.l_bracket()), ("cube", shapes.box(10, 10, 10, (20, 5, 5)))]
    auto = stability(scene)
    assert auto.passed, auto.detail
    assert auto.detail["collision"] == {"bracket": "coacd", "cube": "hull"}
    assert 2 <= auto.detail["pieces"]["bracket"] <= PhysicsOptions().max_pieces
    hulls = stability(scene, PhysicsOptions(decompose="never"))
    assert not hulls.passed


def test_a_lone_concave_part_uses_its_hull_unless_asked() -> None:
    bracket = [("bracket", shapes.l_bracket())]
    auto = stability(bracket)
    assert auto.detail["pieces"] == {"bracket": 1}
    assert auto.detail["collision"]["bracket"].startswith("hull (concave")
    always = stability(bracket, PhysicsOptions(decompose="always"))
    assert always.passed and always.detail["pieces"]["bracket"] >= 2


def test_decomposition_is_time_bounded() -> None:
    cup = shapes.cup(wall=1.5, radius=17.0)  # a cup takes coacd seconds; not cached elsewhere
    options = PhysicsOptions(decompose="always", decompose_timeout_s=0.05)
    started = time.perf_counter()
    check = stability([("cup", cup)], options)
    assert time.perf_counter() - started < 3
    assert check.passed
    assert check.detail["collision"]["cup"] == "hull (decomposition failed or timed out)"


def test_the_simulation_is_time_bounded() -> None:
    check = stability([("block", shapes.box(20, 20, 20))], PhysicsOptions(time_limit_s=1e-6))
    assert not check.passed and "time_limit_s" in check.detail["reason"]


def test_the_nudge_tilts_gravity_and_turns_it_once() -> None:
    g = 9810.0
    assert np.allclose(gravity_at(0.05, 0.1), [0, 0, -g])
    tilted = [gravity_at(t, np.radians(2)) for t in np.linspace(0.31, 1.09, 40)]
    angles = [np.degrees(np.arccos(-v[2] / g)) for v in tilted]
    assert np.allclose(angles, 2.0)
    directions = np.unwrap([np.arctan2(v[1], v[0]) for v in tilted])
    assert directions[-1] - directions[0] == pytest.approx(2 * np.pi * 0.78 / 0.8, rel=0.01)
    assert np.allclose(gravity_at(2.0, 0.1), [0, 0, -g])
    assert PERTURB_END_S + REST_S <= MIN_SETTLE_S  # the shortest run sees the nudge through


def test_a_scene_of_many_parts_is_checked_in_bounded_time() -> None:
    grid = [
        (f"c{i}", shapes.box(10, 10, 10, (12 * (i % 15), 12 * (i // 15), 0))) for i in range(150)
    ]
    started = time.perf_counter()
    check = stability(grid)
    assert time.perf_counter() - started < 15
    assert check.passed and len(check.detail["pieces"]) == 150


def test_an_unstable_simulation_leaves_no_log_file_in_the_working_directory(
    tmp_path, monkeypatch, caplog
) -> None:
    import logging

    import mujoco

    import validators.physics.stability  # noqa: F401  (installs the warning handler)

    monkeypatch.chdir(tmp_path)
    xml = '<mujoco><worldbody><body><freejoint/><geom size="1"/></body></worldbody></mujoco>'
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qvel[0] = float("nan")
    with caplog.at_level(logging.DEBUG, logger="validators.physics.stability"):
        mujoco.mj_step(model, data)
    assert data.warning[mujoco.mjtWarning.mjWARN_BADQVEL].number == 1  # still counted
    assert "unstable" in caplog.text
    assert list(tmp_path.iterdir()) == []
