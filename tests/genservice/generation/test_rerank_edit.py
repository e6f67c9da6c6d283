"""Ranking by what was asked: among equally good candidates, the one that makes the asked change,
and the one whose parameters take the request's numbers where its words say."""

from __future__ import annotations

from genservice.generation.rerank import (
    adherence,
    asked_numbers,
    changed_lines,
    labelled,
    rerank,
)
from genservice.generation.stated import asked_labels
from validators.cad.program import apply_parameters
from validators.cad.request import missed_only_the_request

PREVIOUS = (
    "import cadquery as cq\nthickness = 8.0\nwidth = 40.0\n"
    "result = cq.Workplane().box(width, 20, thickness)\n"
)


def test_the_asked_number_wins_and_an_unchanged_program_loses() -> None:
    asked = apply_parameters(PREVIOUS, {"thickness": 12.0})
    other = apply_parameters(PREVIOUS, {"width": 50.0})
    assert adherence(asked, "make it 12 mm thick", PREVIOUS) == 1
    assert adherence(other, "make it 12 mm thick", PREVIOUS) == 0
    assert adherence(PREVIOUS, "make it 12 mm thick", PREVIOUS) == -1
    assert adherence("result = (", "make it 12 mm thick", PREVIOUS) == 0
    assert adherence(PREVIOUS, "a 40 mm wide plate, 8 mm thick") == 2


def test_the_numbers_a_request_states() -> None:
    assert asked_numbers("a 60 mm flange with six M5 bolt holes, 8 mm thick") == {60, 6, 5.5, 8}
    assert asked_numbers("4x 3.5 holes, twelve teeth") == {4, 3.5, 12}


def test_apply_parameters_writes_values_into_their_lines() -> None:
    edited = apply_parameters(PREVIOUS, {"thickness": 12, "width": "55"})
    assert "thickness = 12.0\nwidth = 55.0\n" in edited
    assert edited.count("\n") == PREVIOUS.count("\n")


def test_rerank_prefers_the_asked_change_among_valid_candidates(pool) -> None:
    unchanged, other, asked = (
        PREVIOUS,
        apply_parameters(PREVIOUS, {"width": 50.0}),
        apply_parameters(PREVIOUS, {"thickness": 12.0}),
    )
    ranked = rerank([unchanged, other, asked], "cad", pool, asked=("12 mm thick", PREVIOUS))
    assert ranked[0].program == asked and ranked[0].valid
    assert ranked[-1].program == unchanged
    # The others are sound, but not 12 mm thick: the request check says so, and they lose.
    assert all(missed_only_the_request(s.report) for s in ranked[1:])
    plain = rerank([unchanged, other, asked], "cad", pool)
    assert plain[0].program == unchanged  # without the edit, sampling order breaks ties


FLANGE = "a 60 mm flange with six M5 bolt holes, 8 mm thick"
FLANGE_PROGRAM = (
    "import cadquery as cq\n\nouter_d = 60.0\nthickness = 8.0\nbolt_count = 6\nbolt_d = 5.5\n"
    "bore_d = 0.4 * outer_d\nbolt_circle_d = (outer_d + bore_d) / 2\n\n"
    'flange = cq.Workplane("XY").circle(outer_d / 2).circle(bore_d / 2).extrude(thickness)\n'
    'flange = flange.faces(">Z").workplane().polarArray(bolt_circle_d / 2, 0, 360, bolt_count)\n'
    "result = flange.hole(bolt_d)\n"
)


def test_the_words_around_a_number_say_what_it_measures() -> None:
    labels = dict(asked_labels(FLANGE))
    assert labels[6.0] >= {"bolt", "hole"} and labels[8.0] == {"thic"} and 5.5 in labels
    assert dict(asked_labels("OD 80, PCD 60, bore 30"))[60.0] == {"bolt", "circ"}
    assert dict(asked_labels("OD 80, PCD 60, bore 30"))[80.0] == {"oute", "diam"}
    swapped = apply_parameters(FLANGE_PROGRAM, {"thickness": 6.0, "bolt_count": 8})
    # Both take every number of the request; only one puts them where the words say.
    assert adherence(FLANGE_PROGRAM, FLANGE) == adherence(swapped, FLANGE) == 4
    assert labelled(FLANGE_PROGRAM, FLANGE) == 3 and labelled(swapped, FLANGE) == 1
    asked = apply_parameters(PREVIOUS, {"thickness": 12.0})
    elsewhere = apply_parameters(PREVIOUS, {"width": 12.0})
    assert labelled(asked, "make it 12 mm thick", PREVIOUS) == 1
    assert labelled(elsewhere, "make it 12 mm thick", PREVIOUS) == 0
    assert labelled("result = (", FLANGE) == 0


def test_rerank_puts_the_numbers_where_the_request_says(pool) -> None:
    swapped = apply_parameters(FLANGE_PROGRAM, {"thickness": 6.0, "bolt_count": 8})
    ranked = rerank([swapped, FLANGE_PROGRAM], "cad", pool, asked=(FLANGE, None))
    assert ranked[0].program == FLANGE_PROGRAM and ranked[0].valid
    # The request's words are measured too: the swap is 6 mm thick where 8 mm were asked.
    missed = ranked[1].report
    assert missed_only_the_request(missed) and ranked[0].reward > ranked[1].reward
    assert missed.checks["request"].detail["summary"] == "thickness 6 mm, asked 8 mm"


def test_an_edit_that_changes_only_what_was_asked_wins(pool) -> None:
    # Both make the flange 12 mm thick; one also rewrites the derived bore as a number and
    # drops a bolt: it takes the asked number in the named parameter just as well, and loses.
    asked = FLANGE_PROGRAM.replace("thickness = 8.0", "thickness = 12.0")
    rewritten = asked.replace("bore_d = 0.4 * outer_d", "bore_d = 30.0").replace(
        "bolt_count = 6", "bolt_count = 5"
    )
    edit = ("make it 12 mm thick", FLANGE_PROGRAM)
    assert changed_lines(asked, FLANGE_PROGRAM) == 1
    assert changed_lines(rewritten, FLANGE_PROGRAM) == 3
    assert changed_lines(rewritten, None) == 0
    assert labelled(asked, *edit) == labelled(rewritten, *edit) == 1
    ranked = rerank([rewritten, asked], "cad", pool, asked=edit)
    assert all(s.valid for s in ranked) and ranked[0].reward == ranked[1].reward
    assert ranked[0].program == asked
