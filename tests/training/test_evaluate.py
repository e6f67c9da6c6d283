"""Evaluation metrics on hand-written candidates, scored by the real validators."""

from __future__ import annotations

import json

import pytest

from genservice.generation.image_match import PASS
from training.evaluate import markdown_table, report, run_evaluation, summarise, write_outputs

PLATE = """import cadquery as cq

length = 60.0
width = 40.0
thickness = 5.0

plate = cq.Workplane().box(length, width, thickness).faces(">Z").workplane()
result = plate.rarray(40, 20, 2, 2).hole(5)
"""
SOLID_PLATE = "import cadquery as cq\n\nresult = cq.Workplane().box(60.0, 40.0, 5.0)\n"
BROKEN = "import cadquery as cq\n\nresult = cq.Workplane().box(60.0, 40.0\n"
CAD_TASK = {
    "id": "plate-1",
    "domain": "cad",
    "family": "plate_holes",
    "split": "test",
    "prompt": "a 60 x 40 x 5 mm plate with four 5 mm holes",
    "reference": PLATE,
    "spec": {"bbox_mm": [60, 40, 5], "holes": 4},
}
CODE_TASK = {
    "id": "double-1",
    "domain": "code",
    "family": "double",
    "split": "test",
    "prompt": "write double(x)",
    "reference": "def double(x):\n    return 2 * x\n",
    "tests": "def check(candidate):\n    assert candidate(2) == 4\n"
    "    assert candidate(-3) == -6\n",
    "entry_point": "double",
}
CANDIDATES = {
    "plate-1": [SOLID_PLATE, BROKEN, PLATE, SOLID_PLATE],
    "double-1": ["def double(x):\n    return x + x\n", "def double(x):\n    return x\n"],
}


@pytest.fixture(scope="module")
def results(pool):
    def generate(task, n, seed):
        return CANDIDATES[task["id"]][:n]

    return run_evaluation([CAD_TASK, CODE_TASK], generate, pool, n=4, seed=0)


def test_best_of_n_is_chosen_blind_and_scored_against_the_reference(results):
    cad = results[0]
    assert cad.best == 2  # the plate with holes: the spec asks for 4 holes
    assert cad.candidates[2].iou == pytest.approx(1.0, abs=1e-6)
    assert cad.candidates[0].valid and cad.candidates[0].spec_passed is False
    assert 0.9 < cad.candidates[0].iou < 1.0  # close in volume, yet not what was asked
    assert cad.candidates[1].valid is False and cad.candidates[1].iou is None


def test_summary_metrics(results):
    summary = report(results)
    one = summary["families"]["plate_holes"]["pass@1"]
    assert one["invalidity"] == pytest.approx(0.25)
    assert one["spec_adherence"] == pytest.approx(0.25)
    assert one["iou_all_mean"] == pytest.approx(one["iou_valid_mean"] * 3 / 4)
    best = summary["families"]["plate_holes"]["best_of_4"]
    assert best["invalidity"] == 0 and best["iou_valid_median"] == pytest.approx(1.0, abs=1e-6)
    code = summary["families"]["double"]
    assert code["code_pass@1"] == pytest.approx(0.5)
    assert code["code_pass@2"] == 1.0


def test_outputs_are_written(results, tmp_path):
    paths = write_outputs(results, tmp_path, {"model": "hand-written", "tasks": "two"})
    data = json.loads(paths["json"].read_text())
    assert data["summary"]["overall"]["tasks"] == 2
    assert "| plate_holes | 1 |" in paths["markdown"].read_text()
    # every candidate's program is kept beside its score, so a failure can be read afterwards
    for task, result in zip(data["tasks"], results, strict=True):
        assert task["programs"] == result.programs
        assert len(task["programs"]) == len(task["candidates"])
    assert (tmp_path / "eval_cad.png").stat().st_size > 1000
    assert (tmp_path / "eval_code.png").stat().st_size > 1000


RING = "import cadquery as cq\n\nresult = cq.Workplane().circle(20).circle(15).extrude(4.0)\n"
TALL = (
    "import cadquery as cq\n\nheight = 40.0\nresult = cq.Workplane().circle(10).extrude(height)\n"
)


