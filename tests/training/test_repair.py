"""Repair tasks: breakages models make, real validator errors, valid targets, the repair prompt
(exact), and SFT showing repair rows as serving will."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from genservice.generation.prompts import (
    MAX_ERROR_CHARS,
    SYSTEM,
    build_messages,
    build_repair_messages,
    repair_messages_of,
)
from genservice.task_audit import schema_problems
from training.corpus import breakages
from training.corpus.build import build_corpus, write_corpus
from training.corpus.repair import (
    RepairStats,
    judge_broken,
    judge_reference,
    repairable,
    with_repairs,
)
from training.sft import task_messages

PLATE = """import cadquery as cq

length = 80.0
width = 40.0
thickness = 6.0
corner_r = 4.0
hole_d = 5.5
hole_count = 4

result = cq.Workplane("XY").box(length, width, thickness, centered=(True, True, False))
result = result.edges("|Z").fillet(corner_r)
result = result.faces(">Z").workplane().rarray(15, 1, hole_count, 1).hole(hole_d)
"""
PLATE_ROW = {
    "id": "plate-1",
    "domain": "cad",
    "family": "plate_holes",
    "split": "train",
    "prompt": "a plate 80 mm long, 40 wide, 6 thick, R4 corners, four 5.5 mm holes 15 apart",
    "reference": PLATE,
    "spec": {"bbox_mm": [80.0, 40.0, 6.0], "solids": 1},
    "params": {},
}


def source_rows(n: int) -> list[dict[str, Any]]:
    """CAD rows of the families and the compositional grammar (half each)."""
    return list(build_corpus(n, 8, domains=["cad"], compositional=0.5))


def test_every_breakage_changes_a_program_and_wrong_names_do_not_exist() -> None:
    """Each kind of breakage applies to some corpus program and changes it; the wrong API names
    are none of cadquery's."""
    import cadquery as cq

    rows = [PLATE_ROW, *source_rows(60)]
    applied: Counter[str] = Counter()
    for row in rows:
        for kind, breakage in breakages.BREAKAGES.items():
            broken = breakage(row["reference"], row, random.Random(f"{kind}:{row['id']}"))
            if broken is not None:
                assert broken.strip() != row["reference"].strip(), (kind, row["id"])
                applied[kind] += 1
    assert set(applied) == set(breakages.BREAKAGES), applied
    for right, wrongs in breakages.WRONG_NAMES.items():
        assert hasattr(cq.Workplane, right), right
        assert not any(hasattr(cq.Workplane, wrong) for wrong in wrongs), right
    api = breakages.api_name(PLATE, PLATE_ROW, random.Random(1))
    assert api is not None and api.count("\n") == PLATE.count("\n")


def test_repair_rows_carry_the_real_validator_error_and_valid_targets(pool: Any) -> None:
    """Each repair row's error is what the validator says of its failed program (kind,
    message, line), its target is the source's program and passes the source's checks, and it
    keeps the source's split and family; the rows pass the task schema."""
    rows = source_rows(24)
    stats = RepairStats()
    out = list(with_repairs(rows, 8, 1.0, pool, stats))
    repairs = [r for r in out if r.get("repair")]
    assert len(repairs) >= 20, (stats.written, stats.discarded, stats.invalid_sources)
    assert [r for r in out if not r.get("repair")] == rows
    by_id = {row["id"]: row for row in rows}
    for repair in repairs:
        source = by_id[repair["id"].split("-repair-")[0]]
        assert repair["id"] == f"{source['id']}-repair-{repair['breakage']}"
        assert repair["reference"] == source["reference"]
        assert (repair["split"], repair["family"], repair["prompt"]) == (
            source["split"],
            source["family"],
            source["prompt"],
        )
        assert repair["failed_program"] != source["reference"]
        report = judge_broken(repair, repair["failed_program"], pool)
        assert not report.valid and report.error is not None
        assert repair["error"] == report.error.to_dict()
        assert judge_reference(repair, pool).valid
        assert schema_problems(repair) == []
    assert len(Counter(r["breakage"] for r in repairs)) >= 5
    assert len({r["error"]["kind"] for r in repairs}) >= 3
    assert sum(stats.written.values()) == len(repairs)


