"""Bent and leaning parts of the compositional grammar, and the furniture scenes: the programs
build what their spec and words say in the real sandbox, the boxes are the geometry's, the
requests read right, names are functions of the shape, and both stay opt-in."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from genservice.generation.asked import asked_items, task_items
from training.corpus import families as registry
from training.corpus.base import to_task
from training.corpus.compositional import Compositional, names_for
from training.corpus.furniture import Furniture, draw_params
from training.corpus.furniture import names_for as furniture_names
from training.corpus.grammar_bent import _swept_box, leaning_base, swept_base
from validators.cad.program import find_parameters, parse
from validators.cad.request import request_check
from validators.cad.validate import CadOptions, validate_cad

CAD_OPTIONS = CadOptions(printability=False, physics=False)  # as the task audit judges CAD
SCENE_OPTIONS = CadOptions(printability=False, physics=True)  # and scenes


def _bent_samples(n: int, prefix: str) -> list[Any]:
    """Compositional samples whose base is a swept bar or a leaning plate."""
    family, found, i = Compositional(), [], 0
    while len(found) < n:
        sample = family.sample(random.Random(f"{prefix}:{i}"))
        if sample.params["composition"].split("+")[0] in ("swept_tube", "swept_rod", "leaning"):
            found.append(sample)
        i += 1
    return found


def _said(value: float, prompt: str) -> bool:
    """Whether a length is in the request, in millimetres or centimetres."""
    return f"{value:g}" in prompt or f"{value / 10:g} cm" in prompt or f"{value / 10:g}cm" in prompt


def test_swept_box_is_the_bend_geometry() -> None:
    """A quarter bend reaches bend radius + half the bar both ways (as a 90° elbow measures);
    a half turn spans two bend radii plus the bar; straight runs add their length."""
    assert _swept_box(10, 40, 90, 0, 0) == [50.0, 20.0, 50.0]
    assert _swept_box(5, 30, 180, 0, 0) == [70.0, 10.0, 35.0]
    assert _swept_box(5, 30, 90, 20, 15) == [50.0, 10.0, 55.0]


def test_bent_and_leaning_draws_are_valid_in_the_sandbox(pool: Any) -> None:
    """Swept tubes and rods and leaning plates build one valid solid meeting their spec and the
    request check of their own words, through the real sandbox pool."""
    rows = [to_task(Compositional(), s) for s in _bent_samples(40, "bent-valid")]
    bases = {row["params"]["composition"].split("+")[0] for row in rows}
    assert bases == {"swept_tube", "swept_rod", "leaning"}

    def judge(row: dict[str, Any]) -> Any:
        return validate_cad(
            row["reference"], pool, spec=row["spec"], options=CAD_OPTIONS, request=task_items(row)
        )

    with ThreadPoolExecutor(2) as threads:
        reports = list(threads.map(judge, rows))
    failed = [(r["prompt"], p.error) for r, p in zip(rows, reports, strict=True) if not p.valid]
    assert not failed


def test_furniture_scenes_are_sound_in_the_sandbox(pool: Any) -> None:
    """Furniture scenes stand (physics on), have one solid per part and their spec's box."""
    family = Furniture()
    rows = [to_task(family, family.sample(random.Random(f"furniture:{i}"))) for i in range(16)]
    assert any("arm" in row["params"] for row in rows)
    assert any("back" not in row["params"] for row in rows)

    def judge(row: dict[str, Any]) -> Any:
        return validate_cad(
            row["reference"],
            pool,
            spec=row["spec"],
            domain="scene",
            options=SCENE_OPTIONS,
            request=task_items(row),
        )

    with ThreadPoolExecutor(2) as threads:
        reports = list(threads.map(judge, rows))
    failed = [(r["prompt"], p.error) for r, p in zip(rows, reports, strict=True) if not p.valid]
    assert not failed


def test_programs_are_parametric_and_requests_read_right() -> None:
    """Named parameters at the top are the shape's; the request names the part, says its bend,
    angle or parts, and what the request check reads from it is what the part measures."""
    for sample in _bent_samples(150, "bent-words"):
        found = find_parameters(parse(sample.reference))
        shape = {k: v for k, v in sample.params.items() if k not in ("composition", "name")}
        assert {k: v.value for k, v in found.items()} == shape
        assert sample.params["name"].lower() in sample.prompt.lower()
        base = sample.params["composition"].split("+")[0]
        said = (
            sample.params["bend_angle"]
            if base.startswith("swept_")
            else sample.params["lean_angle"]
        )
        assert f"{said:g}" in sample.prompt
        items = asked_items(sample.prompt)
        metrics = {"bbox_mm": sample.spec["bbox_mm"], "holes": 10_000, "solids": 1}
        metrics["through_holes"] = 10_000
        # Enough holes of every size the program names: a hole size read from the words must
        # be one of the program's own numbers.
        named = {float(v) for v in sample.params.values() if isinstance(v, int | float)}
        metrics["hole_diameters_mm"] = [[d] for d in sorted(named) if d > 0] * 100
        metrics["fill"] = 0.0  # hollow or not is judged on the real part (the sandbox test)
        if items:
            check = request_check(items, metrics)
            assert check is not None and check.passed, (sample.prompt, check and check.detail)
    family = Furniture()
    for i in range(200):
        sample = family.sample(random.Random(f"furniture-words:{i}"))
        p = sample.params
        for key in ("width", "depth", "height", "top", "leg", "back", "arm"):
            if key in p:
                assert _said(p[key], sample.prompt), (key, sample.prompt)
        items = asked_items(sample.prompt)
        if items:
            metrics = {"bbox_mm": sample.spec["bbox_mm"], "holes": 0, "solids": 9}
            check = request_check(items, metrics)
            assert check is not None and check.passed, (sample.prompt, check and check.detail)


def test_names_are_functions_of_the_shape_and_not_held_out_words() -> None:
    """The same shape gets the same name; no name is a held-out family's noun."""
    held_out = ("elbow", "bend", "chair", "phone", "tablet")
    for prefix in ("a", "b"):
        bent = _bent_samples(60, f"names-{prefix}")
        assert [s.params["name"] for s in bent] == [
            s.params["name"] for s in _bent_samples(60, f"names-{prefix}")
        ]
    for maker in (swept_base, leaning_base):
        for i in range(200):
            for name in names_for(maker(random.Random(i))):
                assert not any(word in name for word in held_out), name
    for i in range(200):
        for name in furniture_names(draw_params(random.Random(i))):
            assert not any(word in name for word in held_out), name


@pytest.mark.parametrize("name", ["compositional", "furniture"])
def test_grammar_families_are_opt_in(name: str) -> None:
    """Drawn only when named (or given a share): default corpora do not change."""
    assert name not in {f.name for f in registry.all_families()}
    assert name in {f.name for f in registry.all_families(opt_in=True)}
    assert registry.get_family(name).name == name