def test_request_adherence_at_1_and_of_the_best(pool):
    # A task with no spec: only its words ask something ("40 mm tall"), and are checked.
    task = {"id": "tall-1", "domain": "cad", "family": "tall", "split": "test",
            "prompt": "a part 40 mm tall", "reference": TALL}  # fmt: skip
    programs = [RING, TALL, RING, BROKEN]
    (result,) = run_evaluation([task], lambda t, n, s: programs[:n], pool, n=4, seed=0)
    assert result.best == 1  # the only sound part that is 40 mm tall
    ring = result.candidates[0]
    assert ring.valid and not ring.all_checks and ring.request_passed is False and ring.asked
    summary = report([result])
    one, best = summary["families"]["tall"]["pass@1"], summary["families"]["tall"]["best_of_4"]
    assert one["request_adherence"] == pytest.approx(0.25) and one["asked_samples"] == 4
    assert best["request_adherence"] == 1.0
    table = markdown_table(summary)
    assert "| request@1 |" in table and "| best-of-N request |" in table
    assert "| tall | 1 | 25.0 % |" in table


def test_at_1_is_the_greedy_first_candidate_where_it_was_decoded_greedily(pool):
    # Candidate 0 of a picture task is the model's greedy reading (as served): @1 is that
    # candidate, not the mean over the samples drawn after it; other tasks keep the mean.
    programs = [SOLID_PLATE, BROKEN, BROKEN, BROKEN]
    greedy = run_evaluation([CAD_TASK], lambda t, n, s: programs[:n], pool, n=4, seed=0,
                            greedy_first=lambda task: True)  # fmt: skip
    sampled = run_evaluation([CAD_TASK], lambda t, n, s: programs[:n], pool, n=4, seed=0)
    assert greedy[0].greedy_first and not sampled[0].greedy_first
    first = summarise(greedy)["pass@1"]
    mean = summarise(sampled)["pass@1"]
    assert first["samples"] == 1 and first["invalidity"] == 0.0
    assert mean["samples"] == 4 and mean["invalidity"] == pytest.approx(0.75)
    assert summarise(greedy)["best_of_4"] == summarise(sampled)["best_of_4"]
    assert "decoded greedily" in report(greedy)["selection"]
    assert "decoded greedily" not in report(sampled)["selection"]


def test_repair_rounds_are_measured_before_and_after(pool, tmp_path):
    """A repair function that fixes what it is shown: the broken sample and the failing best
    are fed back with their errors, and the after-repair figures count the fix."""
    seen: list[tuple[str, dict, int]] = []

    def generate(task, n, seed):
        return [BROKEN, SOLID_PLATE][:n]

    def repair(task, program, error, n, seed):
        seen.append((program, error, n))
        return [PLATE] * n

    results = run_evaluation([CAD_TASK, CODE_TASK], generate, pool, n=2, seed=0,
                             repair=repair, rounds=2)  # fmt: skip
    cad, code = results
    assert code.after_one is None  # code is not repaired
    broken = next(e for p, e, n in seen if p == BROKEN and n == 1)
    assert broken["kind"] and broken["line"] == 3  # the sample fed back with its error
    assert any(n == 2 for _, _, n in seen)  # the failing best of 2: 2 repairs of it
    assert cad.rounds_one == [1, 1] and cad.rounds_best == 1
    assert all(c.all_checks for c in cad.after_one or [])
    assert cad.after_best is not None and cad.after_best.all_checks
    assert cad.best_program_after == PLATE
    summary = report(results)["families"]["plate_holes"]
    assert summary["pass@1"]["invalidity"] == pytest.approx(0.5)
    after = summary["after_repair"]
    assert after["pass@1"]["invalidity"] == 0 and after["fixed@1"] == 1.0
    assert after["needed@1"] == 1.0 and after["needed_best"] == 1.0 and after["fixed_best"] == 1.0
    paths = write_outputs(results, tmp_path, {"model": "m", "tasks": "t", "repairing": "How."})
    text = paths["markdown"].read_text()
    assert "## Before and after repair" in text and "| plate_holes | 1 | 50.0 % → 0.0 %" in text


def _pictured_plate_task(task_id: str, pool, folder, reference: str | None = None) -> dict:
    """An image task: a 60 x 30 x 5 plate (or `reference`) drawn with the rig, "make this"."""
    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import render

    reference = reference or SOLID_PLATE.replace("40.0", "30.0")
    parts, _ = script_parts(reference, pool, domain="cad")
    picture = folder / f"{task_id}.png"
    Image.fromarray(render(parts, size=96)).save(picture)
    return {"id": task_id, "domain": "cad", "family": "plate", "split": "test",
            "prompt": "make this", "reference": reference, "images": [str(picture)]}  # fmt: skip


NARROW = "import cadquery as cq\n\nwidth = 14.0\nresult = cq.Workplane().box(60.0, width, 5.0)\n"


