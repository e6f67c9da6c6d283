"""`genservice render`, run as a user runs it: a script or a mesh in, a PNG out."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import trimesh
from PIL import Image

from exporters.samples import FOLDER

PLATE = (
    "import cadquery as cq\n"
    "length = 60\n"
    "result = cq.Workplane('XY').box(length, 30, 6).faces('>Z').workplane().hole(8)\n"
)


def _genservice(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "genservice", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _picture(path: Path) -> Image.Image:
    return Image.open(io.BytesIO(path.read_bytes()))


def test_a_script_renders_to_the_four_view_rig_and_again_to_the_same_bytes(tmp_path) -> None:
    script = tmp_path / "plate.py"
    script.write_text(PLATE)
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    done = _genservice("render", str(script), "-o", str(first), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["views"] == ["front", "top", "right", "iso"] and summary["verdict"] == "valid"
    assert _picture(first).size == (450, 450)
    assert _genservice("render", str(script), "-o", str(second)).returncode == 0
    assert first.read_bytes() == second.read_bytes()


def test_a_mesh_file_renders_with_chosen_views_size_and_style(tmp_path) -> None:
    mesh = tmp_path / "peg.stl"
    trimesh.creation.cylinder(5, 40).export(mesh)
    out = tmp_path / "peg.png"
    done = _genservice(
        "render", str(mesh), "-o", str(out), "--views", "front,iso", "--size", "64",
        "--style", "lines", "--columns", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _picture(out).size == (64, 130)


def test_a_scene_sample_renders(tmp_path) -> None:
    out = tmp_path / "table.png"
    done = _genservice(
        "render", str(FOLDER / "table_scene.py"), "-o", str(out), "--domain", "scene"
    )
    assert done.returncode == 0, done.stderr


def test_bad_input_is_refused_with_a_reason_and_writes_nothing(tmp_path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import cadquery as cq\nresult = cq.Workplane('XY').box(1, 1,\n")
    out = tmp_path / "x.png"
    done = _genservice("render", str(broken), "-o", str(out))
    assert done.returncode == 1 and "nothing to render" in done.stderr
    junk = tmp_path / "junk.stl"
    junk.write_bytes(b"solid nothing\nendsolid\n")
    done = _genservice("render", str(junk), "-o", str(out))
    assert done.returncode == 1 and "error:" in done.stderr
    for args, message in [
        (("--views", "sideways"), "unknown view"),
        (("--size", "9999"), "size"),
    ]:
        done = _genservice("render", str(broken), "-o", str(out), *args)
        assert done.returncode == 2 and message in done.stderr
    assert not out.exists()
