"""Image tasks: references drawn as people photograph them, deterministic, cached, audited."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from PIL import Image

from genservice.task_audit import image_problems
from training.corpus.images import (
    NO_WORDS,
    STYLES,
    draw_look,
    drawable,
    image_spec,
    image_tasks,
    image_words,
    plan_images,
    write_image_corpus,
)

PLATE = (
    "import cadquery as cq\n\nlength = 60.0\nwidth = 30.0\nthickness = 6.0\n\n"
    "result = cq.Workplane('XY').box(length, width, thickness).faces('>Z').workplane().hole(8)\n"
)
ROWS = [
    {
        "id": "plate-1",
        "domain": "cad",
        "family": "plate_holes",
        "split": "train",
        "prompt": "a 60 x 30 x 6 plate with an 8 mm hole",
        "reference": PLATE,
        "params": {"length": 60.0},
        "spec": {"bbox_mm": [60.0, 30.0, 6.0], "volume_mm3": 10498.4, "holes": 1, "solids": 1},
    },
    {
        "id": "broken-1",
        "domain": "cad",
        "family": "plate_holes",
        "split": "test",
        "prompt": "a part",
        "reference": "import cadquery as cq\nresult = cq.Workplane('XY').box(1, 1,\n",
        "spec": {"solids": 1},
    },
    {"id": "code-1", "domain": "code", "family": "primes", "split": "train", "prompt": "primes"},
    {**{"id": "plate-1-edit", "edit": True}, "domain": "cad", "reference": PLATE},
]


def _write_source(folder: Path) -> Path:
    source = folder / "tasks.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return source


def test_looks_vary_and_repeat_by_seed() -> None:
    looks = [draw_look(random.Random(f"s:{k}")) for k in range(200)]
    assert {look.style for look in looks} == set(STYLES)
    assert {look.views for look in looks} == {"orbit", "rig"}
    assert len({look.color for look in looks}) > 3 and len({look.size for look in looks}) > 3
    assert draw_look(random.Random("s:7")) == looks[7]


def test_an_evaluation_may_ask_for_every_picture_to_be_the_rig() -> None:
    """A multi-view evaluation draws every part with the four-view rig; the default mix keeps
    its one-view pictures, and the share never changes which rows are drawn."""
    rows = [dict(ROWS[0], id=f"part-{k}") for k in range(40)]
    rig = [plan_images(row, 3, 1, 0.5, rig_share=1.0) for row in rows]
    mixed = [plan_images(row, 3, 1, 0.5) for row in rows]
    assert [bool(plans) for plans in rig] == [bool(plans) for plans in mixed]
    assert all(plan[1].views == "rig" for plans in rig for plan in plans)
    assert {plan[1].views for plans in mixed for plan in plans} == {"orbit", "rig"}
    none = [plan_images(row, 3, 1, 0.5, rig_share=0.0) for row in rows]
    assert all(plan[1].views == "orbit" for plans in none for plan in plans)
    with pytest.raises(ValueError, match="rig"):
        next(image_tasks(rows, Path("."), 0, 1, 1.0, None, 1, rig_share=1.5))


def test_words_give_a_size_or_none_and_the_spec_follows() -> None:
    rng = random.Random(0)
    seen = {}
    for _ in range(200):
        words, sized = image_words(ROWS[0], rng)
        seen[sized] = words
    assert set(seen) == {"none", "across", "bbox"}
    assert seen["none"] in NO_WORDS
    assert "60" in seen["across"] and "30" not in seen["across"]
    assert all(size in seen["bbox"] for size in ("60", "30", "6"))
    spec = ROWS[0]["spec"]
    assert image_spec(spec, "bbox") == spec
    # A picture has no scale: without sizes in the words, the spec keeps the counts only.
    assert image_spec(spec, "none") == {"holes": 1, "solids": 1}


def test_only_programs_of_parts_and_scenes_are_drawn() -> None:
    assert [drawable(row) for row in ROWS] == [True, True, False, False]
    assert plan_images(ROWS[0], 0, 2, 0.0) == []
    assert len(plan_images(ROWS[0], 0, 2, 1.0)) == 2


def test_a_task_may_show_its_part_from_several_sides() -> None:
    """With more views a task's first picture is the one it has alone, and each other one is
    from another side (60 degrees round at least) in the same style; a rig stays alone."""
    alone = plan_images(ROWS[0], 5, 3, 1.0)
    several = plan_images(ROWS[0], 5, 3, 1.0, views=3)
    assert [plan[:4] for plan in several] == [plan[:4] for plan in alone]
    for path, look, _, _, more in several:
        if look.views == "rig":
            assert more == ()
            continue
        assert len(more) == 2 and len({path, *(other for other, _ in more)}) == 3
        for _, other in more:
            turn = abs((other.azimuth - look.azimuth + 180) % 360 - 180)
            assert turn >= 59.9 and 12 <= other.elevation <= 65
            assert (other.style, other.color, other.background) == (look.style, look.color,
                                                                    look.background)  # fmt: skip


def test_an_image_corpus_is_deterministic_cached_and_audited(tmp_path: Path, pool) -> None:
    source = _write_source(tmp_path)
    out = tmp_path / "out" / "images.jsonl"
    out.parent.mkdir()
    first = write_image_corpus(source, out, 3, 2, 1.0, pool, 1, progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [
        "plate-1", "plate-1-image-0", "plate-1-image-1", "broken-1", "code-1", "plate-1-edit",
    ]  # fmt: skip
    assert first.image_rows == 2 and first.stats.failed == 1
    assert "broken-1" in first.stats.failures[0]
    images = [r for r in rows if r.get("image")]
    for row in images:
        assert row["split"] == "train" and row["source_prompt"] == ROWS[0]["prompt"]
        assert row["reference"] == PLATE and row["look"]["style"] in STYLES
        assert image_problems(row, out.parent) == []
        with Image.open(out.parent / row["images"][0]) as picture:
            assert picture.mode == "RGB" and min(picture.size) >= 96
    pictures = {r["images"][0]: (out.parent / r["images"][0]).read_bytes() for r in images}
    again = write_image_corpus(source, out, 3, 2, 1.0, pool, 1, progress=False)
    assert again.stats.cached == 2 and [json.loads(x) for x in out.read_text().splitlines()] == rows
    for name in pictures:
        (out.parent / name).unlink()
    write_image_corpus(source, out, 3, 2, 1.0, pool, 1, progress=False, images_only=True)
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [
        "plate-1-image-0", "plate-1-image-1",
    ]  # fmt: skip
    assert {name: (out.parent / name).read_bytes() for name in pictures} == pictures
    write_image_corpus(source, out, 3, 2, 1.0, pool, 1, progress=False, images_only=True, views=2)
    two = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["images"][0] for r in two] == list(pictures)  # the same first pictures
    for row in two:
        assert len(row["images"]) == (1 if row["look"]["views"] == "rig" else 2)
        assert image_problems(row, out.parent) == []


def test_the_audit_names_a_missing_or_broken_picture(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"not a picture")
    Image.new("RGB", (4, 4)).save(tmp_path / "tiny.png")
    task = {"images": ["gone.png", "bad.png", "tiny.png"]}
    problems = image_problems(task, tmp_path)
    assert "gone.png is missing" in problems[0]
    assert "bad.png does not decode" in problems[1]
    assert "too small" in problems[2]
    assert image_problems({"images": []}, tmp_path) == [
        "images must be a non-empty list of picture paths"
    ]