def test_a_picture_task_is_judged_as_served_and_its_spec_only_scores(pool, tmp_path):
    """An image task's spec holds its reference's counts ("4 holes"), which "make this" and the
    picture never state: its candidates get the verdict serving gives (words and picture), so
    the spec cannot choose among them; it still scores each one."""
    task = {**_pictured_plate_task("pictured-spec", pool, tmp_path, reference=PLATE),
            "spec": {"holes": 4, "solids": 1}}  # fmt: skip
    (result,) = run_evaluation([task], lambda t, n, s: [SOLID_PLATE, PLATE][:n], pool, n=2, seed=0)
    solid, holed = result.candidates
    assert solid.all_checks and holed.all_checks  # both sound and asked nothing else
    assert solid.spec_passed is False and holed.spec_passed is True
    assert "spec" not in (solid.error_message or "")
    summary = report([result])["modalities"]["image"]
    assert summary["pass@1"]["spec_adherence"] == 0.5
    text_task = {**task, "id": "words", "images": []}  # words: the spec is what they ask
    (worded,) = run_evaluation([text_task], lambda t, n, s: [SOLID_PLATE][:n], pool, n=1, seed=0)
    assert not worded.candidates[0].all_checks and worded.candidates[0].spec_passed is False


@pytest.mark.slow
def test_fitting_to_the_picture_is_measured_as_served(pool, tmp_path):
    """An image task whose best candidate has the wrong width: fitting it to the picture (blind,
    image_match only) brings it closer to the reference, and the fitted figures say so."""
    task = _pictured_plate_task("pictured-1", pool, tmp_path)
    (result,) = run_evaluation([task], lambda t, n, s: [NARROW][:n], pool, n=1, seed=0, fit=2)
    before, after = result.candidates[result.best], result.after_fit
    assert result.fit is not None and result.fit["improved"], result.fit
    assert after is not None and after.all_checks and after.iou is not None
    assert before.iou is not None and after.iou > before.iou + 0.1
    assert (after.image_match or 0) > (before.image_match or 0)
    assert result.best_program_fit != NARROW and "width" in result.fit["changed"]
    summary = report([result])["modalities"]["image"]
    fitted = summary["after_fit"]
    assert fitted["tasks"] == 1 and fitted["improved"] == 1.0
    # VALID as served: every check, and it looks like the picture (image_match passes).
    assert (before.image_match or 0) < PASS <= (after.image_match or 0)
    assert summary["best_of_1"]["as_pictured"] == 0.0 and fitted["best_of_1"]["as_pictured"] == 1.0
    text = write_outputs([result], tmp_path / "out", {"model": "m", "tasks": "t"})["markdown"]
    assert "| image, fitted to the request | 1 |" in text.read_text()


def test_gallery_parts_are_measured_beside_the_samples_and_chosen_blind(pool, tmp_path):
    """An image task whose sample is the wrong width and whose gallery part is the pictured
    one: the served answer is the gallery part (chosen by image_match, never by IoU), the
    samples' own figures are unchanged, and the fit starts from the served answer."""
    task = _pictured_plate_task("pictured-2", pool, tmp_path)
    reference = task["reference"]
    asked: list[str] = []

    def retrieve(t):
        asked.append(t["id"])
        return [(BROKEN, None), (reference, "plate")]

    (result,) = run_evaluation(
        [task], lambda t, n, s: [NARROW][:n], pool, n=1, seed=0, fit=1, retrieve=retrieve
    )
    assert asked == ["pictured-2"] and result.retrieved_programs == [BROKEN, reference]
    assert result.served_retrieved and result.served_program == reference
    assert result.served is not None and result.served.iou is not None and result.served.iou > 0.95
    sampled = result.candidates[result.best]
    assert sampled.iou is not None and sampled.iou < result.served.iou
    summary = report([result])["modalities"]["image"]
    assert summary["best_of_1"]["iou_all_median"] == sampled.iou  # the samples' figures stand
    gallery = summary["with_gallery"]
    assert gallery["answered_from_gallery"] == 1.0 and gallery["tasks"] == 1
    assert gallery["best_of_1+2"]["iou_all_median"] == result.served.iou
    assert result.after_fit is not None and result.after_fit.iou is not None
    assert result.after_fit.iou >= result.served.iou - 0.05  # the fit started from the answer
    text = write_outputs([result], tmp_path / "out", {"model": "m", "tasks": "t"})["markdown"]
    assert "| image, with gallery parts (100.0 % answered from it) | 1 |" in text.read_text()
    text_task = {**task, "id": "plain", "images": []}
    run_evaluation([text_task], lambda t, n, s: [NARROW][:n], pool, n=1, seed=0, retrieve=retrieve)
    assert asked == ["pictured-2"]  # a task without a picture retrieves nothing


