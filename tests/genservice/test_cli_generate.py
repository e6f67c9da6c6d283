"""`genservice generate`, run as a user runs it, with a tiny random model built offline."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genservice.cli import main
from genservice.generation.sampler import PICTURE_TEMPERATURE, TEMPERATURE
from tests.genservice.generation.tiny_models import build_causal, build_llava

ROOT = Path(__file__).resolve().parents[2]
BOX = "import cadquery as cq\nwidth = 10.0\nresult = cq.Workplane('XY').box(20, width, 5)\n"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen2 causal LM: it writes garbage, fast."""
    return build_causal(tmp_path_factory.mktemp("models") / "tiny-random")


@pytest.fixture(autouse=True)
def _quiet_env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def _genservice(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENSERVICE_")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "genservice", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        check=False,
    )


def test_random_model_end_to_end_exits_1_with_its_report(model_dir, tmp_path):
    done = _genservice(
        "generate", "a box", "--model", str(model_dir), "--n", "2", "--seed", "3",
        "--max-new-tokens", "8", "--workers", "1", "--json", "-o", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["valid"] is False and result["report"]["valid"] is False
    assert result["report"]["error"]["kind"]
    # none valid, so the default repair round ran: two more candidates, fed the best one's error
    (repair,) = result["repairs"]
    assert repair["round"] == 1 and repair["error"]["kind"] and repair["candidates"] == 2
    assert sorted(c["round"] for c in result["candidates"]) == [0, 0, 1, 1]
    assert all(set(c) >= {"reward", "valid"} for c in result["candidates"])
    assert result["seed"] == 3 and result["model_id"] == "tiny-random"
    formats = {f["format"]: Path(f["path"]) for f in result["files"]}
    assert set(formats) == {"program", "report", "candidates"}
    assert formats["program"].read_text() == result["program"]
    assert json.loads(formats["report"].read_text()) == result["report"]
    assert "no valid candidate among 4" in done.stderr


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["generate", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "{missing}"], "does not exist"),
        (["--model", "{model}", "--image", "{png}"], "takes text only; drop --image"),
        (["--model", "{model}", "--edit", "{png}"], "--edit SCRIPT and --instruction"),
        (["--model", "{model}", "--n", "0"], "--n must be"),
        (["--model", "{model}", "--temperature", "-1"], "--temperature"),
        (["--model", "{model}", "--domain", "code"], "needs --tests FILE and --entry-point"),
        (["--model", "{model}", "--formats", "glb,obj"], "formats must be some of"),
        (["--model", "{model}", "--spec", "{missing}"], "cannot read spec"),
        (["--model", "{model}", "--image", "{missing}", "--edit", "{png}"], "--instruction"),
    ],
)
def test_usage_errors_exit_2(capsys, model_dir, tmp_path, args, message):
    png = tmp_path / "view.png"
    png.write_bytes(b"\x89PNG not really")
    values = {"model": str(model_dir), "missing": str(tmp_path / "absent"), "png": str(png)}
    code, out, err = _run(capsys, "a box", *(a.format(**values) for a in args))
    assert code == 2, err
    assert message in err and out == ""


def test_vlm_refuses_an_unreadable_image(capsys, tmp_path):
    folder = build_llava(tmp_path / "tiny-llava")
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    code, _, err = _run(capsys, "like this", "--model", str(folder), "--image", str(broken))
    assert code == 2 and "not a PNG or JPEG picture" in err


def test_missing_shipped_model_says_how_to_train_it(capsys, monkeypatch, tmp_path):
    import genservice.generation.loader as loader

    monkeypatch.setattr(loader, "DEFAULT_MODEL_DIR", tmp_path / "tiny")
    code, _, err = _run(capsys, "a box")
    assert code == 2
    assert "the shipped model is missing at" in err
    assert "genservice train sft --config training/configs/tiny.yaml" in err


class _Borrowed:
    """The session's warm pool, lent to the command (which would otherwise start its own)."""

    def __init__(self, pool):
        self.pool, self.size = pool, pool.size

    def run(self, *args, **kwargs):
        return self.pool.run(*args, **kwargs)

    def close(self):
        pass


