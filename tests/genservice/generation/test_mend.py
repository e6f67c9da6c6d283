"""A parameter the body reads under another name is renamed; anything in doubt is left alone."""

from __future__ import annotations

from genservice.generation.binding import bind_candidates
from genservice.generation.mend import mend_names

SLIPPED = """import cadquery as cq

across_flats = 11.0
length = 15.0  # Länge
hole_d = 3.5

result = cq.Workplane("XY").polygon(6, across_flats).extrude(thickness)
result = result.faces(">Z").workplane().hole(hole_d)
"""


def test_the_one_unread_parameter_takes_the_one_unbound_name() -> None:
    mended = mend_names(SLIPPED)
    assert mended == SLIPPED.replace("length = 15.0", "thickness = 15.0")
    # Every name the mended program reads is now set (cadquery stood in for).
    body = mended.replace("import cadquery as cq\n", "")
    exec(compile(body, "mended", "exec"), {"cq": _Fake()})


def test_what_is_bound_in_loops_functions_and_imports_is_not_unbound() -> None:
    program = (
        "import math\n\nwidth = 40.0\ncount = 4\nspare = 2.0\n\n"
        "def post(r):\n    return r * 2\n\n"
        "for i in range(count):\n    x = post(i) + math.pi\n"
        "result = [j for j in range(3)]\nsize = width + thickness\n"
    )
    assert "thickness = 2.0\n" in mend_names(program)


def test_doubt_leaves_the_program_as_it_is() -> None:
    two_unbound = SLIPPED.replace("hole(hole_d)", "hole(bore_d)")
    two_unread = SLIPPED.replace("hole_d = 3.5", "hole_d = 3.5\nspare = 1.0")
    read_in_a_derived = SLIPPED.replace("hole_d = 3.5", "hole_d = length / 4")
    star = "from math import *\n" + SLIPPED
    shown = SLIPPED.replace("extrude(thickness)", "extrude(3)") + "show_object(result)\n"
    broken = SLIPPED + "result = (\n"
    for program in (two_unbound, two_unread, read_in_a_derived, star, broken, shown):
        assert mend_names(program) == program
    whole = SLIPPED.replace("extrude(thickness)", "extrude(length)")
    assert mend_names(whole) == whole  # nothing unbound, nothing to mend


def test_candidates_of_cad_and_edits_are_mended_code_is_not() -> None:
    assert "thickness = 15.0" in bind_candidates([SLIPPED], "cad", "a hex prism")[0]
    edit = bind_candidates([SLIPPED], "cad", "make it longer", previous_program=SLIPPED)
    assert "thickness = 15.0" in edit[0]
    assert bind_candidates([SLIPPED], "code", "a hex prism") == [SLIPPED]


GEAR = """import cadquery as cq

teeth = 19
module = 3.0

rp = module * teeth / 2
rb = rp * math.cos(math.radians(20))
result = cq.Workplane("XY").circle(rb).extrude(thicknes)
"""

LOOK_ALIKE = """import cadquery as cq

width = 80.0
corner_r = 10.78
wall = 2
label = "box"

result = cq.Workplane("XY").box(width, width, 20).edges("|Z").fillet(corner_r).shell(-wall)
"""

COPIED_BODY = """import cadquery as cq

width = 60.0

result = cq.Workplane("XY").box(width, width, 20).edges("|Z").fillet(corner_r).shell(-wall)
"""


def test_a_module_used_without_its_import_is_imported() -> None:
    mended = mend_names(GEAR.replace("thicknes", "6.0"))
    assert mended.startswith("import cadquery as cq\nimport math\n\nteeth = 19\n")
    # Imported, `math` no longer stands in the way of renaming the one slip.
    with_slip = GEAR.replace("module = 3.0", "module = 3.0\nthickness = 6.0")
    assert "thicknes = 6.0" in mend_names(with_slip)
    _run(mend_names(with_slip))
    numpy = GEAR.replace("math.", "np.")  # not a module part scripts import: left to validation
    assert mend_names(numpy) == numpy


def test_a_number_the_body_reads_is_taken_from_the_program_it_was_shown() -> None:
    assert mend_names(COPIED_BODY) == COPIED_BODY  # nothing shown, nothing certain
    mended = mend_names(COPIED_BODY, LOOK_ALIKE)
    assert mended == COPIED_BODY.replace(
        "width = 60.0\n", "width = 60.0\ncorner_r = 10.78\nwall = 2\n"
    )
    _run(mended)
    # Its own numbers stay its own; a name the shown program does not set as a number is left.
    assert "width = 60.0" in mended and "width = 80.0" not in mended
    labelled = COPIED_BODY.replace("fillet(corner_r)", "fillet(corner_r).tag(label)")
    assert "label =" not in mend_names(labelled, LOOK_ALIKE)
    # A slip the rename settles is renamed, not filled from the shown program.
    renamed = mend_names(SLIPPED, SLIPPED.replace("length = 15.0", "thickness = 3.0"))
    assert renamed == SLIPPED.replace("length = 15.0", "thickness = 15.0")


