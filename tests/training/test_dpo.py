"""DPO: the loss, the pair selection, the config checks, and one real run of the CLI.

The end-to-end run samples pairs from the shipped tiny model on a few code tasks of a freshly
built corpus, trains one epoch on DeepSpeed (one thread) and checks what it leaves behind.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from training.dpo import (
    Candidate,
    dpo_loss,
    epoch_order,
    lr_at,
    select_pair,
    sequence_logprobs,
)
from training.dpo_config import DPOConfig, DPOTraining

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "genservice" / "models" / "tiny"

torch.set_num_threads(1)


# ------------------------------------------------------------------- loss
def test_loss_is_log2_at_the_start_and_falls_as_chosen_gains() -> None:
    zero = torch.zeros(3)
    loss, margins = dpo_loss(zero, zero, zero, zero, beta=0.1)
    assert math.isclose(float(loss), math.log(2), rel_tol=1e-6)
    assert margins.tolist() == [0.0, 0.0, 0.0]
    # the policy raised chosen by 2 and lowered rejected by 3 nats against the reference
    chosen, rejected = torch.tensor([-10.0]), torch.tensor([-23.0])
    ref_c, ref_r = torch.tensor([-12.0]), torch.tensor([-20.0])
    loss, margins = dpo_loss(chosen, rejected, ref_c, ref_r, beta=0.5)
    assert math.isclose(float(margins[0]), 0.5 * (2 + 3), rel_tol=1e-6)
    assert math.isclose(float(loss), math.log1p(math.exp(-2.5)), rel_tol=1e-6)
    loss_bad, margins_bad = dpo_loss(rejected, chosen, ref_r, ref_c, beta=0.5)  # pair swapped
    assert float(margins_bad[0]) < 0 < float(margins[0]) and float(loss_bad) > float(loss)


def test_loss_gradient_raises_chosen_and_lowers_rejected() -> None:
    chosen = torch.tensor([-5.0], requires_grad=True)
    rejected = torch.tensor([-5.0], requires_grad=True)
    loss, _ = dpo_loss(chosen, rejected, torch.tensor([-5.0]), torch.tensor([-5.0]), beta=0.1)
    loss.backward()
    assert chosen.grad is not None and rejected.grad is not None
    assert float(chosen.grad[0]) < 0 < float(rejected.grad[0])  # descent: chosen up, rejected down


def test_sequence_logprobs_sum_exactly_the_completion_tokens() -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
    )  # fmt: skip
    model = Qwen2ForCausalLM(config).eval()
    rows = [([1, 2, 3], [4, 5]), ([6, 7], [8, 9, 10, 11])]
    with torch.no_grad():
        batched = sequence_logprobs(model, rows, pad_id=0, device="cpu")
        for row, (prompt, completion) in enumerate(rows):  # slow reference: one row, no padding
            ids = torch.tensor([prompt + completion])
            logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
            expected = sum(
                float(logp[len(prompt) - 1 + i, token]) for i, token in enumerate(completion)
            )
            assert math.isclose(float(batched[row]), expected, rel_tol=1e-4, abs_tol=1e-4)


# ------------------------------------------------------------ pair choice
def _c(program: str, reward: float, valid: bool = False) -> Candidate:
    return Candidate((len(program),), program, valid, reward)


def test_pair_is_best_valid_against_worst() -> None:
    best = _c("valid", 0.7, valid=True)
    candidates = [_c("a", 0.9), best, _c("worst", 0.0), _c("b", 0.3)]
    chosen, rejected = select_pair(candidates, 0.1) or (None, None)
    assert chosen == best and rejected == candidates[2]  # valid beats a higher invalid reward


def test_pairs_need_the_margin_and_different_programs() -> None:
    assert select_pair([_c("a", 0.5), _c("b", 0.45)], 0.1) is None
    assert select_pair([_c("a", 0.5), _c("b", 0.25)], 0.25) is not None  # exactly the margin
    assert select_pair([_c("same", 1.0, True), _c("same", 0.0)], 0.1) is None
    assert select_pair([_c("x", 0.0), _c("y", 0.0), _c("z", 0.0)], 0.1) is None


def test_epoch_order_is_seeded_and_fills_whole_steps() -> None:
    order = epoch_order(5, seed=3, epoch=0, per_step=4)
    assert len(order) == 8 and set(order) == set(range(5))
    assert order == epoch_order(5, seed=3, epoch=0, per_step=4)
    assert order != epoch_order(5, seed=3, epoch=1, per_step=4)
    assert len(epoch_order(1, seed=0, epoch=0, per_step=6)) == 6
    training = DPOTraining(lr=1e-3, warmup_steps=4)
    assert [lr_at(s, training) for s in (1, 4, 9)] == [2.5e-4, 1e-3, 1e-3]


# ----------------------------------------------------------------- config
def _raw(tasks: Path, tmp: Path, **sampling: Any) -> dict[str, Any]:
    return {
        "data": {"tasks": str(tasks), "splits": ["train"], "domains": ["code"], "max_tasks": 8},
        "model": {"from": str(TINY)},
        "sampling": {"n": 4, "max_new_tokens": 120, "workers": 2, "seed": 0, **sampling},
        "training": {
            "lr": 1e-4,
            "warmup_steps": 1,
            "micro_batch": 2,
            "epochs": 1,
            "save_every": 1,
            "num_threads": 1,
        },
        "output_dir": str(tmp / "model"),
        "run_dir": str(tmp / "run"),
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["sampling"].update(n=1), "sampling.n"),
        (lambda c: c["sampling"].update(min_margin=0), "sampling.min_margin"),
        (lambda c: c["sampling"].update(top_p=0), "sampling.top_p"),
        (lambda c: c["training"].update(beta=-1), "training.beta"),
        (lambda c: c["training"].update(grad_accum=0), "training.grad_accum"),
        (lambda c: c["training"].update(epochs=1.5), "training.epochs"),
        (lambda c: c["data"].update(domains=["video"]), "data.domains"),
        (lambda c: c["data"].update(max_tasks=0), "data.max_tasks"),
        (lambda c: c["model"].update({"from": ""}), "model.from"),
        (lambda c: c.update(run_dir=""), "run_dir"),
        (lambda c: c["training"].update(rate=1), "allowed"),
        (lambda c: c.pop("data"), "missing keys"),
    ],
)
def test_bad_configs_say_what_to_fix(change: Any, message: str, tmp_path: Path) -> None:
    raw = _raw(tmp_path / "tasks.jsonl", tmp_path)
    change(raw)
    with pytest.raises(ValueError, match=message):
        DPOConfig.from_dict(raw)


def test_shipped_config_is_valid_and_round_trips() -> None:
    config = DPOConfig.from_yaml(ROOT / "training" / "configs" / "dpo_tiny.yaml")
    assert config.model.from_dir == "genservice/models/tiny"
    assert config.data.splits == ["train"] and config.output_dir != config.model.from_dir
    assert DPOConfig.from_dict(config.to_dict()) == config


# -------------------------------------------------------------- end to end
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "genservice", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "tasks.jsonl"
    built = _cli("corpus", "build", "--n", "60", "--seed", "0", "-o", str(path))
    assert built.returncode == 0, built.stderr
    return path


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from genservice.generation.loader import load_model

    loaded = load_model(folder, device="cpu", dtype=torch.float32)
    return {k: v.detach().clone() for k, v in loaded.model.state_dict().items()}


@pytest.mark.slow
def test_cli_samples_pairs_trains_and_resumes(tasks: Path, tmp_path: Path) -> None:
    config = tmp_path / "dpo.yaml"
    config.write_text(yaml.safe_dump(_raw(tasks, tmp_path)))
    run = _cli("train", "dpo", "--config", str(config), "--no-progress")
    assert run.returncode == 0, run.stderr
    output = Path(run.stdout.strip().splitlines()[-1])  # DeepSpeed logs to stdout too
    assert output == tmp_path / "model"

    pairs = [json.loads(line) for line in (tmp_path / "run" / "pairs.jsonl").open()]
    sampled = [json.loads(line) for line in (tmp_path / "run" / "sampled.jsonl").open()]
    assert pairs and len(sampled) == 8 and sum(s["pair"] for s in sampled) == len(pairs)
    for pair in pairs:
        assert pair["chosen_reward"] - pair["rejected_reward"] >= 0.1
        assert pair["chosen_ids"] != pair["rejected_ids"] and pair["family"]
        assert all(isinstance(i, int) for key in ("prompt_ids", "chosen_ids", "rejected_ids")
                   for i in pair[key])  # fmt: skip
        assert pair["ref_chosen"] < 0 and pair["ref_rejected"] < 0

    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [m["step"] for m in metrics] == list(range(1, math.ceil(len(pairs) / 2) + 1))
    assert math.isclose(metrics[0]["loss"], math.log(2), abs_tol=1e-3)  # policy == reference
    assert all({"loss", "margin", "accuracy", "lr"} <= set(m) for m in metrics)

    summary = json.loads((output / "training_summary.json").read_text())
    assert summary["kind"] == "dpo" and summary["pairs"] == len(pairs)
    assert summary["steps"] == len(metrics) and "train dpo --config" in summary["command"]
    base = json.loads((TINY / "training_summary.json").read_text())
    assert summary["base"] == base and summary["model"] == base["model"]
    trained, start = _weights(output), _weights(TINY)
    assert trained.keys() == start.keys()
    from genservice.generation.gallery import Gallery

    tuned_gallery, shipped_gallery = Gallery.load(output), Gallery.load(TINY)
    assert tuned_gallery is not None and shipped_gallery is not None  # it still reads pictures
    assert [e.id for e in tuned_gallery.entries] == [e.id for e in shipped_gallery.entries]
    assert any(not torch.equal(trained[k], start[k]) for k in start)

    again = _cli("train", "dpo", "--config", str(config), "--no-progress")
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = _cli("train", "dpo", "--config", str(config), "--resume", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming at step {len(metrics)}" in resumed.stderr
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == len(metrics)


@pytest.mark.slow
def test_cli_refuses_to_train_on_no_pairs_or_no_tasks(tasks: Path, tmp_path: Path) -> None:
    raw = _raw(tasks, tmp_path, min_margin=2.0, n=2, max_new_tokens=24)
    raw["data"]["max_tasks"] = 1
    config = tmp_path / "dpo.yaml"
    config.write_text(yaml.safe_dump(raw))
    empty = _cli("train", "dpo", "--config", str(config), "--no-progress")
    assert empty.returncode == 2 and "no preference pairs" in empty.stderr
    assert not (tmp_path / "model").exists()

    raw["data"]["tasks"] = str(tmp_path / "absent.jsonl")
    config.write_text(yaml.safe_dump(raw))
    missing = _cli("train", "dpo", "--config", str(config))
    assert missing.returncode == 2 and "data.tasks: no such file" in missing.stderr
