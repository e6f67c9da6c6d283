"""`genservice export` and `genservice provenance verify`, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import trimesh

from exporters import gltf_validator
from exporters.parts import PartMesh
from exporters.samples import FOLDER
from exporters.splat import read_ply, read_splat_glb, read_spz
from exporters.splat_render import silhouette_iou

ALL_FORMATS = "glb,step,stl,3mf,ply,spz,splat-glb,png"


def _genservice(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENSERVICE_")}
    env["SOURCE_DATE_EPOCH"] = "1764460800"  # 2025-11-30: exports become reproducible
    return subprocess.run(
        [sys.executable, "-m", "genservice", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
        check=False,
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[Path, dict]:
    """The coloured table scene exported to every format, with --json output."""
    out = tmp_path_factory.mktemp("table")
    done = _genservice(
        "export", str(FOLDER / "table_scene.py"), "--format", ALL_FORMATS, "-o", str(out), "--json"
    )
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)


def test_export_writes_every_format_and_a_manifest(table):
    _, result = table
    formats = {f["format"] for f in result["files"]}
    assert formats == set(ALL_FORMATS.split(","))
    assert result["report"]["valid"] is True
    manifest = json.loads(Path(result["manifest"]).read_text())
    assert manifest["created"] == "2025-11-30T00:00:00Z"
    assert {f["name"] for f in manifest["files"]} == {Path(f["path"]).name for f in result["files"]}
    for entry in result["files"]:
        verified = _genservice("provenance", "verify", entry["path"], result["manifest"])
        assert verified.returncode == 0, verified.stderr
        assert verified.stdout.startswith("OK")


def test_provenance_verify_fails_on_a_changed_byte(table, tmp_path):
    out, result = table
    original = out / "table_scene.step"
    altered = tmp_path / original.name
    data = bytearray(original.read_bytes())
    data[len(data) // 2] ^= 0x20
    altered.write_bytes(bytes(data))
    done = _genservice("provenance", "verify", str(altered), result["manifest"])
    assert done.returncode == 1
    assert "altered" in done.stderr


def test_splat_files_reproduce_the_exported_mesh(table):
    out, _ = table
    stl = trimesh.load(str(out / "table_scene.stl"))
    part = PartMesh(
        "table",
        np.asarray(stl.vertices, dtype=np.float32),
        np.asarray(stl.faces, dtype=np.int32),
    )
    from_glb = read_splat_glb((out / "table_scene.splat.glb").read_bytes())
    from_ply = read_ply((out / "table_scene.ply").read_bytes())
    from_spz = read_spz((out / "table_scene.spz").read_bytes())
    assert from_glb.count == from_ply.count == from_spz.count > 1000
    assert np.allclose(from_glb.means, from_ply.means, atol=1e-3)
    # Splats overshoot the outline by about a pixel at 256 px, which weighs on the 6 mm legs;
    # a wrong axis or unit gives < 0.61 (see test_splat.py).
    scores = silhouette_iou(from_glb, [part], views=6)
    assert min(scores) >= 0.85 and float(np.mean(scores)) >= 0.9, scores
    reports = gltf_validator.validate_files(
        [out / "table_scene.splat.glb"], overrides=gltf_validator.SPLAT_OVERRIDES
    )
    assert (reports[0].errors, reports[0].warnings) == (0, 0), reports[0].messages
    assert gltf_validator.validate_files([out / "table_scene.glb"])[0].clean


def test_the_same_script_exports_the_same_bytes(table, tmp_path):
    out, _ = table
    done = _genservice(
        "export", str(FOLDER / "table_scene.py"), "--format", ALL_FORMATS, "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    for path in out.iterdir():
        if path.name.endswith(".manifest.json"):
            continue  # it records the run's duration
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_an_invalid_script_exports_nothing_and_says_why(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import cadquery as cq\nresult = cq.Workplane().box(1, 2)\n")
    out = tmp_path / "out"
    done = _genservice("export", str(script), "-o", str(out))
    assert done.returncode == 1
    assert "not exported" in done.stderr and "box()" in done.stderr
    assert "line 2" in done.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_a_part_that_misses_its_request_is_exported_but_never_called_valid(tmp_path):
    script = tmp_path / "block.py"
    script.write_text(
        "import cadquery as cq\nheight = 10\nresult = cq.Workplane().box(20, 15, height)\n"
    )
    missed = _genservice(
        "export",
        str(script),
        "-o",
        str(tmp_path / "a"),
        "--request",
        "a block 50 mm tall",
        "--json",
    )
    assert missed.returncode == 1, missed.stderr
    result = json.loads(missed.stdout)
    assert result["verdict"] == "not as asked"
    manifest = json.loads(Path(result["manifest"]).read_text())
    assert manifest["verdict"] == "not as asked" and manifest["report"]["valid"] is False
    assert "asked 50 mm" in manifest["report"]["checks"]["request"]["detail"]["summary"]
    assert {f["format"] for f in result["files"]} == {"glb", "step", "stl"}
    met = _genservice(
        "export",
        str(script),
        "-o",
        str(tmp_path / "b"),
        "--request",
        "a block 10 mm tall",
        "--json",
    )
    assert met.returncode == 0, met.stderr
    assert json.loads(Path(json.loads(met.stdout)["manifest"]).read_text())["verdict"] == "valid"


def test_usage_errors_exit_2_with_a_message(tmp_path):
    script = FOLDER / "flange.py"
    cases = {
        ("export", str(script), "--format", "obj"): "formats must be some of",
        ("export", str(tmp_path / "missing.py")): "no such file",
        ("export", str(script), "--param", "oops"): "NAME=VALUE",
        ("export", str(script), "--splats", "0"): "splat count",
        ("export", str(script), "--splat-refine", "-3"): "refinement steps",
    }
    if not torch.cuda.is_available():
        cases[("export", str(script), "--splat-refine", "5", "--device", "cuda")] = "no CUDA"
    for args, message in cases.items():
        done = _genservice(*args, "-o", str(tmp_path / "out"))
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)


def test_splat_refinement_is_reported_in_the_manifest_and_on_the_terminal(tmp_path):
    script = tmp_path / "peg.py"
    script.write_text(
        "import cadquery as cq\n"
        "result = cq.Workplane().box(30, 20, 6).faces('>Z').workplane().circle(4).extrude(8)\n"
    )
    args = ("export", str(script), "--format", "ply", "--splats", "400", "--splat-refine", "4")
    done = _genservice(*args, "-o", str(tmp_path / "out"), "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert "splats   refined 4 steps on cpu (torch" in done.stdout
    as_json = _genservice(*args, "-o", str(tmp_path / "again"), "--device", "cpu", "--json")
    refined = json.loads(as_json.stdout)["splat_refinement"]
    assert refined["steps"] == 4 and refined["count"] == 400 and refined["backend"] == "torch"
    manifest = json.loads(Path(json.loads(as_json.stdout)["manifest"]).read_text())
    assert manifest["export_checks"]["splat_refinement"]["after"] == refined["after"]
    assert read_ply((tmp_path / "again/peg.ply").read_bytes()).count == 400
