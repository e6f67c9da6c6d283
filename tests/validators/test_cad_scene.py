"""Scenes (domain "scene"): physics expectations gate validity, end to end through the sandbox."""

from __future__ import annotations

import pytest

from validators.cad.validate import validate_cad
from validators.sandbox import SandboxPool

STACK = """import cadquery as cq
size = 20.0
base = cq.Workplane().box(size, size, size)
top = cq.Workplane().box(size, size, size).translate((0, 0, size))
result = cq.Assembly().add(base, name="base").add(top, name="top")
"""


def scene(source: str, pool: SandboxPool):  # type: ignore[no-untyped-def]
    return validate_cad(source, pool, domain="scene")


def test_stacked_cubes_are_a_sound_scene(pool: SandboxPool) -> None:
    report = scene(STACK, pool)
    assert report.valid, report.error
    for name in ("stability", "interference", "floating_parts", "support"):
        assert report.checks[name].passed, name


def test_a_hovering_box_fails_floating_parts(pool: SandboxPool) -> None:
    report = scene(STACK.replace("translate((0, 0, size))", "translate((0, 0, size + 15))"), pool)
    assert not report.valid
    assert not report.checks["floating_parts"].passed
    assert report.error is not None and "floating_parts" in report.error.message


def test_half_overlapping_boxes_fail_interference(pool: SandboxPool) -> None:
    report = scene(STACK.replace("translate((0, 0, size))", "translate((size / 2, 0, 0))"), pool)
    assert not report.valid
    assert not report.checks["interference"].passed


def test_a_part_that_topples_is_advisory_for_cad_but_gates_a_scene(pool: SandboxPool) -> None:
    arm = """import cadquery as cq
post = cq.Workplane().box(10, 10, 100).translate((0, 0, 50))
arm = cq.Workplane().box(120, 10, 10).translate((65, 0, 95))
result = post.union(arm)
"""
    as_part = validate_cad(arm, pool)
    assert as_part.valid and not as_part.checks["stability"].passed
    as_scene = scene(arm, pool)
    assert not as_scene.valid and not as_scene.checks["stability"].passed
    assert as_part.reward < 1.0


def test_unknown_domain_is_refused(pool: SandboxPool) -> None:
    with pytest.raises(ValueError, match="domain"):
        validate_cad(STACK, pool, domain="kitchen")


def test_a_sound_scene_of_the_wrong_count_is_sound_but_not_as_asked(pool: SandboxPool) -> None:
    # Two cubes where the spec asks three: the program ran and built sound objects (valid in
    # the literature's sense), and the spec says what is wrong with it.
    report = validate_cad(STACK, pool, domain="scene", spec={"solids": 3})
    assert not report.valid
    assert report.checks["solid"].passed
    assert not report.checks["spec"].passed
    assert report.checks["spec"].detail["items"]["solids"] == {
        "requested": 3, "measured": 2, "ok": False, "score": pytest.approx(2 / 3)
    }  # fmt: skip
    assert report.metrics["geometry_sound"]
    assert report.error is not None and "spec" in report.error.message
    asked_two = validate_cad(STACK, pool, domain="scene", spec={"solids": 2})
    assert 0.0 < report.reward < asked_two.reward
