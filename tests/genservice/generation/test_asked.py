"""What a request asks in its own words (asked.py), and that a served part is judged by it:
the journey's "a part 40 mm tall" answered by a flat ring is never VALID, and best-of-N picks
the part that matches when there is one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genservice.generation.asked import asked_items, task_items
from genservice.generation.engine import GenerationRequest, Sampled, rank_programs
from genservice.generation.rerank import rerank
from training.corpus.build import build_corpus
from validators.cad.request import COUNTS, SHAPES, missed_only_the_request, request_check
from validators.cad.validate import CadOptions, validate_cad

EVAL = Path(__file__).resolve().parents[3] / "eval"
RING = (
    "import cadquery as cq\nouter_d = 40.0\ninner_d = 30.0\nthickness = 4.0\n"
    "result = cq.Workplane().circle(outer_d / 2).circle(inner_d / 2).extrude(thickness)\n"
)
TALL_PART = (
    "import cadquery as cq\nheight = 40.0\nresult = cq.Workplane().circle(10).extrude(height)\n"
)
FLANGE = "a 60 mm flange with six M5 bolt holes, 8 mm thick"


def asked(text: str, domain: str = "cad", edit: bool = False) -> list[tuple]:
    """The items as (what, size or count, match), for short assertions."""
    return [
        (i["what"], i.get("value_mm", i.get("values_mm", i.get("count"))), i["match"])
        for i in asked_items(text, domain, edit)
    ]


def test_the_journey_part_40_mm_tall_asks_its_height() -> None:
    assert asked_items("a part 40 mm tall") == [
        {"what": "height", "value_mm": 40.0, "match": "about", "phrase": "40 mm tall"}
    ]
    assert asked(FLANGE) == [("thickness", 8.0, "about"), ("holes", 6, "at_least")]


def test_ambiguous_words_and_sizes_of_features_ask_nothing() -> None:
    assert asked("make something nice about 40 or so") == []
    assert asked("a bracket with an 8 mm fillet and M5 holes on a bolt circle 50") == []
    assert asked("a 60 mm flange") == []  # which size? its diameter, most likely: not certain
    assert asked("a plate with a 25 mm tall boss") == []  # the boss's height
    assert asked("a wall bracket: the wall leg is 60 tall, the shelf leg 13 cm long") == []
    assert asked("Flange: Ø130 outside, 12 M6 holes, 5 holes (2 per side)")[1:] == [
        ("holes", 12, "at_least")  # "5 holes" may be five millimetre holes: not counted
    ]
    assert asked("a 5 mm hole, 5 mm deep, in a block") == []  # the hole's depth, maybe


def test_units_diameters_and_counts() -> None:
    assert asked("a 6 cm tall vase") == [("height", 60.0, "about"), ("hollow", None, "about")]
    assert asked("Plain washer OD 24 ID 12.5 thk 2.5") == [
        ("diameter", 24.0, "about"),
        ("thickness", 2.5, "about"),
        ("bored", 1, "at_least"),  # a washer has a bore
    ]
    assert asked("Round knob Ø25 h18: ten notches, a 6 mm shaft hole 10 deep") == [
        ("diameter", 25.0, "about"),
        ("height", 18.0, "about"),
        ("round", None, "about"),  # a knob called round is round, notches and all
    ]
    assert asked("Flat plate 80 × 71 × 4 mm, 4 x 4 grid M8 clearance holes") == [
        ("box", [80.0, 71.0, 4.0], "about"),
        ("holes", 16, "at_least"),
    ]
    # Orientation: a hex standoff's length is any extent; across flats, another one.
    assert asked("A hex spacer, length 12, a 4.5 mm bore and 8 across flats") == [
        ("length", 12.0, "about"),
        ("across", 8.0, "about"),
        ("hexagonal", None, "about"),  # a hex spacer is a hexagon seen along its axis
    ]


def test_sizes_written_out_after_a_row_of_holes_and_before_a_shape_word() -> None:
    # A number word with a unit is a size; a row of holes belongs to the part, so the size
    # after it is the part's; "rectangular" is how the tab looks, not what is 5 mm thick.
    panel = "please model a mounting panel 80 by 50, six millimetres thick, with a 4 mm hole"
    assert ("thickness", 6.0, "about") in asked(panel)
    assert ("thickness", 5.0, "at_least") in asked(
        "a flat bar 120 x 30 with a row of five 6 mm holes, thickness 5"
    )
    assert ("thickness", 5.0, "at_least") in asked("a 5 mm thick rectangular tab 40 by 25")
    # What a feature may own stays in doubt: a hole's depth, a ring of holes' width, arms.
    block = "a block 60 x 40 x 20, a row of 6 mm holes, 10 deep"
    assert ("depth", 10.0, "about") not in asked(block)
    assert asked("a plate 80 x 60 with a ring of six holes, 30 wide") == [
        ("box", [80.0, 60.0], "at_least"),
        ("holes", 6, "at_least"),
    ]
    assert asked("a plate with two 5 mm arms, 14 mm tall") == []


def test_what_may_stick_out_makes_sizes_lower_bounds() -> None:
    leaf = asked("hinge leaf 75 x 16 x 4 mm, knuckle OD 14, pin 3.5")
    assert leaf == [("box", [75.0, 16.0, 4.0], "at_least")]
    bracket = asked("Create an L-bracket: 29 mm wide; 8 millimeters thick; horizontal leg 55")
    assert bracket == [("width", 29.0, "at_least"), ("thickness", 8.0, "at_least")]


def test_an_overall_size_is_the_whole_outer_size_whatever_else_is_named() -> None:
    # "overall", "footprint", "on the outside": all that sticks out is inside the size.
    assert asked("hinge leaf with a knuckle, overall 75 x 16 x 4 mm") == [
        ("box", [75.0, 16.0, 4.0], "about")
    ]
    assert asked("this one, 258.7 x 96.4 x 8 overall") == [("box", [258.7, 96.4, 8.0], "about")]
    assert asked("a plate with two bosses, overall height 25") == [("height", 25.0, "about")]
    assert asked("make it 120 mm long overall", edit=True) == [("length", 120.0, "about")]
    assert asked("make it 120 mm long", edit=True) == [("length", 120.0, "at_least")]


def test_a_thing_the_words_do_not_make_has_its_triple_as_its_box() -> None:
    # "like this", "this part": with nothing else named the sizes are the extents; a named
    # component may stick out.
    assert asked("like this, 80 x 45 x 60 mm") == [("box", [80.0, 45.0, 60.0], "about")]
    assert asked("make this part: 80 by 45 by 60 mm") == [("box", [80.0, 45.0, 60.0], "about")]
    assert asked("model the part in the picture, 80 mm long, 45 mm wide, 60 mm tall") == [
        ("length", 80.0, "about"),
        ("width", 45.0, "about"),
        ("height", 60.0, "about"),
    ]
    assert asked("like this, 80 x 45 x 60 mm, with a tab") == [
        ("box", [80.0, 45.0, 60.0], "at_least")
    ]
    # A scene whose words name no object is sized as a whole; one that names them is not.
    assert asked("like this, 190 by 100 by 125 mm", "scene") == [
        ("box", [190.0, 100.0, 125.0], "about")
    ]
    assert asked("a table 60 x 40 x 30 with a cup on it", "scene") == []


def test_edits_ask_only_absolute_sizes_of_the_whole_and_scenes_only_counts() -> None:
    assert asked("make it 12 mm thick and add a raised hub", edit=True) == [
        ("thickness", 12.0, "at_least")
    ]
    assert asked("add 2 holes", edit=True) == []
    assert asked("make the hub 20 mm tall", edit=True) == []
    assert asked("make it 60 mm tall", edit=True) == []  # a program's "height" may lean
    assert asked("Stack seven square blocks, each 10 mm tall", "scene") == [
        ("objects", 7, "at_least")
    ]
    assert asked("a 40 mm tall part", "code") == []
    edit = {"domain": "cad", "prompt": "a plate 5 mm thick", "instruction": "make it 9 mm thick"}
    assert task_items({**edit, "previous_program": "x = 1\n"}) == asked_items(
        "make it 9 mm thick", "cad", edit=True
    )


def test_the_ring_for_a_tall_part_is_not_as_asked_and_the_tall_part_wins(pool) -> None:
    geometry = CadOptions(printability=False, physics=False)
    items = asked_items("a part 40 mm tall")
    ring = validate_cad(RING, pool, request=items, options=geometry)
    assert not ring.valid and missed_only_the_request(ring)
    assert ring.checks["request"].detail["summary"] == "height 4 mm, asked 40 mm"
    ranked = rerank([RING, TALL_PART], "cad", pool, asked=("a part 40 mm tall", None))
    assert [s.program for s in ranked] == [TALL_PART, RING]
    assert ranked[0].valid and not ranked[1].valid


def test_serving_never_calls_the_wrong_part_valid(pool) -> None:
    request = GenerationRequest(prompt="a part 40 mm tall", n=2)
    both = [Sampled(RING, "stop", 10), Sampled(TALL_PART, "stop", 10)]
    best = rank_programs(request, both, pool)[0]
    assert best.program == TALL_PART and best.valid
    only_ring = rank_programs(request, [Sampled(RING, "stop", 10)], pool)[0]
    assert not only_ring.valid and only_ring.report.error is not None
    assert "height 4 mm, asked 40 mm" in only_ring.report.error.message


@pytest.mark.parametrize("family", ["flange", "hex_nut", "plate_holes", "stacked_blocks"])
def test_corpus_references_raise_no_alarm(pool, family: str) -> None:
    """A few references per family (bench/request.py measures thousands)."""
    geometry = CadOptions(printability=False, physics=False)
    for task in build_corpus(4, "asked-test", families=[family]):
        items = task_items(task)
        report = validate_cad(
            task["reference"], pool, request=items, options=geometry, domain=task["domain"]
        )
        assert report.valid, (task["prompt"], report.error)


@pytest.mark.parametrize("name", ["requests_ood.jsonl", "requests_in_family.jsonl"])
def test_hand_written_requests_ask_nothing_their_expected_size_contradicts(name: str) -> None:
    """eval/'s requests are worded freely, each with the overall size a person meant: no item
    derived from the words may contradict it, and most requests ask something."""
    rows = [json.loads(line) for line in (EVAL / name).read_text().splitlines() if line.strip()]
    asking = 0
    for row in rows:
        items = asked_items(row["prompt"], row["domain"])
        asking += bool(items)
        sizes = [i for i in items if i["what"] not in (*COUNTS, *SHAPES)]
        check = request_check(sizes, {"bbox_mm": row["spec"]["bbox_mm"]})
        assert check is None or check.passed, (row["prompt"], check.detail["summary"])
    assert asking >= 0.75 * len(rows)


def test_the_holes_size_is_asked_when_the_words_give_it() -> None:
    def holes(text: str) -> dict:
        return next(i for i in asked_items(text) if i["what"] == "holes")

    assert holes("a plate 100 x 60 x 8 mm with four 5 mm holes")["diameter_mm"] == 5.0
    assert holes("a bar with 4 holes dia 6")["diameter_mm"] == 6.0
    assert holes("a block with 10 holes of 6.5mm diameter")["phrase"] == (
        "10 holes of 6.5mm diameter"
    )
    assert holes("a plate with 3 Ø6.5 holes")["diameter_mm"] == 6.5
    # An M-size is a bolt's: tapped to a coarse clearance.
    bolt = holes("flange OD 80, six M5 bolt holes on a 60 PCD")
    assert (bolt["diameter_mm"], bolt["diameter_max_mm"]) == (5.0, 6.25)
    # A depth, a spacing or a bolt circle is no diameter.
    assert "diameter_mm" not in holes("four 6 mm deep holes in a 40 mm block")
    assert "diameter_mm" not in holes("a 40 mm plate with 4 holes 30 PCD")
    assert "diameter_mm" not in holes("a 40 mm plate with four holes, 20 apart")


def test_things_bored_by_what_they_are_and_through_holes_ask_a_way_through() -> None:
    def through(text: str) -> list[tuple[str, int, str]]:
        items = asked_items(text)
        wanted = ("through_holes", "bored")
        return [(i["what"], i["count"], i["phrase"]) for i in items if i["what"] in wanted]

    assert through("a washer OD 24 ID 12, 2 thick") == [("bored", 1, "washer")]
    assert through("a plain pipe 40 long, 20 OD") == [("bored", 1, "pipe")]
    assert through("a plate 100 x 60 x 8 with four through holes") == [
        ("through_holes", 4, "four through holes")
    ]
    assert through("a test tube 16 mm across, 100 long") == []
    assert through("a 40 mm cube") == []
    assert through("a cup 80 tall, 70 across") == []


def test_things_that_hold_something_ask_to_be_hollow() -> None:
    def hollow(text: str) -> list[str]:
        return [i["phrase"] for i in asked_items(text) if i["what"] == "hollow"]

    assert hollow("a coffee mug 90 mm tall") == ["mug"]
    assert hollow("a tray 140 x 90 x 20") == ["tray"]
    assert hollow("a 40 mm cube") == hollow("a washer 24 across") == []
    assert [
        i for i in asked_items("a table with a cup on it", "scene") if i["what"] == "hollow"
    ] == []


def test_a_size_of_no_axis_called_overall_or_largest_is_the_largest_extent() -> None:
    def largest(text: str) -> list[tuple[float, str]]:
        return [(i["value_mm"], i["match"]) for i in asked_items(text) if i["what"] == "largest"]

    assert largest("a bracket, 120 mm overall") == [(120.0, "about")]
    assert largest("like this, about 80 mm overall") == [(80.0, "about")]
    assert largest("a spacer, largest side 60 mm") == [(60.0, "about")]
    assert largest("a phone stand, max dimension of 120 mm") == [(120.0, "about")]
    assert largest("it is 80 mm at its widest") == [(80.0, "about")]
    assert largest("a clip roughly 30 mm in size") == [(30.0, "about")]
    # An axis word still says which extent: these are not the largest.
    assert largest("a handle 120 mm long overall") == []
    assert largest("115 x 85 x 55 mm overall") == []
    assert largest("a knob 40 mm across at its widest") == []
    assert [(i["what"], i["value_mm"]) for i in asked_items("a rod 90 mm in total length")] == [
        ("length", 90.0)
    ]
    assert largest("6 holes overall in a plate 80 x 60 x 5") == []  # a count, not a size
