"""The RL run report: tables, regression markers, time split, flags and plots from metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from training.rl_report import write_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PLOTS = ("reward.png", "families.png", "length_kl.png", "throughput.png")
# Constant timings: overlap = (6 + 4 - (9 - 2)) / 4 = 3 / 4.
TIMING = {"generate_s": 6.0, "reward_wait_s": 1.0, "reward_busy_s": 4.0, "update_s": 2.0}
OVERLAP = "75.0 %"


def _family(domain: str, reward: float, iou: float | None) -> dict[str, Any]:
    return {"domain": domain, "reward": reward, "valid": 0.8, "iou": iou, "length": 120.0,
            "n": 8, "weight": 0.33}  # fmt: skip


def _step(step: int) -> dict[str, Any]:
    wobble = 0.02 if step % 2 else -0.02
    return {
        "event": "step",
        "step": step,
        "time_s": 9.0 * step,
        "reward": 0.5 + wobble,
        "reward_std": 0.2,
        "valid": 0.4 + 0.01 * step,
        "length": 100.0 + step,
        "truncated": 0.01,
        "loss": 0.1,
        "kl": None if step <= 10 else 0.001 * step,  # not measured at first
        "entropy": 1.2,
        "clip_frac": 0.05,
        "lr": 1e-6,
        "groups_kept": 7,
        "groups_skipped": 1,
        "samples_per_s": 2.5,
        "tokens_per_s": 300.0,
        "timing": {**TIMING, "step_s": 9.0},
        "checks": {"builds": 0.9},
        "families": {
            "cad_gear": _family("cad", 0.8 - 0.5 * (step - 1) / 39, 0.7),  # falls 0.8 → 0.3
            # falls by 0.07, more than 0.05 but well within its step-to-step noise of ±0.15
            "cad_bracket": _family("cad", 0.6 - 0.08 * (step - 1) / 39 + 7.5 * wobble, 0.6),
            "code_sort": _family("code", 0.4 + 0.005 * step, None),  # rises; no IoU for code
        },
    }


def _heldout(step: int) -> dict[str, Any]:
    return {"event": "heldout", "step": step, "time_s": 9.0 * step, "valid": 0.7, "spec": None,
            "iou": 0.5, "code_pass": 0.3, "reward": 0.55,
            "families": {"cad_gear": {"valid": 0.7, "iou": 0.5, "reward": 0.5}}}  # fmt: skip


def _flag(step: int, kind: str) -> dict[str, Any]:
    return {"event": "flag", "step": step, "kind": kind, "message": f"{kind} at step {step}"}


def _write_run(run_dir: Path, records: list[dict[str, Any]], tail: str = "") -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    (run_dir / "metrics.jsonl").write_text("\n".join(lines) + "\n" + tail)
    return run_dir


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A 40-step run with held-out records, flags and a partial last line, reported once."""
    records: list[dict[str, Any]] = []
    for step in range(1, 41):
        records.append(_step(step))
        if step % 10 == 0:
            records.append(_heldout(step))
    flags = {5: "length_spike", 9: "length_spike", 12: "hack_scan", 20: "length_spike",
             22: "identical_outputs", 30: "length_spike", 31: "identical_outputs"}  # fmt: skip
    records += [_flag(step, kind) for step, kind in flags.items()]
    run_dir = _write_run(tmp_path_factory.mktemp("run"), records, tail='{"event": "step", "st')
    run = {"command": "genservice train rl --config rl.yaml", "base_model": "models/sft",
           "output_dir": "models/rl", "world_size": 2, "started": "2025-01-01"}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(run))
    path = write_report(run_dir)
    return path, path.read_text()


def _row(text: str, first_cell: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))


def test_the_report_names_every_family_and_the_run(report: tuple[Path, str]) -> None:
    path, text = report
    assert path.name == "report.md"
    for family in ("cad_gear", "cad_bracket", "code_sort"):
        assert _row(text, family)
    assert "`genservice train rl --config rl.yaml`" in text
    assert "base model: models/sft" in text and "world size: 2" in text
    assert "steps: 40 (step 1 to 40), wall time 6 min 00 s, 900 samples" in text  # 2.5/s × 9 s
    assert "1 line(s) of metrics.jsonl that were not JSON" in text
    assert "| – → – |" in _row(text, "code_sort")  # IoU is null for a code family


def test_plots_are_valid_pngs_embedded_by_relative_path(report: tuple[Path, str]) -> None:
    import matplotlib.image

    path, text = report
    for name in (*PLOTS, "heldout.png"):
        plot = path.parent / name
        assert plot.read_bytes()[:8] == PNG_SIGNATURE
        height, width = matplotlib.image.imread(plot).shape[:2]
        assert height > 0 and width > 0
        assert f"]({name})" in text


def test_only_the_family_whose_reward_fell_is_marked_regressed(report: tuple[Path, str]) -> None:
    _, text = report
    assert "regressed" in _row(text, "cad_gear")
    assert "regressed" not in _row(text, "cad_bracket")
    assert "regressed" not in _row(text, "code_sort")


def test_the_reward_overlap_matches_the_hand_computed_share(report: tuple[Path, str]) -> None:
    _, text = report
    for label in ("first 10 %", "last 10 %", "all"):
        row = _row(text, label)
        assert row.endswith(f"| {OVERLAP} |"), row
        assert "| 6.00 | 1.00 | 4.00 | 2.00 | 9.00 |" in row


def test_flags_are_counted_by_kind(report: tuple[Path, str]) -> None:
    _, text = report
    assert "### length_spike (4)" in text
    assert "### identical_outputs (2)" in text
    assert "### hack_scan (1)" in text
    assert "- step 5: length_spike at step 5" in text
    assert "- … and 1 more" in text  # only the first three messages of a kind are shown


def test_heldout_evaluations_are_tabled(report: tuple[Path, str]) -> None:
    _, text = report
    assert _row(text, "40").startswith("| 40 | 6 min 00 s | 70.0 % | – | 0.500 | 30.0 % |")


def test_a_run_without_heldout_records_writes_no_heldout_plot(tmp_path: Path) -> None:
    run_dir = _write_run(tmp_path / "run", [_step(step) for step in range(1, 6)])
    path = write_report(run_dir, tmp_path / "out" / "rl.md")
    assert path == tmp_path / "out" / "rl.md"
    assert all((path.parent / name).is_file() for name in PLOTS)
    assert not (path.parent / "heldout.png").exists()
    assert "heldout.png" not in path.read_text()
    assert "No held-out evaluations were recorded." in path.read_text()


def test_a_directory_without_metrics_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"has no metrics\.jsonl: is it the run_dir of"):
        write_report(tmp_path)


def test_metrics_without_step_records_are_refused(tmp_path: Path) -> None:
    _write_run(tmp_path, [_flag(1, "hack_scan")], tail="not json\n")
    with pytest.raises(ValueError, match="holds no step records"):
        write_report(tmp_path)
