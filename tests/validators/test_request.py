"""The `request` check: what a request's words asked, against what was measured of the part."""

from __future__ import annotations

import pytest

from validators.cad.request import (
    check_request,
    missed_only_the_request,
    request_check,
    size_targets,
    sizes_off,
)
from validators.cad.validate import CadOptions, validate_cad
from validators.report import Report
from validators.reward import load_weights

GEOMETRY = CadOptions(printability=False, physics=False)
TALL = [{"what": "height", "value_mm": 40.0, "match": "about", "phrase": "40 mm tall"}]
# The journey's wrong answer to "a part 40 mm tall": a flat ring, 4 mm thick.
RING = (
    "import cadquery as cq\nouter_d = 40.0\ninner_d = 30.0\nthickness = 4.0\n"
    "result = cq.Workplane().circle(outer_d / 2).circle(inner_d / 2).extrude(thickness)\n"
)
TALL_PART = (
    "import cadquery as cq\nheight = 40.0\nresult = cq.Workplane().circle(10).extrude(height)\n"
)


def metrics(x: float, y: float, z: float, holes: int = 0, solids: int = 1) -> dict:
    return {"bbox_mm": [x, y, z], "holes": holes, "solids": solids}


def size(what: str, value: float, match: str = "about") -> dict:
    return {"what": what, "value_mm": value, "match": match, "phrase": f"{what} {value}"}


def test_a_height_is_z_and_the_detail_says_which_number_is_off() -> None:
    check = request_check(TALL, metrics(40, 40, 4))
    assert check is not None and not check.passed
    assert check.detail["summary"] == "height 4 mm, asked 40 mm"
    (item,) = check.detail["items"]
    assert item["measured"] == 4 and item["asked"] == 40 and not item["ok"]
    assert check.score == pytest.approx(0.1)
    assert request_check(TALL, metrics(20, 20, 40.5)).passed  # within the tolerance
    assert request_check([], metrics(1, 1, 1)) is None  # nothing asked: no check


def test_lengths_and_widths_take_any_extent_but_each_its_own() -> None:
    assert request_check([size("length", 80)], metrics(10, 80, 5)).passed
    both = [size("length", 80), size("width", 80)]
    assert request_check(both, metrics(80, 80, 5)).passed
    bar = request_check(both, metrics(80, 10, 10))
    assert bar is not None and not bar.passed
    assert "no extent of 80 × 10 × 10 mm left for 80 mm" in bar.detail["summary"]


def test_diameters_thicknesses_boxes_and_lower_bounds() -> None:
    assert request_check([size("diameter", 60)], metrics(60, 60, 8)).passed
    assert request_check([size("diameter", 16)], metrics(43, 16, 43)).passed  # a bent tube
    assert not request_check([size("diameter", 60)], metrics(60, 20, 8)).passed
    assert request_check([size("thickness", 8)], metrics(60, 60, 8)).passed
    assert request_check([size("thickness", 25)], metrics(14, 14, 25)).passed  # a sleeve's z
    assert not request_check([size("thickness", 8)], metrics(60, 60, 4)).passed
    # A bracket 8 mm thick is at least 8 mm thick in z, whatever else sticks out.
    assert request_check([size("thickness", 8, "at_least")], metrics(55, 29, 70)).passed
    assert not request_check([size("height", 40, "at_least")], metrics(40, 40, 4)).passed
    box = {"what": "box", "values_mm": [80.0, 71.0, 4.0], "match": "about", "phrase": "80 × 71 × 4"}
    assert request_check([box], metrics(4, 80, 71)).passed  # in any order
    wrong = request_check([box], metrics(80, 71, 6))
    assert (
        wrong is not None and wrong.detail["summary"] == "size 80 × 71 × 6 mm, asked 80 × 71 × 4 mm"
    )


def test_counts_are_lower_bounds() -> None:
    holes = [{"what": "holes", "count": 6, "match": "at_least", "phrase": "six M5 bolt holes"}]
    assert request_check(holes, metrics(60, 60, 8, holes=7)).passed  # six and the bore
    short = request_check(holes, metrics(60, 60, 8, holes=3))
    assert short is not None and short.detail["summary"] == "3 holes, asked 6 (six M5 bolt holes)"
    blocks = [{"what": "objects", "count": 7, "match": "at_least", "phrase": "seven blocks"}]
    assert not request_check(blocks, metrics(50, 50, 70, solids=5)).passed


