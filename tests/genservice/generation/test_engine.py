"""generate: prompt → sampled candidates → validated, ranked → the best, with timings and events."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from genservice.generation import engine
from genservice.generation.engine import GenerationRequest, generate
from genservice.generation.entry_point import EntryPoint
from genservice.generation.image_match import as_target
from genservice.generation.sampler import Completion

BOX = "import cadquery as cq\nresult = cq.Workplane('XY').box(20, 10, 5)\n"
FENCED = f"```python\n{BOX}```"


def _scripted(texts: list[str], seen: dict):
    def fake_sample(
        loaded, messages, n, seed, max_new_tokens, temperature, top_p, images, progress,
        entry_point, greedy_first,
    ):  # fmt: skip
        seen.update(messages=messages, n=n, seed=seed, images=images, entry_point=entry_point,
                    greedy_first=greedy_first)  # fmt: skip
        progress(n, n)
        return [Completion(t, (1, 2), -1.0, "stop") for t in texts[:n]]

    return fake_sample


def test_the_best_candidate_is_chosen_by_the_validators(monkeypatch, causal, pool):
    seen: dict = {}
    monkeypatch.setattr(engine, "sample", _scripted(["box(", FENCED, "nonsense"], seen))
    events: list[tuple] = []
    request = GenerationRequest("a box 20 x 10 x 5 mm", n=3, seed=9, spec={"bbox_mm": [20, 10, 5]})
    result = generate(request, causal, pool, progress=lambda *e: events.append(e))
    assert result.valid and result.program == BOX  # fences removed by clean_completion
    assert result.candidates[0].index == 1
    assert [c.valid for c in result.candidates] == [True, False, False]
    assert result.seed == 9 and result.sampling["n"] == 3 and seen["seed"] == 9
    assert seen["messages"][0]["role"] == "system" and "a box" in seen["messages"][1]["content"]
    assert set(result.timings) == {
        "gallery_s", "generate_s", "pool_wait_s", "validate_s", "repair_s", "fit_s", "settle_s"
    }  # fmt: skip
    assert result.repairs == []  # a valid candidate: no repair round
    assert result.model_id == causal.model_id and result.weights_sha256 == causal.weights_sha256
    stages = [e[0] for e in events]
    assert stages[0] == "generating" and stages[-1] == "done"
    assert ("generating", 3, 3) in events and ("validating", 3, 3) in events
    assert events[-1] == ("done", 1, 3)
    assert result.to_dict()["candidates"][0]["program"] == BOX
    assert seen["entry_point"] is None  # a part has no function to steer to


def test_a_repair_round_feeds_the_failing_candidate_and_its_error_back(monkeypatch, causal, pool):
    calls: list[dict] = []
    rounds = iter(
        [["import cadquery as cq\nresult = cq.Workplane().box(20, 10)\n"] * 2, [FENCED, "x"]]
    )

    def fake_sample(loaded, messages, n, seed, **_):
        calls.append({"messages": messages, "seed": seed})
        return [Completion(t, (1, 2), -1.0, "stop") for t in next(rounds)]

    monkeypatch.setattr(engine, "sample", fake_sample)
    events: list[tuple] = []
    request = GenerationRequest("a box 20 x 10 x 5 mm", n=2, seed=4, repair=2)
    result = generate(request, causal, pool, progress=lambda *e: events.append(e))
    assert result.valid and result.program == BOX
    assert len(calls) == 2 and calls[1]["seed"] != calls[0]["seed"]
    asked = calls[1]["messages"][-1]["content"]
    assert asked.startswith("a box 20 x 10 x 5 mm") and "Failed program:" in asked
    assert ".box(20, 10)" in asked and "at line 2" in asked and asked.endswith("Fix the program.")
    assert [r.round for r in result.repairs] == [1]  # the first round found a valid one
    repair = result.repairs[0]
    assert repair.repaired == 0 and repair.valid == 1 and repair.candidates == 2
    assert repair.error["kind"] and repair.error["line"] == 2
    best = result.candidates[0]
    assert (best.round, best.index) == (1, 2) and len(result.candidates) == 4
    assert ("repairing", 1, 2) in events
    assert result.to_dict()["repairs"][0]["round"] == 1


def test_no_repair_when_asked_for_none_or_for_code(monkeypatch, causal, pool):
    monkeypatch.setattr(engine, "sample", _scripted(["box("], {}))
    assert generate(GenerationRequest("a box", n=1, repair=0), causal, pool).repairs == []
    with pytest.raises(ValueError, match="repair"):
        GenerationRequest("a box", repair=9)


def test_a_code_request_steers_to_its_entry_point(monkeypatch, causal, pool):
    seen: dict = {}
    function = "def chunk(items, size):\n    return [items[i : i + size] for i in range(0, 3, 2)]\n"
    monkeypatch.setattr(engine, "sample", _scripted([function], seen))
    tests = "def check(candidate):\n    assert candidate([1, 2, 3], 2) == [[1, 2], [3]]\n"
    request = GenerationRequest(
        "Write chunk(items, size) that splits a list into chunks", domain="code", n=1,
        tests=tests, entry_point="chunk",
    )  # fmt: skip
    result = generate(request, causal, pool)
    assert result.valid, result.report.error
    assert seen["entry_point"] == EntryPoint("chunk", "items, size")


def test_greedy_first_reaches_the_sampler_and_the_record(monkeypatch, causal, pool):
    seen: dict = {}
    monkeypatch.setattr(engine, "sample", _scripted([BOX, BOX], seen))
    result = generate(GenerationRequest("a box", n=2, greedy_first=True), causal, pool)
    assert seen["greedy_first"] is True and result.sampling["greedy_first"] is True
    generate(GenerationRequest("a box", n=2), causal, pool)
    assert seen["greedy_first"] is False  # off unless asked (the CLI and API ask for pictures)


def test_an_edit_puts_the_previous_program_in_the_prompt(monkeypatch, causal, pool):
    seen: dict = {}
    monkeypatch.setattr(engine, "sample", _scripted([BOX], seen))
    request = GenerationRequest(
        "a box", n=1, previous_program="result = 1\n", instruction="make it taller"
    )
    generate(request, causal, pool)
    user = seen["messages"][1]["content"]
    assert "Current program:\nresult = 1" in user and "Change: make it taller" in user


def test_the_pool_may_still_be_starting(monkeypatch, causal, pool):
    monkeypatch.setattr(engine, "sample", _scripted([BOX], {}))
    starting: Future = Future()
    starting.set_result(pool)
    result = generate(GenerationRequest("a box", n=1), causal, starting)
    assert result.valid


def test_a_random_model_end_to_end(causal, pool):
    request = GenerationRequest("a box", n=2, seed=1, max_new_tokens=8)
    result = generate(request, causal, pool)
    assert len(result.candidates) == 2 and not result.valid
    assert result.generated_tokens > 0
    again = generate(request, causal, pool)
    assert [c.program for c in again.candidates] == [c.program for c in result.candidates]


def test_requests_are_checked(causal, pool):
    with pytest.raises(ValueError, match="domain"):
        GenerationRequest("x", domain="mesh")
    with pytest.raises(ValueError, match="empty"):
        GenerationRequest("  ")
    with pytest.raises(ValueError, match="both the previous program"):
        GenerationRequest("x", instruction="taller")
    with pytest.raises(ValueError, match="tests and an entry_point"):
        GenerationRequest("x", domain="code")
    with pytest.raises(ValueError, match="n must be"):
        GenerationRequest("x", n=0)
    with pytest.raises(ValueError, match="takes text only"):
        generate(GenerationRequest("x", images=("picture",)), causal, pool)


PLATE = "import cadquery as cq\nwidth = {width}\nresult = cq.Workplane('XY').box(60, width, 6)\n"


@pytest.mark.slow
def test_a_part_missing_a_stated_size_is_fitted_when_asked(monkeypatch, causal, pool):
    """ "25 mm tall" written as 5: with fit rounds the part is fitted to its words and VALID,
    before any repair round; without (a text request's default) it is NOT AS ASKED."""
    from validators.cad.request import missed_only_the_request

    # A parameter the words do not name (binding leaves it): only the measured size tells.
    short = BOX.replace("box(20, 10, 5)", "box(20, 10, lift)").replace(
        "import cadquery as cq\n", "import cadquery as cq\nlift = 5.0\n"
    )
    monkeypatch.setattr(engine, "sample", _scripted([short], {}))
    text = "a block 20 mm long, 10 mm wide and 25 mm tall"
    result = generate(GenerationRequest(text, n=1, fit=2, repair=1), causal, pool)
    assert result.valid and result.repairs == [], result.report.error
    assert result.candidates[0].fitted_from == 0 and "lift = 25.0" in result.program
    assert result.fit is not None and result.fit["sizes"]["changed"] == {"lift": [5.0, 25.0]}
    plain = generate(GenerationRequest(text, n=1), causal, pool)
    assert plain.fit is None and not plain.valid and missed_only_the_request(plain.report)


def test_a_part_from_a_picture_is_fitted_to_it(monkeypatch, llava, pool):
    """The best candidate of a picture request has its parameters adjusted to look like it."""
    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import render
    from validators.cad.request import missed_only_the_request

    parts, _ = script_parts(PLATE.format(width=30.0), pool, domain="cad")
    picture = Image.fromarray(render(parts, size=96))
    monkeypatch.setattr(engine, "sample", _scripted([PLATE.format(width=12.0)], {}))
    events: list[tuple] = []
    request = GenerationRequest("make this", images=(picture,), n=1, fit=2, repair=1)
    result = generate(request, llava, pool, progress=lambda *e: events.append(e))
    assert result.fit is not None and result.fit["improved"], result.fit
    # The sampled plate is sound but too narrow to be the pictured one: NOT AS ASKED, and the
    # fit's to improve, not repair's (no validator's words would say what to change).
    assert result.repairs == []
    fitted, sampled = result.candidates[0], result.candidates[1]
    assert not sampled.valid and missed_only_the_request(sampled.report)
    assert fitted.fitted_from == sampled.index == 0 and fitted.index == 1
    assert result.valid and result.program == fitted.program != sampled.program
    assert result.report.checks["image_match"].score > sampled.report.checks["image_match"].score
    assert result.fit["changed"]["width"][0] == 12.0
    assert ("fitting", 0, 2) in events and result.timings["fit_s"] > 0
    off = generate(GenerationRequest("make this", images=(picture,), n=1), llava, pool)
    assert off.fit is None and len(off.candidates) == 1  # fit=0: as sampled
    assert not off.valid and missed_only_the_request(off.report)
    edit = GenerationRequest(
        "make this", images=(picture,), n=1, fit=2, previous_program=PLATE.format(width=12.0),
        instruction="add a chamfer",
    )  # fmt: skip
    assert generate(edit, llava, pool).fit is None  # an edit changes only what its words ask
    with pytest.raises(ValueError, match="fit must be"):
        GenerationRequest("x", fit=99)


def test_a_second_picture_shows_what_one_edge_on_leaves_open(monkeypatch, llava, pool):
    """Seen edge-on, how wide a plate is along the line of sight is anyone's guess: a plate
    12 mm wide matches a picture of one 30 mm wide. A second picture of the part from another
    side shows it, and the fit follows it."""
    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import View, render

    parts, _ = script_parts(PLATE.format(width=30.0), pool, domain="cad")
    edge = Image.fromarray(render(parts, ["front"], size=96))
    side = Image.fromarray(render(parts, [View.orbit(130, 40, True, 35)], size=96))
    seen: dict = {}
    monkeypatch.setattr(engine, "sample", _scripted([PLATE.format(width=12.0)], seen))
    alone = generate(GenerationRequest("make this", images=(edge,), n=1, fit=2), llava, pool)
    assert alone.valid and "width = 12.0" in alone.program  # nothing in it says otherwise
    both = generate(GenerationRequest("make this", images=(edge, side), n=1, fit=2), llava, pool)
    # The model reads the first picture, as it learned to; the checks and the fit read both.
    assert seen["images"] == [edge]
    assert [part["type"] for part in seen["messages"][1]["content"]] == ["image", "text"]
    check = both.report.checks["image_match"]
    assert check.detail["pictures"] == 2 and len(check.detail["scores"]) == 2
    assert both.fit is not None and both.fit["improved"], both.fit
    assert 20.0 <= both.fit["changed"]["width"][1] <= 45.0, both.fit["changed"]


def test_a_picture_that_fits_two_different_parts_is_answered_but_not_valid(
    monkeypatch, llava, pool
):
    """Edge-on, an open tray and a solid block are one rectangle: the served part is one of
    them, NOT AS ASKED, naming the other; a second picture from above settles it (settle.py)."""
    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import View, render

    block = "import cadquery as cq\nresult = cq.Workplane('XY').box(60, 40, 12)\n"
    tray = block.rstrip() + ".faces('>Z').shell(-1.5)\n"  # open at the top
    parts, _ = script_parts(tray, pool, domain="cad")
    edge = Image.fromarray(render(parts, [View.orbit(0, 0, True, 35)], size=128))
    above = Image.fromarray(render(parts, [View.orbit(130, 40, True, 35)], size=128))
    monkeypatch.setattr(engine, "sample", _scripted([block, tray], {}))
    alone = generate(GenerationRequest("make this", images=(edge,), n=2), llava, pool)
    assert not alone.valid and not any(c.valid for c in alone.candidates)
    rivals = alone.report.checks["image_match"].detail["rivals"]
    assert [r["candidate"] for r in rivals] == [alone.candidates[1].index]
    assert alone.report.metrics["valid_but_for_the_picture"] is True
    both = generate(GenerationRequest("make this", images=(edge, above), n=2), llava, pool)
    assert both.valid and both.program == tray
    assert "rivals" not in both.report.checks["image_match"].detail


def _gallery_of_one_plate(pictured: str, monkeypatch, llava, pool, tmp_path, also=()):
    """Give the model a gallery holding one train-split plate (and the parts `also`, as
    (id, program)); return an iso picture of the plate."""
    import json

    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import render
    from genservice.generation.gallery import Gallery
    from training.gallery import build_gallery

    rows = [{"id": "plate-30", "domain": "cad", "family": "plate", "split": "train",
             "prompt": "a plate", "reference": pictured}]  # fmt: skip
    rows += [{"id": entry_id, "domain": "cad", "family": entry_id, "split": "train",
              "prompt": "a part", "reference": program} for entry_id, program in also]  # fmt: skip
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    build_gallery(source, tmp_path / "model" / "gallery", pool, 1)
    monkeypatch.setattr(llava, "gallery", Gallery.load(tmp_path / "model"), raising=False)
    parts, _ = script_parts(pictured, pool, domain="cad")
    return Image.fromarray(render(parts, ["iso"], size=96))


def test_a_picture_request_gets_the_gallery_parts_that_look_like_it(
    monkeypatch, llava, pool, tmp_path
):
    """The model's gallery parts that look like the picture join its samples as candidates."""
    pictured = PLATE.format(width=30.0)
    picture = _gallery_of_one_plate(pictured, monkeypatch, llava, pool, tmp_path)
    monkeypatch.setattr(engine, "sample", _scripted([PLATE.format(width=12.0)], {}))
    result = generate(
        GenerationRequest("make this", images=(picture,), n=1, retrieve=2), llava, pool
    )
    assert len(result.candidates) == 2  # one sample, one gallery part (the gallery has one)
    best, sampled = result.candidates
    assert best.retrieved_from == "plate-30" and best.finish_reason == "retrieved"
    assert best.valid and best.program == pictured and sampled.retrieved_from is None
    assert result.to_dict()["candidates"][0]["retrieved_from"] == "plate-30"
    alone = generate(GenerationRequest("make this", images=(picture,), n=1), llava, pool)
    assert [c.retrieved_from for c in alone.candidates] == [None]  # retrieve=0: samples only


def test_a_model_that_reads_look_alikes_is_shown_the_closest_gallery_part(
    monkeypatch, llava, pool, tmp_path
):
    """A model trained with look-alikes writes its samples seeing the gallery part that looks
    most like the picture, scaled to the words' size; one that was not sees the plain prompt."""
    pictured = PLATE.format(width=30.0)
    picture = _gallery_of_one_plate(pictured, monkeypatch, llava, pool, tmp_path)
    seen: dict = {}
    monkeypatch.setattr(engine, "sample", _scripted([PLATE.format(width=12.0)], seen))

    monkeypatch.setattr(llava, "reads_look_alikes", False, raising=False)
    generate(GenerationRequest("make this", images=(picture,), n=1), llava, pool)
    assert "looks like" not in str(seen["messages"][1]["content"])

    monkeypatch.setattr(llava, "reads_look_alikes", True, raising=False)
    for retrieve in (0, 2):  # shown whether or not gallery parts are candidates too
        request = GenerationRequest("like this, 120 mm long", images=(picture,), n=1,
                                    retrieve=retrieve)  # fmt: skip
        generate(request, llava, pool)
        text = seen["messages"][1]["content"][-1]["text"]
        assert text.startswith("A part that looks like the picture:\n")
        assert text.endswith("\n\nRequest: like this, 120 mm long")
        assert "width = 60.0" in text  # 60 x 30 mm in the gallery: scaled to the stated 120
    edit = GenerationRequest("make this", images=(picture,), n=1,
                             previous_program=pictured, instruction="wider")  # fmt: skip
    generate(edit, llava, pool)  # an edit carries its own program: no look-alike
    assert "looks like" not in str(seen["messages"][1]["content"])

    # A sample that keeps the look-alike's body but leaves out a number it reads is mended
    # from the look-alike (mend.py), scaled as shown, and builds.
    body_only = PLATE.replace("width = {width}\n", "")
    monkeypatch.setattr(engine, "sample", _scripted([body_only], seen))
    result = generate(
        GenerationRequest("like this, 120 mm long", images=(picture,), n=1), llava, pool
    )
    assert "width = 60.0" in result.program and result.report.checks["executes"].passed


def test_a_model_that_reads_look_alikes_is_shown_the_gallery_part_the_checks_score_best(
    monkeypatch, llava, pool, tmp_path
):
    """A picture's gallery parts are built and checked before the model samples, and it is
    shown the one that looks most like the picture when built, not the one whose coarse
    silhouette came first; the result says which it was shown."""
    disc = "import cadquery as cq\nradius = 25.0\nresult = cq.Workplane('XY').cylinder(8, radius)\n"
    pictured = PLATE.format(width=30.0)
    picture = _gallery_of_one_plate(
        pictured, monkeypatch, llava, pool, tmp_path, also=[("disc-25", disc)]
    )
    coarse = llava.gallery.nearest
    monkeypatch.setattr(  # the coarse silhouettes put the disc first
        llava.gallery, "nearest", lambda *args, **kw: list(reversed(coarse(*args, **kw)))
    )
    assert [r.entry.id for r in llava.gallery.nearest(as_target([picture]), "cad", 2)] == [
        "disc-25", "plate-30"
    ]  # fmt: skip
    monkeypatch.setattr(llava, "reads_look_alikes", True, raising=False)
    seen: dict = {}
    monkeypatch.setattr(engine, "sample", _scripted([disc], seen))
    request = GenerationRequest("make this", images=(picture,), n=1, retrieve=2)
    result = generate(request, llava, pool)
    text = seen["messages"][1]["content"][-1]["text"]
    assert "box(60, width, 6)" in text and "cylinder" not in text
    assert result.look_alike == {"program": pictured, "retrieved_from": "plate-30"}
    assert result.to_dict()["look_alike"]["retrieved_from"] == "plate-30"
    assert result.candidates[0].retrieved_from == "plate-30"  # it also serves, being closest
    assert [c.index for c in result.candidates if c.retrieved_from is None] == [0]
    assert sorted(c.index for c in result.candidates) == [0, 1, 2]  # the sample, then the parts
