"""A picture settles which part it shows, or the verdict says it does not (settle.py)."""

from __future__ import annotations

import pytest
from PIL import Image

from exporters.render import View
from genservice.generation.engine import Candidate, settle_candidates
from genservice.generation.rerank import rerank
from genservice.generation.settle import SAME_SHAPE, built_shape, rivals
from validators.cad.request import what_is_off

TRAY = (
    "import cadquery as cq\n"
    "result = cq.Workplane('XY').box(60, 40, 12).faces('>Z').shell(-1.5)\n"
)  # open at the top
BLOCK = "import cadquery as cq\nresult = cq.Workplane('XY').box({x}, 40, 12)\n"


def _picture(program: str, pool, views: list[View]) -> list[Image.Image]:
    """Pictures of a program's part from each view, as a person would send them."""
    from exporters.parts import parts_from_payload
    from exporters.render import render
    from validators.cad.validate import run_cad

    parts = parts_from_payload(run_cad(program, pool).payload)
    return [Image.fromarray(render(parts, [view], 160)) for view in views]


def _served(programs: list[str], pool, pictures: list[Image.Image]) -> list[Candidate]:
    ranked = rerank(programs, "cad", pool, picture=pictures)
    candidates = [Candidate(s.program, s.reward, s.valid, s.index, s.report, "") for s in ranked]
    return settle_candidates(candidates, pool)


EDGE_ON = View.orbit(0, 0, True, 35)


def test_a_picture_that_fits_two_different_parts_shows_neither_as_valid(pool) -> None:
    """Seen edge-on, a tray and a solid block are one rectangle: both match the picture, and
    neither is VALID; the answer keeps its place and names its rival and what would settle it."""
    edge = _picture(TRAY, pool, [EDGE_ON])
    served = _served([TRAY, BLOCK.format(x=60)], pool, edge)
    assert all(c.report.checks["image_match"].score >= 0.75 for c in served)
    assert not any(c.valid or c.report.valid for c in served)
    best = served[0].report
    check = best.checks["image_match"]
    assert not check.passed and check.detail["settled"] is False
    rival = check.detail["rivals"][0]
    assert rival["candidate"] == served[1].index and rival["shared"] < SAME_SHAPE
    assert "fits a different part as well" in what_is_off(best)
    assert "a picture from another side" in best.error.message
    assert best.metrics["valid_but_for_the_picture"] is True
    assert best.reward == rerank([served[0].program], "cad", pool)[0].reward  # reward unchanged


def test_a_second_picture_settles_it(pool) -> None:
    """From above, the tray's hollow shows: with that picture beside the edge-on one only the
    tray fits, and it is VALID."""
    pictures = _picture(TRAY, pool, [EDGE_ON, View.orbit(130, 40, True, 35)])
    served = _served([TRAY, BLOCK.format(x=60)], pool, pictures)
    assert served[0].program == TRAY and served[0].valid and served[0].report.valid
    assert "rivals" not in served[0].report.checks["image_match"].detail


def test_look_alikes_of_one_shape_do_not_unsettle_it(pool) -> None:
    """Two candidates a hair apart in size are one part: the picture settles it."""
    edge = _picture(BLOCK.format(x=60), pool, [EDGE_ON])
    served = _served([BLOCK.format(x=60), BLOCK.format(x=61)], pool, edge)
    assert all(c.valid for c in served)
    shape = built_shape(pool)
    entries = [(c.program, c.report.checks["image_match"].score) for c in served]
    assert rivals(entries, shape) == []