def test_borrowing_one_number_can_leave_one_slip_to_rename() -> None:
    two_unbound = COPIED_BODY.replace("width = 60.0", "width = 60.0\nwall_t = 1.5").replace(
        "fillet(corner_r)", "fillet(radius)"
    )
    shown = LOOK_ALIKE.replace("corner_r", "radius").replace("wall = 2\n", "")
    mended = mend_names(two_unbound, shown)
    assert "radius = 10.78" in mended and "wall = 1.5" in mended and "wall_t" not in mended
    _run(mended)


def test_edits_mend_from_the_program_being_edited_and_pictures_from_their_look_alike() -> None:
    edit = bind_candidates([COPIED_BODY], "cad", "make it taller", previous_program=LOOK_ALIKE)
    assert "corner_r = 10.78" in edit[0]
    pictured = bind_candidates([COPIED_BODY], "cad", "this box", look_alike=LOOK_ALIKE)
    assert "corner_r = 10.78" in pictured[0]
    assert bind_candidates([COPIED_BODY], "cad", "this box") == [COPIED_BODY]


def _run(program: str) -> None:
    """Run a mended program with cadquery stood in for: every name it reads is set."""
    body = program.replace("import cadquery as cq\n", "")
    exec(compile(body, "mended", "exec"), {"cq": _Fake()})


class _Fake:
    """Stands in for cadquery so the mended program's names can be run without a kernel."""

    def __getattr__(self, name: str) -> _Fake:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _Fake:
        return self


WASHER = """import cadquery as cq

outer_d = 30.0
inner_d = 12.0
thickness = 3.0
hole_count = 4

result = cq.Workplane("XY").circle(outer_d / 2).circle(inner_d / 2).extrude(thickness)
"""


def test_an_edit_that_sets_one_measure_outright_is_bound() -> None:
    """ "make it 32 mm thick" sets the thickness whatever the model wrote; a change relative to
    the previous program, several numbers or a bare number stay the model's."""
    wrote = WASHER.replace("thickness = 3.0", "thickness = 3.2")  # the model's slip

    def edit(instruction: str) -> str:
        return bind_candidates([wrote], "cad", "a washer", WASHER, None, instruction)[0]

    assert "thickness = 32.0" in edit("make it 32 mm thick")
    assert "thickness = 4.8" in edit("should be 4.8 mm thick")
    for relative in ("make it 2 mm thicker", "add 2 holes", "increase the thickness by 10 %",
                     "twice as thick, 6 mm", "the thickness to 5 mm and outer diameter 40 mm",
                     "change the holes to 6", "thickness -> 5"):  # fmt: skip
        assert edit(relative) == wrote, relative
    assert bind_candidates([wrote], "cad", "make it 32 mm thick", WASHER) == [wrote]


FLOAT_COUNT = """import cadquery as cq

length = 150.0
hole_count = 11.0
hole_pitch = 12.0
spokes = 6.0
scale = 2.0

result = cq.Workplane("XY").box(length, 30, 10)
result = result.faces(">Z").workplane().rarray(hole_pitch, 1, hole_count, 1).hole(3.5)
for i in range(spokes):
    result = result.faces(">Z").workplane().center(0, 0).circle(1).cutBlind(-scale)
"""


def test_a_count_written_as_a_whole_float_is_written_as_an_int(pool) -> None:
    """ "'float' object cannot be interpreted as an integer": a count the model wrote as 11.0
    and handed to rarray or range is written 11; a whole float used as a measure stays."""
    from validators.cad.validate import run_cad

    broken = run_cad(FLOAT_COUNT, pool).report
    assert not broken.valid and "interpreted as an integer" in broken.error.message
    mended = mend_names(FLOAT_COUNT)
    assert mended == FLOAT_COUNT.replace("hole_count = 11.0", "hole_count = 11").replace(
        "spokes = 6.0", "spokes = 6"
    )
    assert run_cad(mended, pool).report.checks["executes"].passed
    # Passed through arithmetic, or not a count at all, it is left as written.
    derived = FLOAT_COUNT.replace(
        "hole_pitch, 1, hole_count, 1", "hole_pitch, 1, int(hole_count), 1"
    )
    assert "hole_count = 11.0" in mend_names(derived)
    assert "length = 150.0" in mended and "scale = 2.0" in mended


def test_a_count_taken_from_the_look_alike_as_a_whole_float_is_an_int_too() -> None:
    """The look-alike sets `hole_count = 11.0`; a sample that keeps its body but leaves the
    count out takes it from there, and then as the int rarray needs."""
    shown = FLOAT_COUNT.replace("spokes = 6.0", "spokes = 6")
    sample = shown.replace("hole_count = 11.0\n", "")
    mended = mend_names(sample, shown)
    assert "hole_count = 11\n" in mended and "hole_count = 11.0" not in mended
