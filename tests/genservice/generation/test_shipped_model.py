"""The model shipped in the package turns a plain request into a valid, parametric part."""

from __future__ import annotations

import pytest

from genservice.generation.engine import GenerationRequest, generate
from genservice.generation.loader import default_model_dir, load_model


@pytest.fixture(scope="module")
def shipped():
    return load_model(default_model_dir())


def test_the_shipped_model_writes_the_requested_flange(shipped, pool):
    # The journey's first request, best of 8. It states no bore and no bolt circle: the model
    # derives them. The seed pins the sampling (each of seeds 0-3 gives this flange with the
    # current weights).
    request = GenerationRequest(
        prompt="a 60 mm flange with six M5 bolt holes, 8 mm thick", n=8, seed=1, max_new_tokens=400
    )
    result = generate(request, shipped, pool)
    assert result.valid, result.report.error
    params = dict(result.report.parameters)
    values = {
        name: info.get("value") if isinstance(info, dict) else info for name, info in params.items()
    }
    assert values["outer_d"] == 60.0 and values["thickness"] == 8.0
    assert values["bolt_count"] == 6 and values["bolt_d"] == 5.5
    assert result.report.metrics["holes"] == 7  # six bolt holes inside the disc, and the bore


JOURNEY_FLANGE = """\
import cadquery as cq

outer_d = 60.0
thickness = 8.0
bolt_count = 6
bolt_d = 5.5
bore_d = 0.4 * outer_d
bolt_circle_d = (outer_d + bore_d) / 2

flange = cq.Workplane("XY").circle(outer_d / 2).circle(bore_d / 2).extrude(thickness)
flange = flange.faces(">Z").workplane().polarArray(bolt_circle_d / 2, 0, 360, bolt_count)
result = flange.hole(bolt_d)
"""


def test_the_shipped_model_refines_the_flange_as_asked(shipped, pool):
    # The journey's refinement of that flange, best of 8: only the thickness changes, and the
    # derived bore and bolt circle stay derived (seeds 1-3 of 0-3 give exactly this with the
    # current weights; seed 0's eight candidates all change another line too).
    request = GenerationRequest(
        prompt="make it 12 mm thick",
        previous_program=JOURNEY_FLANGE,
        instruction="make it 12 mm thick",
        n=8,
        seed=1,
        max_new_tokens=400,
    )
    result = generate(request, shipped, pool)
    assert result.valid, result.report.error
    assert result.program == JOURNEY_FLANGE.replace("thickness = 8.0", "thickness = 12.0")
    assert result.report.metrics["holes"] == 7


def test_the_numbers_a_request_states_end_up_in_the_part(shipped, pool):
    # A test-split request whose eight candidates all read "18mm wide" as 14 (the tab's
    # number) before binding; binding writes 18 into `width`, where the words put it.
    request = GenerationRequest(
        prompt="a cable clip 18mm wide 4 mm wall for a 9mm cable a 5.5 millimetres opening on top "
        "a 14 screw tab with a 5 millimetres hole",
        spec={"bbox_mm": [31.0, 18.0, 16.543], "holes": 2, "solids": 1, "any_orientation": True},
        n=8,
        seed=0,
        max_new_tokens=400,
    )
    result = generate(request, shipped, pool)
    assert result.valid, result.report.error
    values = {
        name: info.get("value") if isinstance(info, dict) else info
        for name, info in dict(result.report.parameters).items()
    }
    assert values["width"] == 18.0 and values["tab_length"] == 14.0 and values["wall"] == 4.0