def test_the_api_marks_its_candidates_as_the_engine_does(pool) -> None:
    """A job's candidates (JSON) are settled as the engine's: NOT AS ASKED, the rival named."""
    from types import SimpleNamespace

    from genservice import tasks

    ranked = rerank(
        [TRAY, BLOCK.format(x=60)], "cad", pool, picture=_picture(TRAY, pool, [EDGE_ON])
    )
    scored = [{"index": 10 + s.index, "program": s.program, "valid": s.valid,
               "report": s.report.to_dict()} for s in ranked]  # fmt: skip
    runtime = SimpleNamespace(pool=lambda domain: pool, limits=lambda: None)
    out = tasks._settle(runtime, SimpleNamespace(domain="cad"), scored)  # type: ignore[arg-type]
    assert [c["index"] for c in out] == [c["index"] for c in scored]
    assert [tasks.verdict(c["report"]) for c in out] == ["not as asked"] * 2
    assert not any(c["valid"] for c in out)
    rivals = out[0]["report"]["checks"]["image_match"]["detail"]["rivals"]
    assert [r["candidate"] for r in rivals] == [out[1]["index"]]


def test_the_fit_served_is_the_highest_match_unless_asked_to_keep_the_earlier_start() -> None:
    """By default the fit that matches best serves (ties: the earlier start); with `within`
    (MARGIN), a later start's fit serves only when it matches clearly better; a better
    verdict wins whatever the match."""
    from genservice.generation.settle import MARGIN, served_fit

    valid, not_as_asked = (False, False), (True, False)
    assert served_fit([(valid, 0.95), (valid, 0.95 + MARGIN / 2)]) == 1
    assert served_fit([(valid, 0.95), (valid, 0.95)]) == 0, "ties: the earlier start"
    assert served_fit([(valid, 0.95), (valid, 0.95 + MARGIN / 2)], within=MARGIN) == 0
    assert served_fit([(valid, 0.90), (valid, 0.90 + 2 * MARGIN)], within=MARGIN) == 1
    assert served_fit([(valid, 0.90), (valid, 0.95), (valid, 0.96)], within=MARGIN) == 1
    assert served_fit([(not_as_asked, 0.99), (valid, 0.80)]) == 1, "the verdict first"
    assert served_fit([(valid, 0.80)]) == 0


def _matching(score: float):
    """A Report that passes every check and matches the picture at `score`."""
    from validators.report import Check, Report

    return Report.build(True, 0.9, {"solid": Check(1.0, True), "image_match": Check(score, True)})


@pytest.mark.parametrize(
    ("second", "within", "served_from"), [(0.955, 0.0, 1), (0.945, 0.0, 0), (0.955, 0.02, 0)]
)
def test_the_engine_serves_the_fit_settle_chooses(
    monkeypatch, second: float, within: float, served_from: int
) -> None:
    """fit_best with the fit itself stood in for (each start 'fits' to a set match): the
    higher match serves, or with SERVE_WITHIN the earlier start unless clearly beaten."""
    from genservice.generation import engine, settle
    from genservice.generation.fit import Fit, Trial
    from genservice.generation.rerank import Scored

    fitted_to = {"first": 0.95, "second": second}

    def fit_candidate(domain, pool, picture, program, report, *args, **kwargs) -> Fit:
        fitted = f"{program} (fitted)"
        record = Scored(fitted, _matching(fitted_to[program]), 0.9, 0)
        trial = Trial(fitted, True, fitted_to[program], record)
        return Fit(fitted, trial, report.checks["image_match"].score, fitted_to[program])

    monkeypatch.setattr(engine, "fit_candidate", fit_candidate)
    monkeypatch.setattr(settle, "SERVE_WITHIN", within)
    candidates = [
        Candidate("first", 0.9, True, 0, _matching(0.90), ""),
        Candidate("second", 0.9, True, 1, _matching(0.85), ""),
    ]
    request = engine.GenerationRequest("make this", images=(Image.new("RGB", (32, 32)),), fit=1)
    fit, ordered = engine.fit_best(request, candidates, pool=None)
    assert ordered[0].fitted_from == served_from
    assert fit.score_after == fitted_to[["first", "second"][served_from]], "its own record"
    assert {c.program for c in ordered} >= {"first", "second"}, "nothing is lost"
