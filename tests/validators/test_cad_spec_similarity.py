"""Spec checks and similarity to a reference (.py, .stl, .step) through the real sandbox."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh

from validators.cad.validate import (
    ReferenceLoadError,
    check_spec,
    load_reference,
    validate_cad,
)
from validators.sandbox import SandboxPool

PLATE = """\
length = 40.0
width = 30.0
height = 10.0
hole_d = 4.0
import cadquery as cq
result = (
    cq.Workplane("XY").box(length, width, height)
    .faces(">Z").workplane()
    .rect(30.0, 20.0, forConstruction=True).vertices()
    .hole(hole_d)
)
"""
PLATE_VOLUME = 40 * 30 * 10 - 4 * math.pi * 2.0**2 * 10
PLATE_SPEC = {
    "bbox_mm": [40, 30, 10],
    "volume_mm3": PLATE_VOLUME,
    "holes": 4,
    "solids": 1,
    "faces": 10,
}

BOX = "import cadquery as cq\nresult = cq.Workplane('XY').box(40.0, 30.0, 10.0)\n"
CYLINDER = "import cadquery as cq\nresult = cq.Workplane('XY').cylinder(10.0, 15.0)\n"


def test_a_matching_spec_passes(pool: SandboxPool) -> None:
    report = validate_cad(PLATE, pool, spec=PLATE_SPEC)
    assert report.valid, report.error
    spec = report.checks["spec"]
    assert spec.passed and spec.score == 1.0
    assert set(spec.detail["items"]) == {"bbox_mm", "volume_mm3", "holes", "solids", "faces"}
    assert all(item["ok"] for item in spec.detail["items"].values())
    assert report.metrics["holes"] == 4
    assert report.metrics["volume_mm3"] == pytest.approx(PLATE_VOLUME, rel=1e-6)


def test_a_wrong_spec_fails_with_detail_per_item(pool: SandboxPool) -> None:
    spec = {
        "bbox_mm": [40, 30, 12],
        "volume_mm3": PLATE_VOLUME * 1.1,
        "holes": 3,
        "faces": 9,
        "solids": 1,
    }
    report = validate_cad(PLATE, pool, spec=spec)
    assert not report.valid
    assert report.error is not None and report.error.kind == "check_failed"
    assert "spec" in report.error.message
    check = report.checks["spec"]
    assert not check.passed and 0 < check.score < 1
    items = check.detail["items"]
    assert {name for name, item in items.items() if not item["ok"]} == {
        "bbox_mm",
        "volume_mm3",
        "holes",
        "faces",
    }
    assert items["solids"]["ok"]
    assert (items["holes"]["requested"], items["holes"]["measured"]) == (3, 4)
    assert items["bbox_mm"]["measured"] == pytest.approx([40, 30, 10])
    assert items["volume_mm3"]["measured"] == pytest.approx(PLATE_VOLUME, rel=1e-6)
    # The geometry itself is fine: only the spec failed, and the reward says so.
    assert all(report.checks[name].passed for name in ("executes", "solid", "watertight"))
    assert 0 < report.reward < 1


def test_any_orientation_compares_sorted_dimensions(pool: SandboxPool) -> None:
    turned = {"bbox_mm": [10, 40, 30]}
    assert not validate_cad(BOX, pool, spec=turned).checks["spec"].passed
    report = validate_cad(BOX, pool, spec={**turned, "any_orientation": True})
    assert report.checks["spec"].passed and report.valid


def test_spec_tolerance_is_relative(pool: SandboxPool) -> None:
    near = {"bbox_mm": [40.5, 30, 10]}  # 1.25 % off in x
    assert validate_cad(BOX, pool, spec={**near, "tolerance": 0.02}).checks["spec"].passed
    assert not validate_cad(BOX, pool, spec={**near, "tolerance": 0.005}).checks["spec"].passed


@pytest.mark.parametrize(
    "spec",
    [
        {"colour": "red"},
        {"bbox_mm": [40, 30]},
        {"bbox_mm": [40, 30, -1]},
        {"bbox_mm": [40, 30, True]},
        {"bbox_mm": [40, 30, math.nan]},
        {"bbox_mm": "40x30x10"},
        {"volume_mm3": 0},
        {"volume_mm3": "12"},
        {"volume_mm3": math.inf},
        {"holes": -1},
        {"holes": 2.5},
        {"faces": "6"},
    ],
)
def test_check_spec_rejects_bad_specs(spec: dict) -> None:
    with pytest.raises(ValueError):
        check_spec(spec)


def test_check_spec_returns_a_good_spec() -> None:
    spec = {**PLATE_SPEC, "tolerance": 0.01, "any_orientation": True}
    assert check_spec(spec) == spec


def test_a_script_matches_itself_as_a_py_reference(pool: SandboxPool, tmp_path: Path) -> None:
    path = tmp_path / "reference.py"
    path.write_text(PLATE)
    reference = load_reference(path, pool)
    assert reference.is_watertight
    report = validate_cad(PLATE, pool, reference=reference)
    assert report.valid, report.error
    assert report.checks["similarity"].passed
    assert report.metrics["iou"] > 0.99
    assert 0 <= report.metrics["chamfer_x1000"] < 1


def test_an_stl_box_of_the_same_size_matches(pool: SandboxPool, tmp_path: Path) -> None:
    path = tmp_path / "box.stl"
    box = trimesh.creation.box(extents=(40, 30, 10))
    box.apply_translation((100, -50, 7))  # position does not matter after normalisation
    box.export(path)
    report = validate_cad(BOX, pool, reference=load_reference(path, pool))
    assert report.checks["similarity"].passed
    assert report.metrics["iou"] > 0.99


def test_a_step_box_of_the_same_size_matches(pool: SandboxPool, tmp_path: Path) -> None:
    cq = pytest.importorskip("cadquery")
    path = tmp_path / "box.step"
    cq.exporters.export(cq.Workplane("XY").box(40, 30, 10), str(path))
    reference = load_reference(path, pool)
    assert reference.volume == pytest.approx(12_000, rel=1e-3)
    report = validate_cad(BOX, pool, reference=reference)
    assert report.checks["similarity"].passed
    assert report.metrics["iou"] > 0.99


def test_a_different_shape_scores_clearly_lower(pool: SandboxPool, tmp_path: Path) -> None:
    path = tmp_path / "box.stl"
    trimesh.creation.box(extents=(40, 30, 10)).export(path)
    report = validate_cad(CYLINDER, pool, reference=load_reference(path, pool))
    similarity = report.checks["similarity"]
    assert not similarity.passed
    assert report.metrics["iou"] < 0.8
    assert similarity.score == pytest.approx(report.metrics["iou"])
    assert not report.valid
    assert report.error is not None and "similarity" in report.error.message


@pytest.mark.parametrize(
    "name",
    ["missing.py", "missing.step", "missing.stl"],
)
def test_a_missing_reference_is_a_reference_load_error(
    pool: SandboxPool, tmp_path: Path, name: str
) -> None:
    with pytest.raises(ReferenceLoadError, match="missing"):
        load_reference(tmp_path / name, pool)


def test_a_reference_with_an_unknown_suffix_is_refused(pool: SandboxPool, tmp_path: Path) -> None:
    path = tmp_path / "shape.obj"
    path.write_text("v 0 0 0\n")
    with pytest.raises(ReferenceLoadError, match=r"\.obj"):
        load_reference(path, pool)


@pytest.mark.parametrize(
    ("name", "text"),
    [("broken.py", "result = 42\n"), ("crash.py", "1 / 0\n"), ("garbage.step", "not a step file")],
)
def test_a_reference_that_builds_no_shape_is_a_reference_load_error(
    pool: SandboxPool, tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ReferenceLoadError, match="did not build a shape"):
        load_reference(path, pool)


def test_a_syntax_error_is_reported_without_running(pool: SandboxPool) -> None:
    report = validate_cad("width = 1.0\nresult = (\n", pool)
    assert not report.valid
    assert report.reward == 0.0
    assert report.error is not None
    assert (report.error.kind, report.error.line) == ("syntax", 2)
    assert report.checks["executes"].detail == {"stage": "parse"}


def test_a_parameter_override_changes_the_geometry(pool: SandboxPool) -> None:
    report = validate_cad(
        PLATE, pool, parameters={"height": "5", "hole_d": 0.001}, spec={"bbox_mm": [40, 30, 5]}
    )
    assert report.valid, report.error
    assert report.metrics["volume_mm3"] == pytest.approx(40 * 30 * 5, rel=1e-4)
    assert report.parameters["height"] == {"value": 5.0, "type": "float", "line": 3}


def test_broken_stl_references_are_refused_or_repaired(tmp_path: Path) -> None:
    empty = tmp_path / "empty.stl"
    empty.write_bytes(b"")
    with pytest.raises(ReferenceLoadError):
        load_reference(empty, None)  # type: ignore[arg-type]  # STL never needs the sandbox
    open_box = trimesh.creation.box((10, 10, 10))
    open_box.update_faces(np.arange(len(open_box.faces) - 1))
    leaky = tmp_path / "open.stl"
    open_box.export(leaky)
    with pytest.raises(ReferenceLoadError, match="closed"):
        load_reference(leaky, None)  # type: ignore[arg-type]
    inverted = trimesh.creation.box((10, 10, 10))
    inverted.invert()
    inside_out = tmp_path / "inverted.stl"
    inverted.export(inside_out)
    assert load_reference(inside_out, None).volume == pytest.approx(1000.0)  # type: ignore[arg-type]


def test_check_spec_rejects_bad_tolerance_and_flags() -> None:
    for bad in (
        {"tolerance": "abc"},
        {"tolerance": -0.1},
        {"tolerance": float("nan")},
        {"any_orientation": "no"},
        {"solids": True},
    ):
        with pytest.raises(ValueError):
            check_spec(bad)


L_PLATE = (
    "import cadquery as cq\n"
    "result = cq.Workplane('XY').box(40.0, 30.0, 6.0).union("
    "cq.Workplane('XY').box(6.0, 30.0, 30.0).translate((17.0, 0, 12.0)))\n"
)


def test_similarity_takes_any_orientation_from_the_spec(pool: SandboxPool, tmp_path: Path) -> None:
    """An L part modelled turned on its side matches its reference only when the spec says the
    words do not fix its orientation (then at the best of 24 axis turns, never a mirror)."""
    path = tmp_path / "l.stl"
    built = validate_cad(L_PLATE, pool)
    assert built.valid
    upright = trimesh.creation.box(extents=(40, 30, 6))
    wall = trimesh.creation.box(extents=(6, 30, 30))
    wall.apply_translation((17, 0, 12))
    shape = trimesh.boolean.union([upright, wall], engine="manifold")
    shape.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, (1, 0, 0)))
    shape.export(path)
    reference = load_reference(path, pool)
    fixed = validate_cad(L_PLATE, pool, reference=reference)
    assert fixed.metrics["iou"] < 0.8
    spec = {"bbox_mm": [40, 30, 30], "any_orientation": True}
    free = validate_cad(L_PLATE, pool, reference=reference, spec=spec)
    assert free.metrics["iou"] > 0.99
    assert "24 axis turns" in free.checks["similarity"].detail["normalisation"]
