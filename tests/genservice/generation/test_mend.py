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


class _Fake:
    """Stands in for cadquery so the mended program's names can be run without a kernel."""

    def __getattr__(self, name: str) -> _Fake:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _Fake:
        return self
