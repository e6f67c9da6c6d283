"""CAD part families, set A: every reference builds and passes its own spec, prompts vary."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from tests.training.draws import draws, spread
from training.corpus.base import to_task
from training.corpus.cad_parts_a import FAMILIES, clearance
from training.corpus.phrasing import NUMBER_WORDS, number
from validators.cad.program import find_parameters, parse
from validators.cad.validate import CadOptions, check_spec, validate_cad

# As genservice.task_audit judges CAD tasks: no printability or physics checks.
OPTIONS = CadOptions(printability=False, physics=False)
BY_NAME = {family.name: family for family in FAMILIES}


def written_forms(value: Any) -> list[str]:
    """Ways a prompt may give a parameter value: 60, 6 (cm), six, M5 (for 5.5)."""
    forms = [number(value)]
    if isinstance(value, float) and value >= 10 and float(value / 10).is_integer():
        forms.append(number(value / 10))
    if isinstance(value, int) and value in NUMBER_WORDS:
        forms.append(NUMBER_WORDS[value])
    metric = clearance(float(value))
    if metric:
        forms.append(metric)
    return forms


def mentions(prompt: str, value: Any) -> bool:
    """True when some written form of the value stands alone in the prompt."""
    return any(
        re.search(rf"(?<![\d.]){re.escape(form)}(?!\d|\.\d)", prompt, re.IGNORECASE)
        for form in written_forms(value)
    )


def test_families() -> None:
    """Eight CAD families with unique names; only the pipe elbow is held out."""
    assert len(FAMILIES) == 8
    assert len(BY_NAME) == 8
    assert all(f.domain == "cad" for f in FAMILIES)
    assert [f.name for f in FAMILIES if f.held_out] == ["pipe_elbow"]


@pytest.mark.parametrize("name", BY_NAME)
def test_references_pass_their_spec(name: str, pool: Any) -> None:
    """Spread-out draws, extremes included, build one valid solid that meets the spec."""
    for sample in spread(BY_NAME[name], 60, 8):
        assert sample.spec is not None
        check_spec(sample.spec)
        report = validate_cad(sample.reference, pool, spec=sample.spec, options=OPTIONS)
        spec = report.checks["spec"]
        assert report.valid and spec.passed, (sample.reference, report.error, spec.detail)


@pytest.mark.parametrize("name", BY_NAME)
def test_a_10mm_cube_fails_the_spec(name: str, pool: Any) -> None:
    """The trivial cube of genservice's task audit does not pass any family's spec."""
    sample = BY_NAME[name].sample(random.Random(1))
    cube = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n"
    assert not validate_cad(cube, pool, spec=sample.spec, options=OPTIONS).valid


@pytest.mark.parametrize("name", BY_NAME)
def test_programs_share_layout_and_construction(name: str) -> None:
    """Import, named parameters equal to params, then one fixed construction ending in result."""
    constructions = set()
    for sample in draws(BY_NAME[name], 30):
        source = sample.reference
        found = find_parameters(parse(source))
        assert {k: v.value for k, v in found.items()} == sample.params
        assert all(type(v.value) is type(sample.params[k]) for k, v in found.items())
        head, params, body = source.split("\n\n")
        assert head == "import cadquery as cq"
        assert params.splitlines() == [f"{k} = {v!r}" for k, v in sample.params.items()]
        assert body.rstrip("\n").splitlines()[-1].startswith("result = ")
        assert "#" not in source and "def " not in source
        assert len(source) <= 700 and len(source.splitlines()) <= 20
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
    """The same seed gives the same sample and the same task row."""
    family = BY_NAME[name]
    first, again = family.sample(random.Random(7)), family.sample(random.Random(7))
    assert first == again
    assert to_task(family, first) == to_task(family, again)
    expected_split = "ood" if family.held_out else to_task(family, first)["split"]
    assert to_task(family, first)["split"] == expected_split


def unstated_flanges(n: int) -> list[Any]:
    """Flange requests of seeds 0 .. n-1 that leave the bore and/or the bolt circle unstated."""
    flange = BY_NAME["flange"]
    return [flange.sample_unstated(random.Random(seed)) for seed in range(n)]  # type: ignore[attr-defined]


def test_unstated_flanges_build_and_pass_their_spec(pool: Any) -> None:
    """A flange request without a bore or bolt circle still has a sound reference."""
    for sample in unstated_flanges(8):
        report = validate_cad(sample.reference, pool, spec=sample.spec, options=OPTIONS)
        assert report.valid and report.checks["spec"].passed, (sample.reference, report.error)


def test_unstated_flanges_derive_what_the_request_leaves_out() -> None:
    """The request states every parameter but the unstated ones, which the program derives from
    the stated ones (bore 0.4 of the outside diameter, bolt circle midway across the ring)."""
    samples = unstated_flanges(60)
    assert {s.params["unstated"] for s in samples} == {
        "bore_d",
        "bolt_circle_d",
        "bore_d,bolt_circle_d",
    }
    assert len({s.prompt for s in samples}) >= 50
    for sample in samples:
        p = sample.params
        unstated = p["unstated"].split(",")
        found = {k: v.value for k, v in find_parameters(parse(sample.reference)).items()}
        assert found == {k: v for k, v in p.items() if k not in (*unstated, "unstated")}
        for name, value in found.items():
            assert mentions(sample.prompt, value), (sample.prompt, name)
        derived = {"bore_d": "0.4 * outer_d", "bolt_circle_d": "(outer_d + bore_d) / 2"}
        for name in unstated:
            assert f"\n{name} = {derived[name]}\n" in sample.reference
        if "bore_d" in unstated:
            assert p["bore_d"] == 0.4 * p["outer_d"]
            assert not re.search(r"\bbore\b|\bID\b|inner|inside", sample.prompt), sample.prompt
        if "bolt_circle_d" in unstated:
            assert p["bolt_circle_d"] == (p["outer_d"] + p["bore_d"]) / 2
            assert not re.search(r"PCD|circle", sample.prompt), sample.prompt


def test_the_journey_flange_is_one_of_its_phrasings() -> None:
    """ "a 60 mm flange with six M5 bolt holes, 8 mm thick" is how these requests read."""
    shapes = {
        re.sub(r"\d+(\.\d+)?|one|two|three|four|five|six|eight|ten|twelve", "N", s.prompt.lower())
        for s in unstated_flanges(300)
    }
    assert "a N mm flange with N mN bolt holes, N mm thick" in shapes