def test_a_breakage_that_does_not_fail_is_discarded(
    pool: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A "broken" program the validator accepts makes no repair row; it is counted."""
    harmless = PLATE + "# the plate\n"  # a comment: the validator has nothing to say
    monkeypatch.setattr(
        "training.corpus.repair.candidates", lambda row, rng, tries: [("out_of_range", harmless)]
    )
    stats = RepairStats()
    out = list(with_repairs([PLATE_ROW], 1, 1.0, pool, stats))
    assert out == [PLATE_ROW]
    assert stats.discarded == Counter({"out_of_range": 1}) and not stats.written


def test_repairable_rows() -> None:
    """Only CAD and scene rows with an inline program, not edits or repairs, are broken."""
    assert repairable(PLATE_ROW)
    assert not repairable({**PLATE_ROW, "edit": True})
    assert not repairable({**PLATE_ROW, "repair": True})
    assert not repairable({**PLATE_ROW, "domain": "code"})
    assert not repairable({**PLATE_ROW, "reference": "part.step"})


def test_write_corpus_with_repairs_and_summary(tmp_path: Path, pool: Any) -> None:
    """--repair 1: every row followed by its repair (when a breakage fails), counted."""
    out = tmp_path / "r.jsonl"
    summary = write_corpus(out, 8, 2, families=["plate_holes"], repair=1.0, pool=pool,
                           progress=False)  # fmt: skip
    lines = out.read_text().splitlines()
    assert summary.rows == len(lines) and sum(summary.repairs.values()) == len(lines) - 8
    assert len(lines) - 8 >= 7


REPAIR_TEXT = """a plate 80 mm long, 40 wide, 6 thick

Failed program:
import cadquery as cq
result = cq.Workplane().cube(80)

Error: exception at line 2: AttributeError: 'Workplane' object has no attribute 'cube'

Fix the program."""


def test_repair_prompt_is_stable() -> None:
    """The repair messages, exactly: the system message of the domain, then the request, the
    failed program and the error (kind, line, message)."""
    program = "import cadquery as cq\nresult = cq.Workplane().cube(80)\n"
    error = "AttributeError: 'Workplane' object has no attribute 'cube'"
    messages = build_repair_messages(
        "cad", " a plate 80 mm long, 40 wide, 6 thick ", program, "exception", error, 2
    )
    assert messages == [
        {"role": "system", "content": SYSTEM["cad"]},
        {"role": "user", "content": REPAIR_TEXT},
    ]
    no_line = build_repair_messages("cad", "a plate", program, "no_result", "nothing", None)
    assert no_line[1]["content"].endswith("\n\nError: no_result: nothing\n\nFix the program.")
    long = build_repair_messages("cad", "a plate", program, "exception", "x" * 5000, 1)
    assert len(long[1]["content"].split("Error: ")[1]) < MAX_ERROR_CHARS + 40
    with_images = build_repair_messages("cad", "a plate", program, "syntax", "bad", 3, images=2)
    assert with_images[1]["content"][:2] == [{"type": "image"}, {"type": "image"}]
    with pytest.raises(ValueError, match="domain"):
        build_repair_messages("audio", "a plate", program, "syntax", "bad", 1)
    with pytest.raises(ValueError, match="failed"):
        build_repair_messages("cad", "a plate", " ", "syntax", "bad", 1)
    # The other messages are what they were.
    assert build_messages("cad", "a plate")[1] == {"role": "user", "content": "a plate"}


def test_sft_shows_a_repair_row_as_serving_will() -> None:
    """task_messages of a repair row is build_repair_messages of its fields, with or without a
    loaded (retrieval) model: a repair carries its own program, no example."""
    row = {
        **PLATE_ROW,
        "repair": True,
        "failed_program": "import cadquery as cq\nresult = cq.Workplane().cube(80)\n",
        "error": {"kind": "exception", "message": "AttributeError: no cube", "line": 2},
    }
    expected = build_repair_messages(
        "cad", row["prompt"], row["failed_program"], "exception", "AttributeError: no cube", 2
    )
    assert task_messages(row) == expected == repair_messages_of(row)
    assert task_messages(row, loaded=object()) == expected
    assert task_messages(PLATE_ROW) == build_messages("cad", PLATE_ROW["prompt"])