def test_fitting_to_the_stated_sizes_is_measured_blind(pool, tmp_path):
    """A text task whose best part has its height wrong: the fit (the request's words only,
    never the task's spec) brings it to the stated size, and the spec then passes."""
    task = {"id": "sized-1", "domain": "cad", "family": "block", "split": "free",
            "prompt": "a block 60 mm long and 30 mm wide, 45 mm tall",
            "spec": {"bbox_mm": [60.0, 30.0, 45.0], "tolerance": 0.1}}  # fmt: skip
    low = "import cadquery as cq\n\nlift = 5.0\nresult = cq.Workplane().box(60.0, 30.0, lift)\n"
    (result,) = run_evaluation([task], lambda t, n, s: [low][:n], pool, n=1, seed=0, fit=2)
    before, after = result.candidates[result.best], result.after_fit
    assert before.spec_passed is False and before.sizes_off == (9.0,)
    assert result.fit is not None and result.fit["sizes"]["changed"] == {"lift": [5.0, 45.0]}
    assert after is not None and after.spec_passed and after.all_checks
    text = write_outputs([result], tmp_path, {"model": "m", "tasks": "t", "fitting": "How."})
    markdown = text["markdown"].read_text()
    assert "## Before and after fitting" in markdown
    assert "| block | 1 | 0.0 % → 0.0 % | 0.0 % → 100.0 % | 0.0 % → 100.0 % | 100.0 % |" in markdown


DISC = (
    "import cadquery as cq\n\ndiameter = 60.0\nthickness = 5.0\n"
    "result = cq.Workplane().circle(diameter / 2).extrude(thickness)\n"
)


@pytest.mark.slow
def test_the_fit_starts_from_several_candidates_as_served(pool, tmp_path):
    """A disc from the gallery looks more like the pictured plate than the too-narrow sample
    does, until the sample is fitted: fitted from both, the answer is the plate; fitted from
    the served answer alone, it is a fitted disc."""
    task = _pictured_plate_task("pictured-3", pool, tmp_path)
    answers = {}
    for starts in (1, 2):
        (result,) = run_evaluation(
            [task], lambda t, n, s: [NARROW][:n], pool, n=1, seed=0, fit=2,
            retrieve=lambda t: [(DISC, "disc")], fit_starts=starts,
        )  # fmt: skip
        assert result.served_program == DISC, "before the fit the disc is the answer"
        assert result.fit is not None and result.fit["starts"] == starts
        answers[starts] = result
    one, two = answers[1].after_fit, answers[2].after_fit
    assert one is not None and two is not None and one.iou is not None and two.iou is not None
    assert "diameter" in (answers[1].best_program_fit or "")
    assert "width" in (answers[2].best_program_fit or "") and two.iou > one.iou + 0.2
    assert (two.image_match or 0) > (one.image_match or 0)  # chosen blind, by the picture
    # Every start's fitted part is recorded beside the one served, for bench/served_fit.py.
    fit = answers[2].fit or {}
    assert len(fit["by_start"]) == 2 and fit["by_start"][fit["served_start"]]["iou"] == two.iou
    assert "by_start" not in (answers[1].fit or {}), "one start: nothing to choose"


def test_an_answer_whose_picture_fits_another_part_too_is_counted_unsettled(pool, tmp_path):
    """Edge-on, the pictured open tray and a solid block are one rectangle: the answer has a
    rival (settle.py), so it is not VALID as pictured, as serving calls it; the score of the
    gallery-and-samples answer before the fit is left as it was."""
    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import View, render

    block = "import cadquery as cq\nresult = cq.Workplane('XY').box(60, 40, 12)\n"
    tray = block.rstrip() + ".faces('>Z').shell(-1.5)\n"
    parts, _ = script_parts(tray, pool, domain="cad")
    picture = tmp_path / "edge.png"
    Image.fromarray(render(parts, [View.orbit(0, 0, True, 35)], 128)).save(picture)
    task = {"id": "edge-on", "domain": "cad", "family": "tray", "split": "test",
            "prompt": "make this", "reference": tray, "images": [str(picture)]}  # fmt: skip
    (result,) = run_evaluation(
        [task], lambda t, n, s: [block][:n], pool, n=1, seed=0, fit=1,
        retrieve=lambda t: [(tray, "tray")],
    )  # fmt: skip
    answer = result.after_fit
    assert answer is not None and answer.rivals, answer
    assert result.served is not None and result.served.rivals is None
    fitted = summarise([result])["after_fit"]["best_of_1"]
    assert fitted["as_pictured"] == 0.0 and fitted["unsettled"] == 1.0
