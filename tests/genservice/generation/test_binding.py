"""Binding: a number the request states goes into the parameter its words name, when certain."""

from __future__ import annotations

from genservice.generation.binding import bind_stated_numbers, kept_where_stated
from genservice.generation.stated import asked_numbers, stated_numbers
from validators.cad.program import apply_parameters, find_parameters, parse

PLATE = (
    "import cadquery as cq\n\nlength = 66.0\nwidth = 57.0\nthickness = 12.0\nhole_d = 8.5\n"
    "cols = 2\nrows = 2\npitch_x = 30.0\npitch_y = 25.0\ncorner_r = 3.0\n\n"
    'plate = cq.Workplane("XY").box(length, width, thickness).edges("|Z").fillet(corner_r)\n'
    'result = plate.faces(">Z").workplane().rarray(pitch_x, pitch_y, cols, rows).hole(hole_d)\n'
)
PLATE_REQUEST = (
    "I need a flat plate with 57 millimeters wide, a 2 by 2 grid of 8.5 dia holes at 30mm (X) "
    "and 25 mm (Y) spacing, rounded corners (r = 3), 66 mm long & 12 thk."
)


def values(program: str) -> dict[str, object]:
    return {name: p.value for name, p in find_parameters(parse(program)).items()}


def test_the_numbers_the_words_name_are_written_into_their_parameters() -> None:
    # What the tiny model wrote for this request: length and width swapped, its usual corner
    # radius, a hole size from another task. Binding sets the first two; the hole size is
    # claimed most strongly by "8.5 dia holes".
    written = apply_parameters(
        PLATE, {"length": 57.0, "width": 66.0, "corner_r": 6.0, "hole_d": 6.5}
    )
    assert bind_stated_numbers(written, PLATE_REQUEST) == PLATE
    assert bind_stated_numbers(PLATE, PLATE_REQUEST) == PLATE  # a right program stays as it is


def test_counts_go_to_counts_and_measures_to_measures() -> None:
    flange = (
        "import cadquery as cq\nouter_d = 60.0\nthickness = 6.0\nbolt_count = 8\nbolt_d = 5.5\n"
        "result = cq.Workplane().circle(outer_d / 2).extrude(thickness)\n"
    )
    bound = bind_stated_numbers(flange, "a 60 mm flange with six M5 bolt holes, 8 mm thick")
    assert values(bound) == {"outer_d": 60.0, "thickness": 8.0, "bolt_count": 6, "bolt_d": 5.5}
    tray = "import cadquery as cq\nwidth = 120.0\ndividers = 4\nresult = cq.Assembly()\n"
    request = "a tray 120 mm long with one evenly spaced divider across it"
    assert values(bind_stated_numbers(tray, request))["dividers"] == 1


def test_a_number_held_where_its_words_point_is_not_moved() -> None:
    # "top 90 by 50": 90 is the top's width, not its thickness `top`; `width` keeps it.
    table = "import cadquery as cq\nwidth = 90.0\ndepth = 50.0\ntop = 5.0\nresult = cq.Assembly()\n"
    assert bind_stated_numbers(table, "a table, top 90 millimetres by 50 mm") == table
    # "d=115 ... ID 23": the diameter holds a number the request names it by.
    pulley = "import cadquery as cq\ndiameter = 115.0\nbore = 20.0\nresult = cq.Workplane()\n"
    assert bind_stated_numbers(pulley, "pulley d=115 w=26 v-groove 6 deep, ID 23") == pulley


def test_a_duplicate_gives_way_to_the_parameter_the_words_name() -> None:
    clip = (
        "import cadquery as cq\ncable = 9.0\nwall = 4.0\nwidth = 14.0\ntab_length = 14.0\n"
        "screw = 5.0\nresult = cq.Workplane()\n"
    )
    request = "a cable clip 18mm wide 4 mm wall for a 9mm cable, a 14 screw tab with a 5 mm hole"
    assert values(bind_stated_numbers(clip, request))["width"] == 18.0


