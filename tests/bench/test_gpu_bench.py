"""bench/gpu/run.sh, the accelerator proof run, rehearsed on the CPU with --tiny: every section
reports its figures in gpu.json and in gpu.md's table, and the whole run stays well inside its
time budget. The same run on a GPU is the `gpu`-marked test (skipped without CUDA)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(600)  # the module's first test waits for the run

REPO = Path(__file__).resolve().parents[2]
PATHS = ("batched_shared_kv", "one_at_a_time", "hf_generate_num_return_sequences")


def _run(out: Path, device: str) -> tuple[dict[str, Any], str, float]:
    begun = time.monotonic()
    done = subprocess.run(
        ["bash", "bench/gpu/run.sh", "--device", device, "--tiny", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    took = time.monotonic() - begun
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads((out / "gpu.json").read_text())
    return report, (out / "gpu.md").read_text(), took


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, float]:
    return _run(tmp_path_factory.mktemp("gpu-bench"), "cpu")


def _figures(markdown: str) -> dict[tuple[str, str], str]:
    rows = {}
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("section", "---"):
            rows[(cells[0], cells[1])] = cells[2]
    return rows


def test_the_sampler_matches_the_cpu_reference_token_for_token(cpu_run: Any) -> None:
    report, _, _ = cpu_run
    sampler = report["sections"]["sampler"]
    assert sampler["status"] == "ok", sampler
    assert sampler["float32"]["all_match"] and sampler["float32"]["share"] == 1.0
    assert sampler["float32"]["first_divergence"] == [None] * len(sampler["prompts"])
    assert all(n > 0 for n in sampler["reference_tokens"])
    low = sampler["bfloat16"]  # measured, not required to match
    assert 0.0 <= low["share"] <= 1.0 and len(low["first_divergence"]) == len(sampler["prompts"])


def test_throughput_is_measured_for_every_path_and_model(cpu_run: Any) -> None:
    report, _, _ = cpu_run
    throughput = report["sections"]["throughput"]
    assert throughput["status"] == "ok", throughput
    models = throughput["models"]
    assert list(models) == ["shipped", "tiny-shape-h64", "tiny-shape-h96"]
    for name, model in models.items():
        assert model["first_token_s"] > 0, name
        assert model["random_weights"] == (name != "shipped")
        for path in PATHS:
            assert model["paths"][path]["candidates_per_s"] > 0, (name, path)
            assert model["paths"][path]["tokens_per_s"] > 0, (name, path)


def test_sft_and_rl_steps_run_under_deepspeed(cpu_run: Any) -> None:
    report, _, _ = cpu_run
    train = report["sections"]["train"]
    assert train["status"] == "ok", train
    assert train["config"] == "zero2_cpu.json" and train["zero_stage"] == 2
    assert train["peak_flops"] is None  # no MFU on the CPU
    for name, sft in train["sft"].items():
        assert "error" not in sft, (name, sft.get("error"))
        assert sft["steps"] >= 1 and all(s > 0 for s in sft["step_s"]), name
        assert sft["tokens_per_s"] > 0 and sft["mfu"] is None, name
    rl = train["rl"]
    assert "error" not in rl, rl.get("traceback", rl)
    assert "skipped" not in rl, rl  # the sandbox works here, so the RL steps must run
    assert rl["steps"] == 1 and rl["step_s_median"] > 0 and rl["tokens_per_s"] > 0


def test_every_figure_is_in_the_markdown_table(cpu_run: Any) -> None:
    report, markdown, _ = cpu_run
    rows = _figures(markdown)
    run = {key: value for (section, key), value in rows.items() if section == "run"}
    for key in ("date", "device", "torch", "transformers", "deepspeed", "total s"):
        assert run.get(key) not in (None, "", "null"), key
    assert run["device"].startswith("cpu")
    assert rows[("sampler", "float32.all_match")] == "true"
    for name in report["sections"]["throughput"]["models"]:
        for path in PATHS:
            assert float(rows[("throughput", f"models.{name}.paths.{path}.candidates_per_s")]) > 0
        assert float(rows[("throughput", f"models.{name}.first_token_s")]) > 0
    assert float(rows[("train", "sft.shipped.tokens_per_s")]) > 0
    assert float(rows[("train", "rl.step_s_median")]) > 0
    assert rows[("splat", "status")] == "ok"
    assert float(rows[("splat", "after.silhouette_iou")]) > 0


def test_splats_are_refined_with_the_cpu_renderer(cpu_run: Any) -> None:
    splat = cpu_run[0]["sections"]["splat"]
    assert splat["status"] == "ok", splat
    assert splat["backend"] == "torch" and splat["steps"] >= 1 and splat["gaussians"] > 0
    for when in ("before", "after"):
        assert set(splat[when]) == {"psnr", "ssim", "silhouette_iou"}
        assert 0 < splat[when]["silhouette_iou"] <= 1 and splat[when]["psnr"] > 0
    assert "gsplat_vs_cpu_psnr" not in splat  # gsplat runs on CUDA only


def test_every_section_records_its_time_and_limit(cpu_run: Any) -> None:
    report, _, _ = cpu_run
    assert report["tiny"] and report["budget_s"] > 0 and report["total_s"] > 0
    assert "stopped" not in report  # the run ended by itself, not at the hard stop
    for name, section in report["sections"].items():
        assert section["seconds"] > 0 and section["limit_s"] > 0, name


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
def test_the_tiny_run_on_a_gpu(tmp_path: Path) -> None:
    report, markdown, _ = _run(tmp_path, "cuda")
    sections = report["sections"]
    assert report["environment"]["device"]["device"].startswith("cuda")
    assert sections["sampler"]["float32"]["all_match"], sections["sampler"]
    for name, model in sections["throughput"]["models"].items():
        for path in PATHS:
            assert model["paths"][path]["candidates_per_s"] > 0, (name, path)
    train = sections["train"]
    assert train["config"] == "zero2.json"
    for name, sft in train["sft"].items():
        assert sft["tokens_per_s"] > 0 and sft["dtype"] == "bfloat16", name
        assert (sft["mfu"] is None) == (train["peak_flops"] is None), name
    assert "error" not in train["rl"], train["rl"].get("traceback")
    splat = sections["splat"]
    assert splat["backend"] == "gsplat" and splat["gsplat_vs_cpu_psnr"] > 30, splat
    assert "| throughput |" in markdown