def test_valid_best_is_exported_with_provenance(capsys, monkeypatch, model_dir, tmp_path, pool):
    """A model that writes a valid box (scripted): exit 0, exports and a manifest."""
    import genservice.cli.generate
    from genservice.generation import engine
    from genservice.generation.sampler import Completion

    monkeypatch.setattr(genservice.cli.generate, "open_pool", lambda *args: _Borrowed(pool))

    def scripted(
        loaded, messages, n, seed, max_new_tokens, temperature, top_p, images, progress,
        entry_point, greedy_first,
    ):  # fmt: skip
        return [Completion(text, (), 0.0, "stop") for text in ["oops(", BOX][:n]]

    monkeypatch.setattr(engine, "sample", scripted)
    code, out, err = _run(
        capsys, "a 20 x 10 x 5 box", "--model", str(model_dir), "--n", "2", "--seed", "5",
        "--formats", "glb,stl", "--json", "-o", str(tmp_path), "--device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["valid"] and result["program"] == BOX
    assert [c["valid"] for c in result["candidates"]] == [True, False]
    files = {f["format"]: Path(f["path"]) for f in result["files"]}
    assert {"program", "report", "candidates", "glb", "stl", "manifest"} == set(files)
    manifest = json.loads(files["manifest"].read_text())
    generation = manifest["generation"]
    weights = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    assert generation["model_id"] == "tiny-random"
    assert generation["weights_sha256"] == weights == result["weights_sha256"]
    assert generation["seed"] == 5 and generation["sampling"]["n"] == 2
    assert generation["sampling"]["temperature"] == TEMPERATURE  # words alone: the default
    assert generation["sampling"]["greedy_first"] is False  # words alone: every candidate sampled
    assert generation["prompt_sha256"] == hashlib.sha256(b"a 20 x 10 x 5 box").hexdigest()
    assert manifest["digital_source_type"].endswith("trainedAlgorithmicMedia")
    assert {entry["name"] for entry in manifest["files"]} == {"best.glb", "best.stl"}


def test_the_default_export_writes_a_preview_picture(
    capsys, monkeypatch, model_dir, tmp_path, pool
):
    """`generate -o DIR` writes preview.png (the four-view rig), listed in the manifest."""
    import io

    from PIL import Image

    import genservice.cli.generate
    from genservice.generation import engine
    from genservice.generation.sampler import Completion

    monkeypatch.setattr(genservice.cli.generate, "open_pool", lambda *args: _Borrowed(pool))
    monkeypatch.setattr(
        engine, "sample", lambda loaded, messages, n, **rest: [Completion(BOX, (), 0.0, "stop")] * n
    )
    code, out, err = _run(
        capsys, "a 20 x 10 x 5 box", "--model", str(model_dir), "--n", "1", "--json",
        "-o", str(tmp_path), "--device", "cpu", "--repair", "0",
    )  # fmt: skip
    assert code == 0, err
    files = {f["format"]: Path(f["path"]) for f in json.loads(out)["files"]}
    assert files["png"] == tmp_path / "preview.png"
    picture = Image.open(io.BytesIO(files["png"].read_bytes()))
    assert picture.format == "PNG" and picture.size == (450, 450)
    manifest = json.loads(files["manifest"].read_text())
    assert "preview.png" in {entry["name"] for entry in manifest["files"]}


def test_generate_help_loads_neither_torch_nor_transformers():
    probe = (
        "import contextlib, io, json, sys\n"
        "import genservice.cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    genservice.cli.main(['generate', '--help'])\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert set(json.loads(run.stdout)).isdisjoint({"torch", "transformers", "cadquery"})


def test_a_test_split_render_comes_back_as_the_part_it_shows(tmp_path):
    """A user renders a part, hands the picture to `generate --image` and gets that part back."""
    from tests.pictures import ROUND_TRIP_IOU, iou_to, pictured_test_part

    program, mesh, _ = pictured_test_part(tmp_path / "ref")
    picture = tmp_path / "screenshot.png"
    rendered = _genservice("render", str(program), "-o", str(picture))
    assert rendered.returncode == 0, rendered.stderr
    out = tmp_path / "out"
    done = _genservice(
        "generate", "make this", "--image", str(picture), "--n", "4", "--seed", "0",
        "--formats", "stl", "--max-new-tokens", "600", "-o", str(out), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["valid"], result["message"]
    assert "image_match" in result["report"]["checks"], "candidates are compared with the picture"
    assert result["sampling"]["temperature"] == PICTURE_TEMPERATURE  # a new part from a picture
    assert result["sampling"]["greedy_first"] is True  # its first candidate the greedy reading
    # The shipped model reads look-alikes: it was shown the gallery part its checks chose.
    shown = result["look_alike"]["retrieved_from"]
    assert shown in {c.get("retrieved_from") for c in result["candidates"]}
    assert iou_to(mesh, next(out.glob("*.stl"))) >= ROUND_TRIP_IOU