def test_what_is_uncertain_or_unreadable_is_left_alone() -> None:
    # "a 14 mm tab" names `tab_length` and `tab_width` alike.
    clip = "import cadquery as cq\ntab_width = 5.0\ntab_length = 12.0\nresult = cq.Workplane()\n"
    assert bind_stated_numbers(clip, "a 14 mm tab") == clip
    # "a 14 screw tab" is a tab: the phrase ends in it.
    clip = clip.replace("tab_width", "screw")
    assert values(bind_stated_numbers(clip, "a 14 screw tab"))["tab_length"] == 14.0
    assert bind_stated_numbers("result = (", "a 12 mm thick plate") == "result = ("
    unnamed = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 6)\n"
    assert bind_stated_numbers(unnamed, "a 10 mm cube, 12 mm thick") == unnamed


def test_what_a_request_states() -> None:
    found = {s.value: s for s in stated_numbers("OD 110 mm / 3 cm centre bore, 6 Ø4.5 holes")}
    assert set(found) == {110.0, 30.0, 6.0, 4.5}  # centimetres in millimetres
    assert found[110.0].form == "measure" and found[6.0].form == "count"  # 6 of the Ø4.5
    forms = [s.form for s in stated_numbers("a 14 screw tab, 4 holes dia 6, 24T, 50 x 24 mm")]
    assert forms == ["number", "things", "measure", "number", "number", "measure"]
    assert "thic" not in stated_numbers("24T gear")[0].stems  # "t" after a number: teeth
    assert stated_numbers("R6 corners")[0].form == "measure"  # a radius, not six corners
    assert found[30.0].after >= {"cent", "bore"} and found[110.0].before == {"oute", "diam"}
    assert stated_numbers("six holes")[0].form == "count"
    assert asked_numbers("4x 3.5 holes, twelve teeth, M5") == {4, 3.5, 12, 5.5}


def test_binding_never_changes_a_reference_and_restores_what_the_request_states() -> None:
    # Every reference of a corpus draw is what its request asks: binding must leave each as it
    # is. With one parameter spoilt, it either restores the reference or leaves the spoilt
    # program alone (a parameter the request does not state cannot be restored); it never
    # writes a third program.
    from training.corpus.build import build_corpus
    from training.corpus.families import families_for

    families = families_for(["cad", "scene"])
    tasks = list(build_corpus(4 * len(families), 5, families=families, split="val"))
    restored = spoilt = 0
    for task in tasks:
        reference = task["reference"]
        assert bind_stated_numbers(reference, task["prompt"]) == reference, task["prompt"]
        for name, p in find_parameters(parse(reference)).items():
            if p.type not in ("int", "float"):
                continue
            wrong = p.value + 1 if p.type == "int" else round(p.value * 1.3 + 1, 1)
            spoilt_program = apply_parameters(reference, {name: wrong})
            bound = bind_stated_numbers(spoilt_program, task["prompt"])
            assert bound in (reference, spoilt_program), (task["prompt"], name)
            restored += bound == reference
            spoilt += 1
    assert restored > spoilt / 3  # about half the parameters of a request are stated in it


def test_grids_counts_and_numbers_named_elsewhere() -> None:
    # "four by three grid": columns by rows, as people write a grid.
    plate = apply_parameters(PLATE, {"cols": 5, "rows": 1})
    bound = values(bind_stated_numbers(plate, "a plate with 8.5 dia holes in a four by three grid"))
    assert (bound["cols"], bound["rows"]) == (4, 3)
    # A count whose words name no parameter: the program's only count parameter.
    flange = (
        "import cadquery as cq\nouter_d = 60.0\nbolt_count = 6\nbolt_d = 6.5\n"
        "result = cq.Workplane().circle(outer_d / 2).extrude(5)\n"
    )
    request = "a 60 millimeters OD flange with 3 Ø6.5 through holes"
    assert values(bind_stated_numbers(flange, request))["bolt_count"] == 3
    # 50 is the vertical leg's ("vertical leg 50mm"), so `width` may give it up for "38mm wide".
    bracket = "import cadquery as cq\nleg_a = 35.0\nleg_b = 80.0\nwidth = 50.0\nresult = 1\n"
    request = "an angle bracket 38mm wide, horizontal leg 35 mm, vertical leg 50mm"
    assert values(bind_stated_numbers(bracket, request))["width"] == 38.0


