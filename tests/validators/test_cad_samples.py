"""Valid scripts of every kind: correct verdicts, volumes, solid counts and bounding boxes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import expectation, sample_scripts
from validators.cad.validate import validate_cad
from validators.sandbox import SandboxPool


@pytest.mark.parametrize("path", sample_scripts(), ids=lambda p: p.stem)
def test_sample_is_valid_with_the_right_geometry(pool: SandboxPool, path: Path) -> None:
    expected = expectation(path)
    report = validate_cad(path.read_text(), pool)
    assert report.valid, report.error
    assert report.reward > 0.8  # printability and stability weigh in, without gating a part
    metrics = report.metrics
    assert metrics["volume_mm3"] == pytest.approx(expected["volume_mm3"], rel=1e-3)
    assert metrics["solids"] == expected["solids"]
    assert metrics["bbox_mm"] == pytest.approx(expected["bbox_mm"], abs=0.01)
    assert metrics["kind"] == expected["kind"]
    # The host's own measurement of the tessellation agrees with the exact B-rep volume.
    assert metrics["mesh_volume_mm3"] == pytest.approx(expected["volume_mm3"], rel=0.02)
    geometry = {"executes", "solid", "brep_valid", "watertight", "volume", "bbox"}
    plausibility = {"overhang", "wall_thickness", "build_volume", "stability"}
    assert set(report.checks) == geometry | plausibility
    assert all(report.checks[name].passed for name in geometry)


def test_samples_cover_the_modelling_operations() -> None:
    text = "\n".join(p.read_text() for p in sample_scripts())
    for operation in (
        "revolve(",
        "loft(",
        "sweep(",
        "shell(",
        "fillet(",
        "chamfer(",
        "cboreHole(",
        "polarArray(",
        "show_object(",
        "cq.Assembly(",
    ):
        assert operation in text, operation


def test_parameters_are_listed_and_overridable(pool: SandboxPool) -> None:
    source = (
        "import cadquery as cq\n"
        "length = 40.0\n"
        "width: float = 20.0\n"
        "holes = 2\n"
        "result = cq.Workplane().box(length, width, 5).faces('>Z').workplane()"
        ".rarray(length / (holes + 1), 1, holes, 1).hole(3)\n"
    )
    base = validate_cad(source, pool)
    assert base.valid and base.metrics["holes"] == 2
    assert base.parameters["length"] == {"value": 40.0, "type": "float", "line": 2}
    changed = validate_cad(source, pool, parameters={"length": "60", "holes": 4})
    assert changed.valid and changed.metrics["holes"] == 4
    assert changed.metrics["bbox_mm"][0] == pytest.approx(60.0)
    assert changed.parameters["length"]["value"] == 60.0


def test_self_intersecting_or_invalid_breps_are_caught(pool: SandboxPool) -> None:
    # Two overlapping boxes fused without a boolean: a compound whose solids intersect.
    source = (
        "import cadquery as cq\n"
        "a = cq.Solid.makeBox(10, 10, 10)\n"
        "b = cq.Solid.makeBox(10, 10, 10, pnt=cq.Vector(5, 5, 5))\n"
        "result = cq.Compound.makeCompound([a, b])\n"
    )
    report = validate_cad(source, pool)
    assert not report.valid
    assert not report.checks["solid"].passed  # two solids where a part should have one


def test_an_open_shell_made_into_a_solid_fails_brep_valid(pool: SandboxPool) -> None:
    source = (
        "import cadquery as cq\n"
        "box = cq.Workplane().box(10, 10, 10).val()\n"
        "result = cq.Solid.makeSolid(cq.Shell.makeShell(box.Faces()[:5]))\n"
    )
    report = validate_cad(source, pool)
    assert not report.valid
    check = report.checks["brep_valid"]
    assert not check.passed
    assert "BRepCheck" in check.detail["invalid_parts"][0]["reason"]
    assert not report.checks["watertight"].passed  # the host sees the missing face too
