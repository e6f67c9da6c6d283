"""The picture gallery: train-split programs drawn once, found again from a photo-like picture."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from genservice.generation.engine import GenerationRequest, retrieve_programs
from genservice.generation.gallery import (
    Gallery,
    GalleryEntry,
    gallery_candidates,
    gallery_views,
    size_factor,
)
from genservice.generation.image_match import Pictures, Target
from training.corpus.images import draw_look, picture
from training.gallery import build_gallery

HEADER = "import cadquery as cq\n\n"
PROGRAMS = {
    "plate": HEADER + "length = 90.0\nwidth = 40.0\nthickness = 5.0\n\nresult = "
    "cq.Workplane('XY').box(length, width, thickness)\n",
    "tube": HEADER + "diameter = 30.0\nheight = 80.0\nbore = 18.0\n\nresult = "
    "cq.Workplane('XY').circle(diameter / 2).circle(bore / 2).extrude(height)\n",
    "cone": HEADER + "base = 60.0\nheight = 50.0\n\nresult = cq.Workplane('XY').circle(base / 2)"
    ".workplane(offset=height).circle(2).loft()\n",
    "ell": HEADER + "leg = 60.0\nthickness = 8.0\nwidth = 30.0\n\nresult = cq.Workplane('XZ')"
    ".polyline([(0, 0), (leg, 0), (leg, thickness), (thickness, thickness), (thickness, leg),"
    " (0, leg)]).close().extrude(width)\n",
}


def _row(name: str, split: str = "train", domain: str = "cad") -> dict:
    return {"id": f"{name}-{split}", "domain": domain, "family": name, "split": split,
            "prompt": f"a {name}", "reference": PROGRAMS[name]}  # fmt: skip


def _corpus(folder: Path, rows: list[dict]) -> Path:
    source = folder / "tasks.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return source


def test_a_gallery_finds_the_pictured_part_and_never_holds_a_test_row(tmp_path: Path, pool) -> None:
    rows = [_row(name) for name in PROGRAMS] + [_row("plate", "test")]
    rows[[r["family"] for r in rows].index("tube")]["params"] = {"composition": "turned_tube"}
    rows.append({**_row("tube"), "id": "tube-again"})  # the same program twice: one entry
    rows.append({"id": "code-1", "domain": "code", "family": "primes", "split": "train"})
    source = _corpus(tmp_path, rows)
    out = tmp_path / "model" / "gallery"
    built, stats = build_gallery(source, out, pool, 1, limit=0, seed=0)
    assert sorted(e.id for e in built.entries) == sorted(f"{n}-train" for n in PROGRAMS)
    assert stats.failed == 0
    loaded = Gallery.load(tmp_path / "model")
    assert loaded is not None and len(loaded) == len(PROGRAMS)
    assert loaded.packed.shape[1:] == (len(gallery_views()), 2, 72)
    plate = next(e for e in loaded.entries if e.family == "plate")
    assert plate.extent_mm == pytest.approx((90.0, 40.0, 5.0))  # measured when it was drawn
    tube = next(e for e in loaded.entries if e.family == "tube")
    assert (plate.composition, tube.composition) == (None, "turned_tube")  # as the row says

    from exporters.export import script_parts

    rng = random.Random(5)
    for name in PROGRAMS:  # each drawn as the image corpus draws a photo: a random look
        parts, _ = script_parts(PROGRAMS[name], pool)
        target = Target(picture(parts, draw_look(rng)))
        found = loaded.nearest(target, "cad", k=2)
        assert found[0].entry.family == name, (name, found)
        assert found[0].score > found[1].score
        # Two photographs of the part: each entry scored against both, on average.
        other = Target(picture(parts, draw_look(rng)))
        both = loaded.nearest(Pictures([target, other]), "cad", k=2)
        assert both[0].entry.family == name, (name, both)
        alone = {r.entry.id: r.score for r in loaded.nearest(other, "cad", k=len(PROGRAMS))}
        first = {r.entry.id: r.score for r in loaded.nearest(target, "cad", k=len(PROGRAMS))}
        assert both[0].score == pytest.approx((first[both[0].entry.id] +
                                               alone[both[0].entry.id]) / 2, abs=1e-3)  # fmt: skip
    assert loaded.nearest(target, "scene", k=2) == []  # another domain has no entries here


def test_a_failed_build_keeps_the_old_gallery_and_says_why(tmp_path: Path, pool) -> None:
    out = tmp_path / "gallery"
    build_gallery(_corpus(tmp_path, [_row("plate")]), out, pool, 1)
    before = (out / "entries.jsonl.gz").read_bytes()
    broken = {**_row("plate"), "id": "broken", "reference": HEADER + "result = cq.Workplane(\n"}
    with pytest.raises(ValueError, match="could be drawn"):
        build_gallery(_corpus(tmp_path, [broken]), out, pool, 1)
    with pytest.raises(ValueError, match="no train-split"):
        build_gallery(_corpus(tmp_path, [_row("plate", "test")]), out, pool, 1)
    assert (out / "entries.jsonl.gz").read_bytes() == before


def _fake_gallery(families: list[str]) -> Gallery:
    """Entries e0, e1, ... of these families ("compositional:BASE+...": a compositional part of
    that composition), each less like a square picture than the one before."""
    entries = [
        GalleryEntry(f"e{i}", "cad", family.split(":")[0], f"# part {i}\n",
                     composition=family.split(":")[1] if ":" in family else None)
        for i, family in enumerate(families)
    ]  # fmt: skip
    drawn = np.zeros((len(entries), len(gallery_views()), 2, 24, 24), dtype=bool)
    for i in range(len(entries)):  # entry i: a square of side 24 - 2i, more unlike as i grows
        side = 24 - 2 * i
        drawn[i, :, 0, :side, :side] = True
        drawn[i, :, 1, :side, :side] = True  # its outline: the square's rim
        drawn[i, :, 1, 1 : side - 1, 1 : side - 1] = False
    return Gallery(entries, np.stack([Gallery.pack(d) for d in drawn]))


def test_nearest_caps_each_family_and_a_request_gets_what_it_asks() -> None:
    gallery = _fake_gallery(["a", "a", "a", "b"])
    square = np.zeros((64, 64, 3), dtype=np.uint8) + 255
    square[8:56, 8:56] = (40, 60, 200)
    target = Target(square)
    found = gallery.nearest(target, "cad", k=4)
    assert [r.entry.id for r in found] == ["e0", "e1", "e3"]  # at most two of family "a"
    assert found[0].score > 0.85 and found[0].score > found[1].score > found[2].score

    loaded = SimpleNamespace(gallery=gallery)
    asked = GenerationRequest("make this", images=(square,), retrieve=2)
    assert [r.entry.id for r in retrieve_programs(asked, loaded)] == ["e0", "e1"]  # type: ignore[arg-type]
    for request in (
        GenerationRequest("make this", images=(square,), retrieve=0),
        GenerationRequest("a plate", retrieve=2),  # no picture
        GenerationRequest(
            "make this", images=(square,), retrieve=2, previous_program="x = 1", instruction="wider"
        ),  # an edit keeps its own program
    ):
        assert retrieve_programs(request, loaded) == []  # type: ignore[arg-type]
    assert retrieve_programs(asked, SimpleNamespace(gallery=None)) == []  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retrieve must be between"):
        GenerationRequest("make this", retrieve=99)


def test_compositional_parts_are_capped_by_their_base_not_as_one_family() -> None:
    gallery = _fake_gallery([
        "compositional:rect+holes_grid", "compositional:rect", "compositional:rect+fillet_z",
        "compositional:disc+holes_polar", "compositional:disc", "plate",
    ])  # fmt: skip
    square = np.zeros((64, 64, 3), dtype=np.uint8) + 255
    square[8:56, 8:56] = (40, 60, 200)
    found = gallery.nearest(Target(square), "cad", k=5)
    # Two rectangular-based parts, then the discs: half the gallery is "compositional", and
    # capping that name would leave a compositional picture two compositional candidates.
    assert [r.entry.id for r in found] == ["e0", "e1", "e3", "e4", "e5"]
    assert found[0].entry.kind == "compositional:rect" and found[4].entry.kind == "plate"
    # A design is the whole composition (or the family): what the fit's starts tell apart.
    assert [gallery.design_of(r.entry.id) for r in found[:2]] == [
        "compositional:rect+holes_grid", "compositional:rect"]  # fmt: skip
    assert gallery.design_of("e5") == "plate" and gallery.design_of("nope") is None


def test_a_gallery_that_does_not_match_its_views_is_refused() -> None:
    entries = [GalleryEntry("e0", "cad", "a", "# part\n")]
    with pytest.raises(ValueError, match="rebuild it"):
        Gallery(entries, np.zeros((1, 3, 2, 72), dtype=np.uint8))


def test_an_answer_from_the_gallery_says_so_in_its_provenance() -> None:
    from genservice.tasks import answer_retrieved_from

    sampled = {"index": 0, "program": "a"}
    retrieved = {"index": 8, "program": "b", "retrieved_from": "plate-30"}
    assert answer_retrieved_from([retrieved, sampled]) == "plate-30"
    assert answer_retrieved_from([{"index": 9, "fitted_from": 8}, sampled, retrieved]) == "plate-30"
    assert answer_retrieved_from([{"index": 9, "fitted_from": 0}, sampled, retrieved]) is None
    assert answer_retrieved_from([sampled, retrieved]) is None and answer_retrieved_from([]) is None


def test_a_gallery_part_takes_the_overall_size_the_words_state() -> None:
    plate = (
        "import cadquery as cq\n\nlength = 60.0\nwidth = 30.0\nthickness = 6.0\nholes = 4\n"
        "tilt_deg = 30.0\n\nresult = cq.Workplane().box(length, width, thickness)\n"
    )
    entry = GalleryEntry("p", "cad", "plate", plate, (60.0, 30.0, 6.0))
    doubled = entry.scaled_to("like this, 120 x 60 x 12 mm")
    assert "length = 120.0" in doubled and "thickness = 12.0" in doubled
    assert "holes = 4" in doubled and "tilt_deg = 30.0" in doubled  # counts and angles stay
    assert "width = 45.0" in entry.scaled_to("this part, 90 mm across")  # the largest extent
    assert entry.scaled_to("make this") == plate  # no size in the words: as it is
    assert GalleryEntry("p", "cad", "plate", plate).scaled_to("a 90 mm plate") == plate
    # One factor for all: the proportions are the picture's, the fit puts each size right.
    assert size_factor("50 mm long, 20 mm wide, 8 mm tall", "cad", (100.0, 40.0, 16.0)) == (
        pytest.approx(0.5)
    )


def test_a_gallery_part_that_binding_changed_is_offered_as_scaled_too() -> None:
    """Binding writes a stated number into the parameter its word names, but a gallery part's
    names were written for another request ("5.5 mm long" into a standoff's `length`, its
    height): where binding changed a part, the part as only scaled is a candidate too, with
    the same entry id; a part binding left alone is offered once."""
    found = gallery_candidates(["length = 5.5", "width = 3"], ["length = 12", "width = 3"],
                               ["standoff-1", "plate-2"])  # fmt: skip
    assert found == [("length = 5.5", "standoff-1"), ("length = 12", "standoff-1"),
                     ("width = 3", "plate-2")]  # fmt: skip
    assert gallery_candidates([], [], []) == []
