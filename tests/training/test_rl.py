"""`genservice train rl` for real: the shipped model, the sandbox, DeepSpeed on CPU (gloo).

- a run killed with SIGKILL and resumed with --resume logs the same rewards, losses and
  held-out scores as an uninterrupted run, and ends with the same weights;
- the `deepspeed` launcher runs it as 2 processes (ZeRO-2, gloo), each with its share;
- the rewards are the tasks' own validators (the reference scores high, nonsense scores 0);
- bad configs and resume mistakes end with exit 2 and a message.

Code tasks keep it quick: short replies, cheap validation.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = REPO / "genservice" / "models" / "tiny"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rl-tasks") / "tasks.jsonl"
    subprocess.run(
        [str(BIN / "genservice"), "corpus", "build", "--n", "150", "--seed", "0", "-o", str(path)],
        check=True, capture_output=True, cwd=REPO,
    )  # fmt: skip
    return path


def _config(tasks: Path, root: Path, **training: object) -> Path:
    raw = {
        "data": {"tasks": str(tasks), "domains": ["code"], "heldout_tasks": 2, "audit_tasks": 4},
        "model": {"from": str(MODEL)},
        "rollout": {"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 160,
                    "reward_workers": 2},
        "loss": {"type": "dapo", "max_resample": 1, "sft_anchor": 0.2, "sft_anchor_rows": 2},
        "reward": {"weights": {"code": {"tests": 4.0}}},  # shaped, as the shipped config is
        "curriculum": {"headroom": 0.0, "learnability": 1.0},  # its state must resume too
        "training": {"lr": 1e-4, "micro_batch": 4, "updates_per_rollout": 2, "max_steps": 4,
                     "max_minutes": 20, "save_every": 2, "heldout_every": 2, "num_threads": 1,
                     **training},
        "deepspeed": str(REPO / "training/configs/deepspeed/cpu.json"),
        "output_dir": str(root / "model"),
        "run_dir": str(root / "run"),
    }  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    path = root / "rl.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _one_cad_step(tasks: Path, root: Path, model: Path = MODEL, **rollout: object) -> Path:
    """A one-step run on CAD tasks with groups of two and 40-token replies (they all fail)."""
    path = _config(tasks, root, max_steps=1, save_every=1, heldout_every=0, micro_batch=2)
    raw = yaml.safe_load(path.read_text())
    raw["data"] = {**raw["data"], "domains": ["cad"], "heldout_tasks": 0, "audit_tasks": 0}
    raw["model"] = {"from": str(model)}
    raw["rollout"] = {**raw["rollout"], "prompts_per_step": 2, "group_size": 2,
                      "max_new_tokens": 40, **rollout}  # fmt: skip
    raw["loss"] = {**raw["loss"], "max_resample": 0}
    raw["reward"] = {}
    path.write_text(yaml.safe_dump(raw))
    return path


def _train(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "genservice"), "train", "rl", "--no-progress", *args],
        capture_output=True, text=True, cwd=REPO, timeout=timeout,
    )  # fmt: skip


def _records(run: Path, event: str) -> list[dict]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == event]


def _weights(model: Path) -> str:
    return hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()


COMPARED = (
    "reward", "valid", "length", "loss", "kl", "anchor_nll", "clip_frac", "groups_kept", "families",
)  # fmt: skip


@pytest.mark.timeout(900)
def test_resume_after_kill_matches_an_uninterrupted_run(tasks: Path, tmp_path: Path):
    straight = _config(tasks, tmp_path / "straight")
    done = _train("--config", str(straight))
    assert done.returncode == 0, done.stderr[-3000:]
    expected = _records(tmp_path / "straight/run", "step")
    assert [r["step"] for r in expected] == [1, 2, 3, 4]
    assert any(r["groups_kept"] for r in expected), "no group carried a learning signal"
    assert all(0 < r["anchor_nll"] < 5 for r in expected)  # the supervised anchor ran
    assert _weights(tmp_path / "straight/model") != _weights(MODEL)

    killed = _config(tasks, tmp_path / "killed")
    latest = tmp_path / "killed/run/checkpoints/latest"
    process = subprocess.Popen(
        [str(BIN / "genservice"), "train", "rl", "--no-progress", "--config", str(killed)],
        cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while not (latest.is_file() and latest.read_text().strip() == "step-0000002"):
        assert process.poll() is None, "the run ended before its first checkpoint"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # mid step 3, as a crash or an OOM kill would
    process.wait()
    assert not (tmp_path / "killed/model").exists()

    again = _train("--config", str(killed))
    assert again.returncode == 2 and "--resume" in again.stderr  # never overwrites a run
    resumed = _train("--config", str(killed), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming at step 2" in resumed.stderr
    got = _records(tmp_path / "killed/run", "step")
    assert [r["step"] for r in got] == [1, 2, 3, 4]
    for want, have in zip(expected, got, strict=True):
        for key in COMPARED:
            assert have[key] == want[key], (want["step"], key)  # bit for bit

    def scores(run: Path) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "time_s"} for r in _records(run, "heldout")]

    assert scores(tmp_path / "killed/run") == scores(tmp_path / "straight/run")
    assert len(scores(tmp_path / "straight/run")) == 2
    assert _weights(tmp_path / "killed/model") == _weights(tmp_path / "straight/model")

    from genservice.generation.loader import load_model, model_kind

    loaded = load_model(tmp_path / "killed/model")  # what `generate/eval/run --model` load
    # The shipped model reads pictures, and so does its RL output.
    assert loaded.kind == model_kind(MODEL) == "vlm"
    from genservice.generation.gallery import Gallery

    shipped_gallery = Gallery.load(MODEL)  # and it answers a picture from the same gallery
    assert loaded.gallery is not None and shipped_gallery is not None
    assert len(loaded.gallery) == len(shipped_gallery)
    summary = json.loads((tmp_path / "killed/model/training_summary.json").read_text())
    assert summary["kind"] == "rl" and summary["steps"] == 4 and summary["base"] is not None
    from training.model_card import write_model_card

    card = write_model_card(tmp_path / "killed/model", []).read_text()
    stages = 1  # the RL run is the stage after every stage of the model it starts from
    base = summary["base"]
    while base is not None:
        stages, base = stages + 1, base.get("base")
    assert f"stage {stages} (online RL on validator rewards" in card
    assert "4 steps of 2 tasks" in card

    report = subprocess.run(
        [str(BIN / "genservice"), "train", "report", str(tmp_path / "killed/run")],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "killed/run/report.md").read_text()
    assert "reward.png" in text and (tmp_path / "killed/run/reward.png").stat().st_size > 1000


@pytest.mark.timeout(600)
@pytest.mark.parametrize("zero", ["zero2_cpu.json", "zero3_cpu.json"])
def test_deepspeed_launcher_runs_two_processes(tasks: Path, tmp_path: Path, zero: str):
    config = _config(tasks, tmp_path, max_steps=2, updates_per_rollout=1, heldout_every=2)
    raw = yaml.safe_load(config.read_text())
    raw["deepspeed"] = str(REPO / "training/configs/deepspeed" / zero)
    config.write_text(yaml.safe_dump(raw))
    env = {**os.environ, "DS_ACCELERATOR": "cpu"}
    launched = subprocess.run(
        [str(BIN / "deepspeed"), "--num_gpus", "2", "--master_port", str(_free_port()),
         "--module", "genservice", "train", "rl", "--no-progress", "--config", str(config)],
        capture_output=True, text=True, cwd=REPO, timeout=540, env=env,
    )  # fmt: skip
    assert launched.returncode == 0, (launched.stdout + launched.stderr)[-4000:]
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["world_size"] == 2
    steps = _records(tmp_path / "run", "step")
    assert [r["step"] for r in steps] == [1, 2] and all(r["world_size"] == 2 for r in steps)
    tag = tmp_path / "run/checkpoints/step-0000002"
    shards = sorted(p.name for p in tag.glob("*optim_states.pt"))
    assert len(shards) == 2, shards  # each rank keeps its share of the optimiser
    assert len(_records(tmp_path / "run", "heldout")) == 1  # rank 0 scores, the others wait

    from genservice.generation.loader import load_model

    base, tuned = load_model(MODEL), load_model(tmp_path / "model")  # whole, not a shard
    want, have = base.model.state_dict(), tuned.model.state_dict()
    assert {k: v.shape for k, v in have.items()} == {k: v.shape for k, v in want.items()}
    assert _weights(tmp_path / "model") != _weights(MODEL)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_rewards_are_the_tasks_own_validators(tasks: Path):
    from genservice.sandboxes import sandbox_limits
    from training.rewards import TaskRewards
    from training.sft import load_tasks
    from validators.sandbox import SandboxPool

    rows = load_tasks(tasks, ["train", "val", "test"], None)
    code = next(r for r in rows if r["domain"] == "code")
    cad = next(r for r in rows if r["domain"] == "cad")
    limits, _, isolation = sandbox_limits(None, None)
    with SandboxPool(size=2, limits=limits, isolation=isolation) as pool:
        rewards = TaskRewards(pool, limits, base=tasks.parent)
        good = rewards.judged(code, code["reference"])
        assert good.valid and good.reward > 0.9
        assert rewards.report(code, "def nothing():\n    pass\n").reward == 0.0
        hack = "import sys\nsys.exit(0)\n"
        assert not rewards.report(code, hack).valid
        part = rewards.report(cad, cad["reference"])
        assert part.valid and part.checks["similarity"].score > 0.99
        cube = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n"
        other = rewards.report(cad, cube)
        assert other.checks["similarity"].score < 0.9 and other.reward < part.reward
        long = rewards.judged(code, code["reference"], length=600, max_new_tokens=600,
                              buffer=100, penalty=0.5)  # fmt: skip
        assert long.reward == pytest.approx(good.reward - 0.5) and long.penalty == -0.5
        broken = {**cad, "id": "broken", "reference": "result = 1/0\n"}
        verdict = rewards.report(broken, cube)
        assert not verdict.valid and "cannot be judged" in verdict.error.message


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"loss": {"type": "ppo"}}, "loss.type"),
        ({"data": {"tasks": "/nonexistent/tasks.jsonl"}}, "no such file"),
        ({"model": {"from": "/nonexistent"}}, "not a model directory"),
    ],
)
def test_bad_configs_exit_2_with_a_message(tasks: Path, tmp_path: Path, patch, message):
    path = _config(tasks, tmp_path)
    raw = yaml.safe_load(path.read_text())
    for key, value in patch.items():
        raw[key] = {**raw[key], **value}
    path.write_text(yaml.safe_dump(raw))
    result = _train("--config", str(path), timeout=120)
    assert result.returncode == 2 and message in result.stderr


def test_resume_without_a_checkpoint_says_so(tasks: Path, tmp_path: Path):
    result = _train("--config", str(_config(tasks, tmp_path)), "--resume", timeout=300)
    assert result.returncode == 2 and "nothing to resume" in result.stderr


@pytest.mark.timeout(900)
def test_two_turn_repair_episodes_train_the_policy_on_its_own_failures(tasks: Path, tmp_path: Path):
    # 40 new tokens cannot hold a part: every first turn fails, so each CAD group is followed
    # by a second turn asked to fix its best failing candidate with the validator's error.
    path = _one_cad_step(tasks, tmp_path, repair_turns=True)
    result = _train("--config", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    (step,) = _records(tmp_path / "run", "step")
    assert step["repair_turns"]["groups"] == 2 and step["repair_turns"]["valid"] == 0.0


@pytest.mark.timeout(900)
def test_image_tasks_join_a_run_of_a_vision_language_model(tasks: Path, tmp_path: Path):
    # The shipped model reads pictures; image tasks drawn from the corpus's parts. Rollouts are
    # asked with the pictures, and the update reads them again.
    pictured = tmp_path / "images" / "tasks.jsonl"
    pictured.parent.mkdir()
    drawn = subprocess.run(
        [str(BIN / "genservice"), "corpus", "images", str(tasks), "--share", "0.2", "--images-only",
         "--split", "train", "--workers", "2", "--quiet", "-o", str(pictured)],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert drawn.returncode == 0, drawn.stderr
    path = _one_cad_step(pictured, tmp_path, model=MODEL)
    result = _train("--config", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    (step,) = _records(tmp_path / "run", "step")
    assert step["loss"] is not None
    assert (tmp_path / "model" / "processor_config.json").is_file(), "it stays a VLM"