def test_malformed_items_are_refused_with_what_to_fix() -> None:
    with pytest.raises(ValueError, match="'what' must be one of"):
        check_request([{"what": "colour", "value_mm": 1}])
    with pytest.raises(ValueError, match="value_mm must be a positive number"):
        check_request([{"what": "height", "value_mm": -4}])
    with pytest.raises(ValueError, match="a box needs values_mm"):
        check_request([{"what": "box", "values_mm": [1]}])
    with pytest.raises(ValueError, match="'match' must be one of"):
        check_request([{"what": "height", "value_mm": 4, "match": "roughly"}])


def test_a_sound_ring_for_a_tall_part_is_never_valid(pool) -> None:
    report = validate_cad(RING, pool, request=TALL, options=GEOMETRY)
    assert not report.valid and report.error is not None
    assert report.error.kind == "check_failed"
    assert report.error.message == (
        "failed checks: request; not as asked: height 4 mm, asked 40 mm"
    )
    assert report.metrics["geometry_sound"] and missed_only_the_request(report)
    assert all(report.checks[name].passed for name in ("solid", "brep_valid", "watertight"))
    honest = validate_cad(TALL_PART, pool, request=TALL, options=GEOMETRY)
    assert honest.valid and honest.checks["request"].passed
    assert honest.checks["request"].detail["summary"] == "as asked"
    assert honest.reward > report.reward > 0  # the ring keeps a geometric reward, for ranking
    plain = validate_cad(RING, pool, options=GEOMETRY)  # nothing asked: no request check
    assert plain.valid and "request" not in plain.checks and plain.metrics["geometry_sound"]


def test_a_broken_part_is_not_sound_and_not_merely_not_as_asked(pool) -> None:
    leaky = "import cadquery as cq\nresult = cq.Workplane().rect(10, 10)\n"  # a sketch, no solid
    report = validate_cad(leaky, pool, request=TALL, options=GEOMETRY)
    assert not report.valid and not missed_only_the_request(report)


def test_the_request_weighs_in_the_reward_of_cad_and_scenes() -> None:
    domains = load_weights()["domains"]
    assert domains["cad"]["request"] == domains["cad"]["spec"] > 0
    assert domains["scene"]["request"] > 0 and "request" not in domains["code"]


def test_the_largest_size_is_the_largest_extent_and_says_how_far_off_it_is() -> None:
    item = size("largest", 120)
    assert request_check([item], metrics(30, 118, 40)).passed  # within 5 %, on any axis
    small = request_check([item], metrics(30, 60, 40))
    assert small is not None and not small.passed
    assert small.detail["summary"] == "largest 60 mm, asked 120 mm"
    assert not request_check([item], metrics(30, 160, 40)).passed  # too big is off too
    assert check_request([item]) == [item]
    # What the size fit reads: the factor that brings the largest extent to what was asked.
    report = Report.build(False, 0.0, {"request": small}, None, {}, {})
    assert sizes_off(report) == (2.0,)


def test_each_stated_size_is_a_target_along_the_axis_it_was_judged_on() -> None:
    """What a solved size fit aims at: a box's sizes by the order of the extents (any
    orientation), a height on z, a free size on the extent it was measured on."""
    box = {"what": "box", "values_mm": [100.0, 20.0, 100.0], "match": "about", "phrase": "box"}
    check = request_check([box], metrics(85, 24, 85))
    report = Report.build(False, 0.0, {"request": check}, None, {}, {})
    assert size_targets(report) == {0: 100.0, 2: 100.0, 1: 20.0}
    check = request_check([size("height", 40), size("length", 90)], metrics(80, 10, 4))
    report = Report.build(False, 0.0, {"request": check}, None, {}, {})
    assert size_targets(report) == {2: 40.0, 0: 90.0}
    at_least = request_check([size("height", 40, "at_least")], metrics(80, 10, 4))
    assert size_targets(Report.build(False, 0.0, {"request": at_least}, None, {}, {})) == {}
    assert size_targets(Report.build(False, 0.0, {}, None, {}, {})) == {}  # nothing asked
