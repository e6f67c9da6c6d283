"""What counts as a hole: round bores a person asked for, not shapes that merely look like a
piece of one. A program must not pass "four 5 mm holes" with four holes drilled into one another,
rounded pocket corners or an inside fillet."""

from __future__ import annotations

import pytest

from validators.cad.validate import validate_cad
from validators.sandbox import SandboxPool

PLATE = "import cadquery as cq\nplate = cq.Workplane('XY').box(100, 60, 8)\n"

CASES = {
    "four separate holes": (
        "result = plate.faces('>Z').workplane()"
        ".rect(80, 40, forConstruction=True).vertices().hole(5)",
        4,
    ),
    "four holes drilled into one another": (
        "result = plate.faces('>Z').workplane().polarArray(2, 0, 360, 4).hole(5)",
        0,
    ),
    "two holes that overlap": (
        "result = plate.faces('>Z').workplane().pushPoints([(0, 0), (4, 0)]).hole(6)",
        1,
    ),
    "a pocket with rounded corners": (
        "result = plate.faces('>Z').workplane().sketch().rect(60, 30).vertices().fillet(5)"
        ".finalize().cutBlind(-4)",
        0,
    ),
    "a slot": ("result = plate.faces('>Z').workplane().slot2D(30, 8).cutThruAll()", 0),
    "a counterbored hole": ("result = plate.faces('>Z').workplane().cboreHole(6, 10, 4)", 1),
    "an angle with an inside fillet": (
        "result = cq.Workplane('XZ').polyline([(0, 0), (60, 0), (60, 5), (5, 5), (5, 40),"
        " (0, 40)]).close().extrude(30).edges('|Y')"
        ".edges(cq.selectors.NearestToPointSelector((5, -15, 5))).fillet(4)",
        0,
    ),
    "two holes crossing at right angles": (
        "block = cq.Workplane('XY').box(30, 30, 30)\n"
        "result = block.cut(cq.Workplane('XY').cylinder(40, 4))"
        ".cut(cq.Workplane('YZ').cylinder(40, 4))",
        2,
    ),
    "a tube": ("result = cq.Workplane('XY').circle(10).circle(7).extrude(30)", 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_holes_are_round_bores_counted_once(pool: SandboxPool, name: str) -> None:
    body, holes = CASES[name]
    report = validate_cad(PLATE + body + "\n", pool)
    assert report.valid, report.checks
    assert report.metrics["holes"] == holes


def test_holes_drilled_into_one_another_do_not_meet_a_request_for_four(
    pool: SandboxPool,
) -> None:
    body, _ = CASES["four holes drilled into one another"]
    request = [{"what": "holes", "count": 4, "match": "at_least", "phrase": "four 5 mm holes"}]
    forged = validate_cad(PLATE + body + "\n", pool, request=request)
    assert not forged.checks["request"].passed
    honest, _ = CASES["four separate holes"]
    assert validate_cad(PLATE + honest + "\n", pool, request=request).checks["request"].passed


def test_each_hole_reports_the_diameters_of_its_bores(pool: SandboxPool) -> None:
    body, _ = CASES["a counterbored hole"]
    assert validate_cad(PLATE + body + "\n", pool).metrics["hole_diameters_mm"] == [[6.0, 10.0]]
    # Holes in the floor of a cup are holes of their own, not part of the cup's bore.
    cup = (
        "import cadquery as cq\n"
        "result = cq.Workplane('XY').circle(30).extrude(40).faces('>Z').shell(-2)"
        ".faces('<Z').workplane().polarArray(12, 0, 360, 3).hole(8.5)\n"
    )
    holes = validate_cad(cup, pool).metrics["hole_diameters_mm"]
    assert sorted(holes) == [[8.5], [8.5], [8.5], [56.0]]


def test_holes_of_the_wrong_size_do_not_meet_a_request_for_their_size(
    pool: SandboxPool,
) -> None:
    body, _ = CASES["four separate holes"]  # Ø5
    five = [{"what": "holes", "count": 4, "match": "at_least", "diameter_mm": 5.0}]
    eight = [{"what": "holes", "count": 4, "match": "at_least", "diameter_mm": 8.0}]
    bolt = [
        {"what": "holes", "count": 4, "match": "at_least", "diameter_mm": 4.0,
         "diameter_max_mm": 5.0}
    ]  # fmt: skip
    assert validate_cad(PLATE + body + "\n", pool, request=five).checks["request"].passed
    wrong = validate_cad(PLATE + body + "\n", pool, request=eight).checks["request"]
    assert not wrong.passed
    assert wrong.detail["summary"].startswith("0 holes of Ø8, asked 4")
    assert validate_cad(PLATE + body + "\n", pool, request=bolt).checks["request"].passed


@pytest.mark.parametrize(
    ("name", "through"),
    [
        ("four separate holes", 4),
        ("a counterbored hole", 1),
        ("a pocket with rounded corners", 0),
        ("a tube", 1),
    ],
)
def test_through_holes_are_the_ways_right_through(
    pool: SandboxPool, name: str, through: int
) -> None:
    body, _ = CASES[name]
    assert validate_cad(PLATE + body + "\n", pool).metrics["through_holes"] == through


def test_a_washer_must_have_a_bore(pool: SandboxPool) -> None:
    from genservice.generation.asked import asked_items

    request = asked_items("a washer 24 mm across, 2 thick")
    assert (request[-1]["what"], request[-1]["count"]) == ("bored", 1)
    head = "import cadquery as cq\nresult = cq.Workplane()"
    disc = head + ".circle(12).extrude(2)\n"
    ring = head + ".circle(12).circle(6).extrude(2)\n"
    split = head + ".circle(12).circle(6).extrude(2).cut(cq.Workplane().center(9, 0).rect(8, 2)"
    split += ".extrude(2))\n"
    assert validate_cad(ring, pool, request=request).checks["request"].passed
    assert validate_cad(split, pool, request=request).checks["request"].passed  # a split ring
    check = validate_cad(disc, pool, request=request).checks["request"]
    assert not check.passed
    assert "0 bores or ways through, asked 1" in check.detail["summary"]
    # "four through holes" asks four ways right through: blind holes are not.
    through = [{"what": "through_holes", "count": 4, "match": "at_least"}]
    body, _ = CASES["four separate holes"]
    assert validate_cad(PLATE + body + "\n", pool, request=through).checks["request"].passed
    blind = PLATE + "result = plate.faces('>Z').workplane().rect(80, 40, forConstruction=True)"
    blind += ".vertices().hole(5, 4)\n"
    assert not validate_cad(blind, pool, request=through).checks["request"].passed


def test_a_cup_must_be_hollow(pool: SandboxPool) -> None:
    from genservice.generation.asked import asked_items

    request = asked_items("a cup 80 tall, 60 across")
    assert request[-1] == {"what": "hollow", "match": "about", "phrase": "cup"}
    head = "import cadquery as cq\nresult = cq.Workplane().circle(30).extrude(80)"
    cup = validate_cad(head + ".faces('>Z').shell(-3)\n", pool, request=request)
    assert cup.checks["request"].passed and cup.metrics["fill"] < 0.3
    lump = validate_cad(head + "\n", pool, request=request)
    assert not lump.checks["request"].passed
    assert "not hollow (cup)" in lump.checks["request"].detail["summary"]