def test_a_size_of_the_whole_named_by_its_axis_beats_a_number_named_nowhere() -> None:
    # "six millimetres thick" is a size; "thickness 5" takes the 5 the model put in the bolt
    # circle by chance, and "6 mm thick" the 50 it copied from "80 by 50".
    bar = (
        "import cadquery as cq\nlength = 120.0\nwidth = 30.0\nthickness = 3.0\nhole_count = 5\n"
        "bolt_circle_d = 5.0\nresult = cq.Workplane().box(length, width, thickness)\n"
    )
    request = "a flat bar 120 x 30 with a row of five 6 mm holes, thickness 5"
    assert values(bind_stated_numbers(bar, request))["thickness"] == 5.0
    panel = bar.replace("thickness = 3.0", "thickness = 50.0")
    bound = values(bind_stated_numbers(panel, "a mounting panel 120 by 30, six millimetres thick"))
    assert bound["thickness"] == 6.0
    bound = values(bind_stated_numbers(panel, "a mounting panel 120 by 50, 6 mm thick"))
    assert bound["thickness"] == 6.0
    # A run of sizes is length and width's: "100 by 100, 30 wide" leaves `width = 100`.
    box = "import cadquery as cq\nlength = 100.0\nwidth = 100.0\nheight = 30.0\nresult = 1\n"
    assert bind_stated_numbers(box, "wall shelf support 100 by 100, 30 wide, 4 thick") == box
    # A size its words may give a feature ("two 5 mm arms, 14 mm tall") moves nothing.
    seat = "import cadquery as cq\nheight = 30.0\narm = 5.0\nresult = cq.Assembly()\n"
    request = "a seat 3 cm off the floor, two 5 mm arms, 14 mm tall"
    assert bind_stated_numbers(seat, request) == seat


def test_a_count_of_described_things_is_not_a_size() -> None:
    # "4 square-section legs, 6 mm thick": four legs, 6 mm each; but "7 across flats" is a size
    # and "four 3 square legs" are 3 mm legs.
    forms = {s.written: s.form for s in stated_numbers("4 square-section legs, 6 mm thick")}
    assert forms == {"4": "things", "6": "measure"}
    assert stated_numbers("4 sq legs")[0].form == "things"
    assert stated_numbers("a nut 7 across flats")[0].form == "number"
    assert [s.form for s in stated_numbers("four 3 square legs")] == ["count", "number"]
    stool = (
        "import cadquery as cq\nwidth = 40.0\ndepth = 40.0\nheight = 60.0\nboard_t = 4.0\n"
        "leg = 6.0\nresult = cq.Assembly()\n"
    )
    request = "a stool, seat 40x40x4, 4 square legs, 6mm thick, seat height 60"
    assert bind_stated_numbers(stool, request) == stool


def test_binding_never_changes_a_furniture_reference() -> None:
    # The furniture scenes are opt-in, so the corpus-wide test above does not draw them.
    import random

    from training.corpus.base import to_task
    from training.corpus.furniture import Furniture

    family = Furniture()
    for i in range(150):
        task = to_task(family, family.sample(random.Random(f"bind-furniture:{i}")))
        assert bind_stated_numbers(task["reference"], task["prompt"]) == task["reference"], task[
            "prompt"
        ]


