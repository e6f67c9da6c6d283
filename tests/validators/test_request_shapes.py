"""What shape words ask, judged on the part's outline: a diameter is round, "a round lid" is
round and "a hex nut" a hexagon, seen along some axis; a square post or a round nut is not."""

from __future__ import annotations

import pytest

from genservice.generation.asked import asked_items
from validators.cad.validate import validate_cad
from validators.sandbox import SandboxPool


def test_a_diameter_asks_a_round_part(pool: SandboxPool) -> None:
    """ "70 mm in diameter" is a round outline of 70 mm, not a square post 70 mm wide; a bent
    tube's diameter is one extent, its other two larger."""
    request = asked_items("a pencil cup 70 mm in diameter and 100 mm tall")
    assert {"what": "diameter", "value_mm": 70.0}.items() <= request[0].items()
    head = "import cadquery as cq\nresult = cq.Workplane()"
    shell = ".faces('>Z').shell(-3)\n"
    cup = validate_cad(head + ".circle(35).extrude(100)" + shell, pool, request=request)
    assert cup.checks["request"].passed, cup.checks["request"].detail
    assert cup.metrics["outline_fill"][2] == pytest.approx(0.785, abs=0.02)
    square = validate_cad(head + ".rect(70, 70).extrude(100)" + shell, pool, request=request)
    check = square.checks["request"]
    assert not check.passed and "not round: seen along z it fills 100%" in check.detail["summary"]
    # A rod lying down is round seen along its own axis; an octagon is round enough.
    rod = asked_items("a shelf pin 6 mm in diameter and 20 mm long")
    lying = validate_cad(head + ".circle(3).extrude(20).rotate((0, 0, 0), (0, 1, 0), 90)\n",
                         pool, request=rod)  # fmt: skip
    assert lying.checks["request"].passed, lying.checks["request"].detail
    octagon = validate_cad(head + ".polygon(8, 6).extrude(20)\n", pool, request=rod)
    assert octagon.checks["request"].passed, octagon.checks["request"].detail
    bend = [{"what": "diameter", "value_mm": 20.0, "match": "about", "phrase": "20 mm OD"}]
    elbow = head + ".circle(10).circle(8).sweep(cq.Workplane('XZ').polyline([(0, 0), (0, 40)])"
    elbow += ".radiusArc((40, 80), -40))\n"
    bent = validate_cad(elbow, pool, request=bend)
    assert bent.checks["request"].passed, (bent.metrics["bbox_mm"], bent.checks["request"].detail)


def test_a_thing_called_round_is_round(pool: SandboxPool) -> None:
    request = asked_items("a round lid 85 mm across and 12 mm tall")
    assert request[-1] == {"what": "round", "match": "about", "phrase": "round lid"}
    head = "import cadquery as cq\nresult = cq.Workplane()"
    lid = validate_cad(head + ".circle(42.5).extrude(12)\n", pool, request=request)
    assert lid.checks["request"].passed, lid.checks["request"].detail
    square = validate_cad(head + ".rect(85, 85).extrude(12)\n", pool, request=request)
    check = square.checks["request"]
    assert not check.passed and "not round" in check.detail["summary"]
    # What is cut into the thing, its edges, or what sticks out of it are not the thing.
    for text in (
        "a block 60 x 40 x 20 with a round pocket",
        "a 50 mm cube with rounded edges",
        "a round plate 50 across with a mounting ear at each end sticking out 16 mm",
        "a round-ended strap 70 mm long, 38 wide, 4 thick",  # its ends are round, not it
    ):
        assert "round" not in [i["what"] for i in asked_items(text)], text


def test_a_hex_nut_is_a_hexagon(pool: SandboxPool) -> None:
    request = asked_items("a hex nut 13 mm across flats, 6.5 mm thick, 5 mm bore")
    assert {"what": "hexagonal", "match": "about", "phrase": "hex nut"} in request
    head = "import cadquery as cq\nresult = cq.Workplane()"
    bore = ".faces('>Z').workplane().hole(5)\n"
    hexagon = head + ".polygon(6, 13 / 0.8660254).extrude(6.5).edges('>Z or <Z').chamfer(0.5)"
    nut = validate_cad(hexagon + bore, pool, request=request)
    assert nut.checks["request"].passed, nut.checks["request"].detail
    assert nut.metrics["outline_sides"][2] == 6
    disc = validate_cad(head + ".circle(6.5).extrude(6.5)" + bore, pool, request=request)
    check = disc.checks["request"]
    assert not check.passed and "not hexagonal" in check.detail["summary"]
    assert disc.metrics["outline_sides"][2] == 0
    square = validate_cad(head + ".rect(13, 13).extrude(6.5)" + bore, pool, request=request)
    assert square.metrics["outline_sides"][2] == 4 and not square.checks["request"].passed
    # A hex key is bent: it asks no hexagon.
    assert "hexagonal" not in [i["what"] for i in asked_items("a hex key 4 mm, 60 mm long")]


def test_a_rectangular_tab_is_a_rectangle_and_a_square_tile_a_square(pool: SandboxPool) -> None:
    request = asked_items("a 5 mm thick rectangular tab 40 by 25 with two 4 mm holes")
    assert {"what": "rectangular", "match": "about", "phrase": "rectangular tab"} in request
    head = "import cadquery as cq\nresult = cq.Workplane()"
    holes = ".faces('>Z').workplane().rarray(20, 1, 2, 1).hole(4)\n"
    tab = head + ".rect(40, 25).extrude(5).edges('|Z').fillet(2.5)" + holes
    assert validate_cad(tab, pool, request=request).checks["request"].passed
    # A disc, or a strap with round ends, of those sizes is not a rectangular tab.
    for wrong in (".circle(20).extrude(5)", ".slot2D(40, 25).extrude(5)"):
        check = validate_cad(head + wrong + holes, pool, request=request).checks["request"]
        assert not check.passed and "not rectangular" in check.detail["summary"], wrong
    # Seen along its length a bar is rectangular or round: a rod is no rectangular bar.
    bar = asked_items("a rectangular bar 200 long")
    flat_bar = validate_cad(head + ".rect(20, 10).extrude(200)\n", pool, request=bar)
    assert flat_bar.checks["request"].passed
    rod = validate_cad(head + ".circle(8).extrude(200)\n", pool, request=bar)
    assert not rod.checks["request"].passed
    tile = asked_items("a square tile 8 mm thick")
    square = validate_cad(head + ".rect(60, 60).extrude(8)\n", pool, request=tile)
    assert square.checks["request"].passed
    oblong = validate_cad(head + ".rect(60, 30).extrude(8)\n", pool, request=tile)
    assert "not square" in oblong.checks["request"].detail["summary"]
    # A shape word of a feature or of what is in it asks nothing of the whole.
    for text in ("a plate 80 x 60 with a square pocket", "a block with four square legs"):
        assert not {"rectangular", "square"} & {i["what"] for i in asked_items(text)}, text
