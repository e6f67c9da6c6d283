"""Ranking a refinement: among equally good candidates, the one that makes the asked change."""

from __future__ import annotations

from genservice.generation.rerank import adherence, asked_numbers, rerank
from validators.cad.program import apply_parameters

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
    assert all(s.valid for s in ranked)
    assert ranked[0].program == asked and ranked[-1].program == unchanged
    plain = rerank([unchanged, other, asked], "cad", pool)
    assert plain[0].program == unchanged  # without the edit, sampling order breaks ties
