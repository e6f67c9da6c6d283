"""`genservice corpus look-alikes`: picture rows given the gallery part serving would show."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from genservice.cli import main
from genservice.generation.gallery import LOOK_ALIKE_MAX_CHARS
from tests.training.test_gallery import PROGRAMS, _corpus, _row
from training.corpus.images import draw_look, picture
from training.gallery import build_gallery

WIDE_PLATE = PROGRAMS["plate"].replace("length = 90.0", "length = 140.0")


@pytest.fixture(scope="module")
def gallery_model(tmp_path_factory: pytest.TempPathFactory, pool) -> Path:
    """A model folder whose gallery holds the four test parts."""
    folder = tmp_path_factory.mktemp("look-alikes")
    build_gallery(_corpus(folder, [_row(n) for n in PROGRAMS]), folder / "model" / "gallery",
                  pool, 1)  # fmt: skip
    return folder / "model"


def _pictured(folder: Path, program: str, name: str, pool) -> str:
    from PIL import Image

    from exporters.export import script_parts

    parts, _ = script_parts(program, pool)
    (folder / "pictures").mkdir(exist_ok=True)
    Image.fromarray(picture(parts, draw_look(random.Random(3)))).save(folder / "pictures" / name)
    return f"pictures/{name}"


def test_picture_rows_get_the_closest_other_part_scaled_to_their_words(
    gallery_model: Path, tmp_path: Path, pool, capsys
) -> None:
    tube = _pictured(tmp_path, PROGRAMS["tube"], "tube.png", pool)
    wide = _pictured(tmp_path, WIDE_PLATE, "wide.png", pool)
    rows = [
        {**_row("tube"), "id": "tube-pic", "prompt": "make this", "images": [tube]},
        {**_row("plate"), "id": "wide-pic", "prompt": "this part, 280 mm long",
         "reference": WIDE_PLATE, "images": [wide]},
        _row("plate"),  # no picture: as it was
        {**_row("tube"), "id": "edit-pic", "images": [tube], "previous_program": PROGRAMS["tube"],
         "instruction": "taller"},
    ]  # fmt: skip
    source = _corpus(tmp_path, rows)
    out = tmp_path / "elsewhere" / "with_look_alikes.jsonl"
    out.parent.mkdir()
    code = main(["corpus", "look-alikes", str(source), "-o", str(out),
                 "--model", str(gallery_model), "--workers", "2", "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["pictures"], summary["with_look_alike"]) == (4, 2, 2)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    by_id = {row["id"]: row for row in written}
    # The tube's own program is in the gallery: never shown its own answer, it gets another.
    tube_row = by_id["tube-pic"]
    assert tube_row["look_alike"] != PROGRAMS["tube"]
    assert tube_row["look_alike_from"] != "tube-train"
    # The wide plate is pictured; the gallery's plate looks most like it, scaled to 280 mm.
    plate_row = by_id["wide-pic"]
    assert plate_row["look_alike_from"] == "plate-train"
    assert "length = 280.0" in plate_row["look_alike"]
    assert "look_alike" not in by_id["plate-train"] and "look_alike" not in by_id["edit-pic"]
    # Picture paths now lead from the new file's folder to the same pictures.
    for row in (tube_row, plate_row, by_id["edit-pic"]):
        assert (out.parent / row["images"][0]).resolve().is_file()
    assert summary["of_the_same_kind"] == 1  # the plate; the tube was shown another kind


def test_a_look_alike_too_long_to_show_is_left_out_and_counted(
    gallery_model: Path, tmp_path: Path, pool, capsys
) -> None:
    import shutil

    from genservice.generation.gallery import Gallery, GalleryEntry

    long_model = tmp_path / "long"
    shutil.copytree(gallery_model, long_model)
    gallery = Gallery.load(long_model)
    assert gallery is not None
    padding = "# " + "x" * LOOK_ALIKE_MAX_CHARS + "\n"
    entries = [GalleryEntry(e.id, e.domain, e.family, padding + e.program, e.extent_mm)
               for e in gallery.entries]  # fmt: skip
    Gallery(entries, gallery.packed).save(long_model / "gallery", {"source": "test"})
    tube = _pictured(tmp_path, PROGRAMS["tube"], "tube.png", pool)
    source = _corpus(tmp_path, [{**_row("cone"), "prompt": "make this", "images": [tube]}])
    out = tmp_path / "out.jsonl"
    assert main(["corpus", "look-alikes", str(source), "-o", str(out), "--model",
                 str(long_model), "--json"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["with_look_alike"] == 0
    assert summary["skipped"]["look-alike too long"] == 1
    assert "look_alike" not in json.loads(out.read_text())


def test_bad_look_alike_requests_say_what_to_fix(tmp_path: Path, capsys) -> None:
    source = _corpus(tmp_path, [_row("plate")])
    no_gallery = tmp_path / "bare"
    no_gallery.mkdir()
    assert main(["corpus", "look-alikes", str(source), "-o", str(tmp_path / "o.jsonl"),
                 "--model", str(no_gallery)]) == 2  # fmt: skip
    assert "no gallery/" in capsys.readouterr().err
    assert main(["corpus", "look-alikes", str(source), "-o", str(source)]) == 2
    assert "new file" in capsys.readouterr().err
    assert main(["corpus", "look-alikes", str(tmp_path / "none.jsonl"), "-o", "x.jsonl"]) == 2


def test_an_evaluated_picture_is_shown_the_look_alike_serving_would_show(
    gallery_model: Path, tmp_path: Path, pool
) -> None:
    from types import SimpleNamespace

    from genservice.generation.gallery import Gallery
    from genservice.generation.loader import LoadedModel
    from training.sft import task_messages

    model = SimpleNamespace(reads_look_alikes=True, gallery=Gallery.load(gallery_model))
    model.look_alike = lambda *args: LoadedModel.look_alike(model, *args)  # type: ignore[arg-type]
    tube = _pictured(tmp_path, PROGRAMS["tube"], "tube.png", pool)
    row = {**_row("tube", "test"), "prompt": "make this", "images": [str(tmp_path / tube)]}
    text = task_messages(row, model)[1]["content"][-1]["text"]
    # At evaluation the test row's own part may be in the gallery: serving never excludes it.
    assert text == f"A part that looks like the picture:\n{PROGRAMS['tube'].strip()}\n\n" \
        "Request: make this"  # fmt: skip
    assert task_messages(row)[1]["content"][-1]["text"] == "make this"  # no model: plain
    model.reads_look_alikes = False
    assert task_messages(row, model)[1]["content"][-1]["text"] == "make this"

    # With a sandbox pool its gallery parts are built and checked first, as serving checks
    # them: the one that looks most like the picture once built is shown, whatever order the
    # coarse silhouettes gave.
    from training.evaluate import picture_target

    model.reads_look_alikes = True
    coarse = model.gallery.nearest
    model.gallery.nearest = lambda *args, **kw: list(reversed(coarse(*args, **kw)))
    assert model.gallery.nearest(picture_target(row), "cad", 8)[0].entry.program != PROGRAMS["tube"]
    text = task_messages(row, model, pool)[1]["content"][-1]["text"]
    assert text.startswith(f"A part that looks like the picture:\n{PROGRAMS['tube'].strip()}\n")