def test_a_run_of_sizes_gives_length_and_width_or_width_and_depth() -> None:
    from genservice.generation.stated import chained_sizes

    assert chained_sizes("seat 40x38x3, top at 45") == [[40.0, 38.0, 3.0]]
    assert chained_sizes("table 9 cm x 6 cm") == [[90.0, 60.0]]
    assert chained_sizes("a 2 by 2 grid of 8.5 dia holes, 2x2 holes") == []
    # The model put the seat height into the width: the run of sizes puts it back, and then
    # "seat height 60" can take its number.
    written = (
        "import cadquery as cq\nwidth = 60.0\ndepth = 38.0\nheight = 45.0\nboard_t = 3.0\n"
        "result = cq.Assembly()\n"
    )
    bound = bind_stated_numbers(written, "a chair, a 40 x 38 seat 3 mm thick, seat height 60")
    assert values(bound) == {"width": 40.0, "depth": 38.0, "height": 60.0, "board_t": 3.0}
    # A program that holds the two sizes in either order is left alone ("21 by 85" for a leaf
    # 85 long and 21 wide); one with another pair of names, or two runs of sizes, too.
    leaf = "import cadquery as cq\nlength = 85.0\nwidth = 21.0\nresult = cq.Workplane()\n"
    assert bind_stated_numbers(leaf, "a hinge leaf, 21 by 85 mm") == leaf
    knob = "import cadquery as cq\ndiameter = 30.0\nheight = 20.0\nresult = cq.Workplane()\n"
    assert bind_stated_numbers(knob, "a 50 x 24 mm grip knob") == knob
    two = "import cadquery as cq\nwidth = 10.0\ndepth = 10.0\nresult = cq.Assembly()\n"
    assert bind_stated_numbers(two, "a 40 x 38 seat and a 40 x 5 backrest") == two


def test_an_angle_binds_only_into_an_angle() -> None:
    from genservice.generation.stated import chained_sizes

    # "a 2 x 45° chamfer": 2 is the chamfer's size, 45 its angle, and the two are no run of sizes.
    assert chained_sizes("a disc with a 2 x 45° chamfer round the top") == []
    disc = "import cadquery as cq\ndiameter = 80.0\nedge_chamfer = 3.6\nresult = cq.Workplane()\n"
    bound = bind_stated_numbers(disc, "a disc Ø80 with a 2 x 45° chamfer round the top")
    assert values(bound) == {"diameter": 80.0, "edge_chamfer": 2.0}
    # "a 90 degree bend" sets the bend's angle, never a size.
    tube = "import cadquery as cq\nbend_r = 12.0\nbend_angle = 45.0\nresult = cq.Workplane()\n"
    bound = bind_stated_numbers(tube, "a swept tube, a 90 degree bend, bend radius 12 mm")
    assert values(bound) == {"bend_r": 12.0, "bend_angle": 90.0}
    assert bind_stated_numbers(disc, "a disc Ø80, edges at 30°") == disc


def test_a_size_of_the_whole_is_no_feature_size() -> None:
    cup = (
        "import cadquery as cq\nouter_d = 40.0\nheight = 45.0\near_length = 14.0\n"
        "result = cq.Workplane()\n"
    )
    request = "a cup, body diameter 40, 45 mm tall, overall length 68mm, two 14 mm tabs"
    assert bind_stated_numbers(cup, request) == cup
    table = "import cadquery as cq\nheight = 70.0\nleg = 5.0\nresult = cq.Assembly()\n"
    bound = bind_stated_numbers(table, "a table, overall height 90 mm, 5 mm legs")
    assert values(bound) == {"height": 90.0, "leg": 5.0}


def test_a_pipe_bends_centreline_radius_and_a_dash_ends_a_phrase() -> None:
    elbow = (
        "import cadquery as cq\nouter_d = 16.0\ninner_d = 10.0\nbend_r = 12.0\n"
        "result = cq.Workplane()\n"
    )
    bound = bind_stated_numbers(elbow, "I need a pipe elbow — Ø50 outside and Ø47 inside — CLR 50.")
    # "Ø47 inside — CLR 50": the dash ends 47's words, so CLR names only 50.
    assert values(bound) == {"outer_d": 50.0, "inner_d": 47.0, "bend_r": 50.0}


def test_numbers_are_kept_where_the_words_put_them() -> None:
    # "6 bore" keeps `bore_d = 6`, not the `thickness = 6` the model copied beside it; "45
    # across" names no parameter of this program, so the 45 it holds stays too.
    wheel = (
        "import cadquery as cq\nouter_d = 45.0\nthickness = 6.0\nbore_d = 6.0\n"
        "result = cq.Workplane().circle(outer_d / 2).extrude(thickness)\n"
    )
    request = "grooved wheel for a round belt, 45 across, 15 wide, 6 bore"
    assert kept_where_stated(wheel, request) == {"outer_d", "bore_d"}
    assert kept_where_stated("x = (", request) == set()
