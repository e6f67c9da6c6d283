"""Scene families: every reference is a sound scene (it stands, nothing overlaps or floats)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from tests.training.draws import draws, spread
from training.corpus.base import to_task
from training.corpus.phrasing import NUMBER_WORDS, number
from training.corpus.scenes import FAMILIES
from validators.cad.program import find_parameters, parse
from validators.cad.validate import CadOptions, check_spec, validate_cad

# As genservice.task_audit judges scenes: physics on, printability off.
OPTIONS = CadOptions(printability=False, physics=True)
PHYSICS = ("stability", "interference", "floating_parts", "support")
BY_NAME = {family.name: family for family in FAMILIES}


def written_forms(value: Any) -> list[str]:
    """Ways a prompt may give a parameter value: 60, 6 (cm), six."""
    forms = [number(value)]
    if isinstance(value, float) and value >= 10 and float(value / 10).is_integer():
        forms.append(number(value / 10))
    if isinstance(value, int) and value in NUMBER_WORDS:
        forms.append(NUMBER_WORDS[value])
    return forms


def mentions(prompt: str, value: Any) -> bool:
    """True when some written form of the value stands alone in the prompt (0 may be words)."""
    if value == 0:
        return True  # "no dividers", "all the same size"
    return any(
        re.search(rf"(?<![\d.]){re.escape(form)}(?!\d|\.\d)", prompt, re.IGNORECASE)
        for form in written_forms(value)
    )


def test_families() -> None:
    """Five scene families with unique names; only the chair is held out."""
    assert len(FAMILIES) == 5
    assert len(BY_NAME) == 5
    assert all(f.domain == "scene" for f in FAMILIES)
    assert [f.name for f in FAMILIES if f.held_out] == ["chair"]


@pytest.mark.parametrize("name", BY_NAME)
def test_references_are_sound_scenes(name: str, pool: Any) -> None:
    """Seed 0 and the tallest, most slender and busiest draws stand, touch without overlap and
    meet the spec."""
    for sample in spread(BY_NAME[name], 40, 4):
        assert sample.spec is not None
        check_spec(sample.spec)
        report = validate_cad(
            sample.reference, pool, spec=sample.spec, domain="scene", options=OPTIONS
        )
        failed = {k: c.detail for k, c in report.checks.items() if not c.passed}
        assert report.valid and not failed, (sample.reference, report.error, failed)
        assert all(report.checks[k].passed for k in (*PHYSICS, "spec"))
        parts = report.metrics["parts"]
        assert len(parts) == sample.spec["solids"]
        assert len({p["name"] for p in parts}) == len(parts)
        assert all(p["color"] is not None for p in parts)
        assert min(p["bbox"][2] for p in parts) == pytest.approx(0.0, abs=1e-6)
        found = {k: v["value"] for k, v in report.parameters.items()}
        assert found == sample.params


def test_a_10mm_cube_fails_a_scene_spec(pool: Any) -> None:
    """The trivial cube of genservice's task audit does not pass a scene's spec."""
    sample = BY_NAME["stacked_blocks"].sample(random.Random(1))
    cube = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n"
    report = validate_cad(cube, pool, spec=sample.spec, domain="scene", options=OPTIONS)
    assert not report.valid


@pytest.mark.parametrize("name", BY_NAME)
def test_programs_share_layout_and_construction(name: str) -> None:
    """Import, round named parameters equal to params, one fixed construction, result."""
    constructions = set()
    for sample in draws(BY_NAME[name], 30):
        source = sample.reference
        found = find_parameters(parse(source))
        assert {k: v.value for k, v in found.items()} == sample.params
        assert all(type(v.value) is type(sample.params[k]) for k, v in found.items())
        head, params, body = source.split("\n\n")
        assert head == "import cadquery as cq"
        assert params.splitlines() == [f"{k} = {v!r}" for k, v in sample.params.items()]
        assert all(float(v * 2).is_integer() for v in sample.params.values()), sample.params
        assert body.rstrip("\n").splitlines()[-1] == "result = scene"
        assert "cq.Assembly()" in body and "color=cq.Color(" in body
        assert "#" not in source and "def " not in source
        assert len(source.splitlines()) <= 35
        assert max(len(line) for line in source.splitlines()) <= 100
        constructions.add(body)
    assert len(constructions) == 1


@pytest.mark.parametrize("name", BY_NAME)
def test_prompts_vary_and_give_every_number(name: str) -> None:
    """30 draws give at least 20 prompts, each stating every parameter value."""
    samples = draws(BY_NAME[name], 30)
    assert len({s.prompt for s in samples}) >= 20
    for sample in samples:
        missing = [k for k, v in sample.params.items() if not mentions(sample.prompt, v)]
        assert not missing, (sample.prompt, missing, sample.params)


@pytest.mark.parametrize("name", BY_NAME)
def test_sampling_is_deterministic(name: str) -> None:
    """The same seed gives the same sample and the same task row; other seeds differ."""
    family = BY_NAME[name]
    first, again = family.sample(random.Random(7)), family.sample(random.Random(7))
    assert first == again
    assert to_task(family, first) == to_task(family, again)
    assert len({str(s.params) for s in draws(family, 20)}) >= 12
    if family.held_out:
        assert to_task(family, first)["split"] == "ood"
    else:
        assert to_task(family, first)["split"] in ("train", "val", "test")
