"""CAD part families, set B: every reference builds and passes its own spec, prompts vary."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from tests.training.draws import draws, spread
from training.corpus.base import to_task
from training.corpus.cad_parts_b import (
    FAMILIES,
    articles,
    gear_outline,
    polygon_area,
    revolved_volume,
)
from training.corpus.phrasing import NUMBER_WORDS, number
from validators.cad.program import find_parameters, parse
from validators.cad.validate import CadOptions, check_spec, validate_cad

# As genservice.task_audit judges CAD tasks: no printability or physics checks.
OPTIONS = CadOptions(printability=False, physics=False)
BY_NAME = {family.name: family for family in FAMILIES}


def written_forms(value: Any) -> list[str]:
    """Ways a prompt may give a parameter value: 60, 6 (cm), six; M6 holds 6."""
    forms = [number(value)]
    if isinstance(value, float) and value >= 10 and float(value / 10).is_integer():
        forms.append(number(value / 10))
    if isinstance(value, int) and value in NUMBER_WORDS:
        forms.append(NUMBER_WORDS[value])
    return forms


def mentions(prompt: str, value: Any) -> bool:
    """True when some written form of the value stands alone in the prompt."""
    return any(
        re.search(rf"(?<![\d.]){re.escape(form)}(?!\d|\.\d)", prompt, re.IGNORECASE)
        for form in written_forms(value)
    )


def test_families() -> None:
    """Eight CAD families with unique names; only the phone stand is held out."""
    assert len(FAMILIES) == 8
    assert len(BY_NAME) == 8
    assert all(f.domain == "cad" for f in FAMILIES)
    assert [f.name for f in FAMILIES if f.held_out] == ["phone_stand"]


@pytest.mark.parametrize("name", BY_NAME)
def test_references_pass_their_spec(name: str, pool: Any) -> None:
    """Spread-out draws, extremes included, build one valid solid that meets the spec."""
    for sample in spread(BY_NAME[name], 40, 5):
        assert sample.spec is not None
        check_spec(sample.spec)
        report = validate_cad(
            sample.reference, pool, spec=sample.spec, domain="cad", options=OPTIONS
        )
        spec = report.checks.get("spec")
        assert report.valid and spec is not None and spec.passed, (
            sample.reference,
            report.error,
            spec.detail if spec else None,
        )
        found = {k: v["value"] for k, v in report.parameters.items()}
        assert found == sample.params


@pytest.mark.parametrize("name", BY_NAME)
def test_a_10mm_cube_fails_the_spec(name: str, pool: Any) -> None:
    """The trivial cube of genservice's task audit does not pass any family's spec."""
    sample = BY_NAME[name].sample(random.Random(1))
    cube = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n"
    assert not validate_cad(cube, pool, spec=sample.spec, options=OPTIONS).valid


@pytest.mark.parametrize("name", BY_NAME)
def test_programs_share_layout_and_construction(name: str) -> None:
    """Imports, round named parameters equal to params, one fixed construction, result."""
    constructions = set()
    for sample in draws(BY_NAME[name], 30):
        source = sample.reference
        found = find_parameters(parse(source))
        assert {k: v.value for k, v in found.items()} == sample.params
        assert all(type(v.value) is type(sample.params[k]) for k, v in found.items())
        *head, params, body = source.split("\n\n")
        assert head in (["import cadquery as cq"], ["import math", "import cadquery as cq"])
        assert params.splitlines() == [f"{k} = {v!r}" for k, v in sample.params.items()]
        assert all(float(v * 2).is_integer() for v in sample.params.values()), sample.params
        assert body.rstrip("\n").splitlines()[-1].startswith("result = ")
        assert "#" not in source and "def " not in source
        assert len(source.splitlines()) <= 25
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


def test_area_and_volume_helpers() -> None:
    """Shoelace area and Pappus volume agree with closed forms."""
    square = [(0.0, 0.0), (2.0, 0.0), (2.0, 3.0), (0.0, 3.0)]
    assert polygon_area(square) == pytest.approx(6.0)
    assert polygon_area(square[::-1]) == pytest.approx(6.0)
    ring = [(1.0, 0.0), (2.0, 0.0), (2.0, 1.0), (1.0, 1.0)]  # a washer: pi (2² - 1²) x 1
    assert revolved_volume(ring) == pytest.approx(3 * 3.141592653589793)


def test_gear_outline_lies_between_root_and_tip() -> None:
    """The gear outline stays between the root and tip circles and has one point set per tooth."""
    module, teeth = 2.0, 20
    points = gear_outline(module, teeth)
    radii = [(x * x + y * y) ** 0.5 for x, y in points]
    assert len(points) % teeth == 0
    assert min(radii) == pytest.approx(module * (teeth / 2 - 1.25))
    assert max(radii) == pytest.approx(module * (teeth / 2 + 1))


def test_articles_before_numbers() -> None:
    """'a' becomes 'an' where the number is read with a vowel sound, and only there."""
    assert (
        articles("a 8 mm bore, A 11 mm cable, a M6 nut")
        == "an 8 mm bore, An 11 mm cable, an M6 nut"
    )
    assert (
        articles("a 110 mm arm, a 1 mm wall, via 8 holes")
        == "a 110 mm arm, a 1 mm wall, via 8 holes"
    )
