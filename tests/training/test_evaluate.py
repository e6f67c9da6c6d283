"""Evaluation metrics on hand-written candidates, scored by the real validators."""

from __future__ import annotations

import json

import pytest

from training.evaluate import markdown_table, report, run_evaluation, write_outputs

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
