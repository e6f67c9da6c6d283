"""SFT on a synthetic task set with a micro model: masking, learning, saving, resuming, the CLI."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from genservice.generation.prompts import build_messages
from training.sft import (
    IGNORE_INDEX,
    METRICS_FILE,
    SUMMARY_FILE,
    SetupError,
    cut_rows,
    encode_task,
    length_grouped_batches,
    parameter_block_end,
    reply_format,
    train_device,
    train_sft,
)
from training.sft_config import SFTConfig
from training.tokenizer import IM_END, iter_rows_texts, train_tokenizer

ROOT = Path(__file__).resolve().parents[2]


def synthetic_rows(n: int = 40) -> list[dict[str, Any]]:
    """Task rows like the corpus writes: plates and flanges with dimensions, small functions."""
    rng = random.Random(7)
    rows = []
    for i in range(n):
        if i % 3 == 2:
            k = rng.randint(2, 9)
            domain, prompt = "code", f"Write add_{k}(x): return x plus {k}."
            reference = f"def add_{k}(x):\n    return x + {k}\n"
        else:
            a, b, t = rng.randint(20, 200), rng.randint(10, 150), rng.randint(2, 20)
            domain, prompt = "cad", f"A plate {a} x {b} mm, {t} mm thick — Ø{t + 1} hole."
            reference = (
                f"import cadquery as cq\n\nlength = {a}\nwidth = {b}\nthickness = {t}\n"
                f'hole_d = {t + 1}\n\nresult = (\n    cq.Workplane("XY")\n'
                '    .box(length, width, thickness)\n    .faces(">Z")\n    .workplane()\n'
                "    .hole(hole_d)\n)\n"
            )
        rows.append(
            {
                "id": f"task-{i}",
                "domain": domain,
                "family": "plate" if domain == "cad" else "adder",
                "split": "val" if i % 10 == 9 else "train",
                "prompt": prompt,
                "reference": reference,
            }
        )
    return rows


def micro_config(data: Path, output: Path, **training: Any) -> dict[str, Any]:
    """A model small enough to train 20 steps in seconds on one thread."""
    return {
        "data": {"train": str(data), "val": None},
        "model": {
            "init": {
                "hidden_size": 32,
                "num_layers": 1,
                "num_heads": 2,
                "num_kv_heads": 1,
                "intermediate_size": 64,
                "max_position_embeddings": 512,
                "vocab_size": 400,
            }
        },
        "training": {
            "max_seq_len": 512,
            "batch_size": 4,
            "max_steps": 20,
            "lr": 0.01,
            "warmup_steps": 2,
            "log_every": 1,
            "eval_every": 10,
            "save_every": 10,
            "num_threads": 1,
            "seed": 0,
            **training,
        },
        "output_dir": str(output),
    }


def step_losses(folder: Path) -> dict[int, float]:
    """Loss of every logged step of a run (log_every 1)."""
    losses = {}
    for line in (folder / METRICS_FILE).read_text().splitlines():
        record = json.loads(line)
        if record["event"] == "train":
            losses[record["step"]] = record["loss"]
    return losses


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "tasks.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in synthetic_rows()))
    return path


@pytest.fixture(scope="module")
def trained(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "model"
    config = SFTConfig.from_dict(micro_config(data, out))
    assert train_sft(config, command="pytest", show_progress=False) == out
    return out


def test_labels_cover_exactly_the_reply_and_end_of_turn() -> None:
    rows = synthetic_rows()
    tok = train_tokenizer(iter_rows_texts(rows), 400)
    row = rows[0]
    example = encode_task(tok, row, reply_format(tok))
    messages = build_messages(row["domain"], row["prompt"])
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    n_prompt = len(tok.encode(prompt, add_special_tokens=False))
    assert example.labels[:n_prompt] == [IGNORE_INDEX] * n_prompt
    assert example.labels[n_prompt:] == example.input_ids[n_prompt:]
    assert IGNORE_INDEX not in example.labels[n_prompt:]
    assert tok.decode(example.input_ids[:n_prompt]) == prompt
    assert tok.decode(example.labels[n_prompt:]) == row["reference"] + IM_END
    full = tok.apply_chat_template(
        [*messages, {"role": "assistant", "content": row["reference"]}], tokenize=False
    )
    assert tok.decode(example.input_ids) == full.rstrip("\n")


def test_a_program_is_cut_after_its_parameter_block() -> None:
    rows = synthetic_rows()
    tok = train_tokenizer(iter_rows_texts(rows), 400)
    plate = rows[0]["reference"]
    cut = parameter_block_end(plate)
    assert cut is not None and plate[:cut].endswith(f"hole_d = {plate.split('hole_d = ')[1][:2]}")
    assert plate[:cut].startswith("import cadquery as cq\n\nlength = ")
    assert plate[cut:].startswith("\n\nresult = (")
    # The cut reply is labelled as far as the cut and has no end of turn: the program goes on.
    example = encode_task(tok, rows[0], reply_format(tok), cut_at=cut)
    reply = [t for t in example.labels if t != IGNORE_INDEX]
    assert tok.decode(reply) == plate[:cut]
    assert len(example.input_ids) < len(encode_task(tok, rows[0], reply_format(tok)).input_ids)
    # No block, or nothing after it: nothing to cut.
    assert parameter_block_end("def add(x):\n    return x + 1\n") is None
    assert parameter_block_end("import cadquery as cq\n\nwidth = 3.0\n") is None
    assert parameter_block_end('NAME = "a"\nN = 2\n\nresult = N\n') == len('NAME = "a"\nN = 2')


def test_the_parameter_block_goes_on_through_derived_parameters() -> None:
    """Parameters derived by arithmetic right after the constants belong to the block (the
    model must learn them from the request); after a blank line they are the body's."""
    head = "import cadquery as cq\n\nouter_d = 60.0\nbolt_d = 5.5\nbore_d = 0.4 * outer_d\n"
    head += "pcd = (outer_d + bore_d) / 2"
    body = "\n\nresult = cq.Workplane().circle(outer_d / 2).extrude(5)\n"
    assert parameter_block_end(head + body) == len(head)
    spaced = "import cadquery as cq\n\nmodule = 2.0\nteeth = 20\n\nrp = module * teeth / 2"
    assert parameter_block_end(spaced + body) == spaced.index("\n\nrp")
    for other in ("r = outer_d / 2 + wall", "r = cq.Workplane()", "r = len(name)"):
        program = f"import cadquery as cq\n\nouter_d = 60.0\n{other}{body}"
        assert parameter_block_end(program) == len("import cadquery as cq\n\nouter_d = 60.0")


def test_whole_program_share_cuts_cad_and_scene_rows_only() -> None:
    rows = synthetic_rows(400)
    cuts = cut_rows(rows, 0.3, seed=0)
    assert cuts == cut_rows(rows, 0.3, seed=0)  # seeded by the run, per row id
    assert cuts != cut_rows(rows, 0.3, seed=1)
    assert all(c is None for r, c in zip(rows, cuts, strict=True) if r["domain"] == "code")
    cad = [c for r, c in zip(rows, cuts, strict=True) if r["domain"] == "cad"]
    assert 0.6 < sum(c is not None for c in cad) / len(cad) < 0.8
    assert all(c is None for c in cut_rows(rows, 1.0, seed=0))
    # A composition's body and a repair's fix are what the row teaches: never cut.
    kept = [{**r, "family": "compositional"} for r in rows if r["domain"] == "cad"]
    kept += [{**r, "repair": True} for r in rows if r["domain"] == "cad"]
    assert all(c is None for c in cut_rows(kept, 0.0, seed=0))


def test_a_run_with_cut_programs_trains_and_says_how_many(data: Path, tmp_path: Path) -> None:
    raw = micro_config(data, tmp_path / "cut", max_steps=4, eval_every=2, save_every=0)
    raw["data"]["whole_program_share"] = 0.5
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    summary = json.loads((tmp_path / "cut" / SUMMARY_FILE).read_text())
    cad_rows = sum(1 for r in synthetic_rows() if r["domain"] == "cad" and r["split"] == "train")
    assert 0 < summary["data"]["cut_after_parameters"] < cad_rows
    assert summary["config"]["data"]["whole_program_share"] == 0.5
    assert summary["final_val_loss"] is not None


def test_length_grouped_batches_cover_everything_once_with_little_padding() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(50, 500) for _ in range(1000)]
    batches = length_grouped_batches(lengths, 8, seed=3)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert batches == length_grouped_batches(lengths, 8, seed=3)
    assert batches != length_grouped_batches(lengths, 8, seed=4)
    padding = sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)
    assert padding < 0.05 * sum(lengths)


def test_loss_decreases_and_the_run_is_summarised(trained: Path) -> None:
    losses = step_losses(trained)
    assert sorted(losses) == list(range(1, 21))
    first, last = [losses[s] for s in (1, 2, 3)], [losses[s] for s in (18, 19, 20)]
    assert sum(last) / 3 < 0.8 * sum(first) / 3
    evals = [json.loads(x) for x in (trained / METRICS_FILE).read_text().splitlines()]
    assert [e["step"] for e in evals if e["event"] == "eval"] == [10, 20]
    summary = json.loads((trained / SUMMARY_FILE).read_text())
    assert summary["steps"] == 20 and summary["stopped"] == "max_steps"
    assert summary["command"] == "pytest"
    assert summary["data"]["train_examples"] == 36 and summary["data"]["val_examples"] == 4
    assert summary["data"]["dropped_too_long"] == 0
    assert summary["data"]["by_domain"] == {"cad": 24, "code": 12}
    assert summary["model"]["parameters"] > 0
    assert summary["final_val_loss"] is not None and summary["final_train_loss"] is not None
    assert summary["config"]["model"]["init"]["hidden_size"] == 32


def test_saved_model_loads_locally_and_generates(trained: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert (trained / "model.safetensors").is_file()
    tok = AutoTokenizer.from_pretrained(str(trained), local_files_only=True)
    # Serving's tokenizer (transformers picks Qwen2Tokenizer for a qwen2 dir) splits text exactly
    # as the one the model was trained with.
    rows = [r for r in synthetic_rows() if r["split"] == "train"]
    fresh = train_tokenizer(iter_rows_texts(rows), 400)
    for row in rows:
        assert encode_task(tok, row, reply_format(tok)) == encode_task(
            fresh, row, reply_format(fresh)
        )
    model = AutoModelForCausalLM.from_pretrained(str(trained), local_files_only=True)
    generation = json.loads((trained / "generation_config.json").read_text())
    assert generation["eos_token_id"] == tok.convert_tokens_to_ids(IM_END)
    assert generation["pad_token_id"] == tok.pad_token_id
    messages = build_messages("cad", "A plate 100 x 50 mm, 5 mm thick — Ø6 hole.")
    inputs = tok.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]
    assert isinstance(tok.decode(out[0, inputs["input_ids"].shape[1] :]), str)


def test_resume_continues_the_same_loss_curve(trained: Path, data: Path, tmp_path: Path) -> None:
    checkpoint = trained / "checkpoints" / "step-0000010"
    assert checkpoint.is_dir()
    out = tmp_path / "resumed"
    config = SFTConfig.from_dict(micro_config(data, out))
    train_sft(config, resume=checkpoint, command="pytest", show_progress=False)
    resumed, original = step_losses(out), step_losses(trained)
    assert sorted(resumed) == list(range(11, 21))
    for step in range(11, 21):
        assert resumed[step] == original[step]  # bit for bit: same weights, state and batches
    summary = json.loads((out / SUMMARY_FILE).read_text())
    assert summary["steps"] == 20 and summary["resumed_from"] == str(checkpoint)


def test_fine_tune_from_a_local_model_dir(trained: Path, data: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    raw = micro_config(data, tmp_path / "tuned", max_steps=5, eval_every=0, save_every=0)
    raw["model"] = {"from": str(trained)}
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    tuned = tmp_path / "tuned"
    assert (tuned / "model.safetensors").is_file()
    base_tok = AutoTokenizer.from_pretrained(str(trained), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(str(tuned), local_files_only=True)
    assert tok.get_vocab() == base_tok.get_vocab()
    # Starting from the trained model, the first step is already far below a fresh model's.
    assert step_losses(tuned)[1] < 0.8 * step_losses(trained)[1]
    summary = json.loads((tuned / SUMMARY_FILE).read_text())
    assert summary["model"]["from"] == str(trained) and summary["steps"] == 5
    # The run it started from stays on record, for the model card's list of stages.
    assert summary["base"] == json.loads((trained / SUMMARY_FILE).read_text())


def test_a_model_fine_tuned_from_one_with_a_gallery_keeps_it(
    trained: Path, data: Path, tmp_path: Path
) -> None:
    from genservice.generation.gallery import GALLERY_DIR, Gallery

    base = tmp_path / "base"
    shutil.copytree(trained, base)
    shipped = ROOT / "genservice" / "models" / "tiny" / GALLERY_DIR
    shutil.copytree(shipped, base / GALLERY_DIR)
    tuned = tmp_path / "tuned"
    (tuned / GALLERY_DIR).mkdir(parents=True)
    (tuned / GALLERY_DIR / "stale.txt").write_text("from an earlier run")
    raw = micro_config(data, tuned, max_steps=1, eval_every=0, save_every=0)
    raw["model"] = {"from": str(base)}
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    carried, original = Gallery.load(tuned), Gallery.load(base)
    assert carried is not None and original is not None
    assert [e.id for e in carried.entries] == [e.id for e in original.entries]
    assert not (tuned / GALLERY_DIR / "stale.txt").exists()  # the old run's folder is replaced
    # A model trained from scratch has no gallery of its own.
    fresh = tmp_path / "fresh"
    train_sft(
        SFTConfig.from_dict(micro_config(data, fresh, max_steps=1, eval_every=0, save_every=0)),
        command="pytest", show_progress=False,
    )  # fmt: skip
    assert Gallery.load(fresh) is None


def test_time_budget_stops_cleanly_and_saves(data: Path, tmp_path: Path) -> None:
    raw = micro_config(data, tmp_path / "budget", max_minutes=1e-6, save_every=0)
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    summary = json.loads((tmp_path / "budget" / SUMMARY_FILE).read_text())
    assert summary["stopped"] == "max_minutes" and summary["steps"] == 1
    assert (tmp_path / "budget" / "model.safetensors").is_file()
    assert (tmp_path / "budget" / "checkpoints" / "step-0000001").is_dir()


def test_the_training_device_resolves_and_a_missing_gpu_is_a_setup_error(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.delenv("GENSERVICE_DEVICE", raising=False)
    config = SFTConfig.from_dict(micro_config(data, tmp_path / "out"))
    assert config.training.device == "auto" and config.training.bf16 is None
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert train_device(config)[0] == expected
    monkeypatch.setenv("GENSERVICE_DEVICE", "cpu")  # auto defers to the environment
    assert train_device(config) == ("cpu", False)  # no bf16 autocast on the CPU unless asked
    bf16 = SFTConfig.from_dict(micro_config(data, tmp_path / "out", bf16=True))
    assert train_device(bf16) == ("cpu", True)
    if torch.cuda.is_available():
        return
    cuda = SFTConfig.from_dict(micro_config(data, tmp_path / "out", device="cuda"))
    with pytest.raises(SetupError, match=r"training\.device: .*no CUDA device"):
        train_sft(cuda, command="pytest", show_progress=False)
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_retrieval_run_trains_on_examples_and_ships_its_index(data: Path, tmp_path: Path) -> None:
    from genservice.generation.loader import load_model
    from genservice.generation.retrieval import ExampleIndex

    raw = micro_config(data, tmp_path / "rag", max_steps=10, save_every=5)
    raw["retrieval"] = {"per_family": 5, "plain_share": 0.25, "seed": 0}
    train_sft(SFTConfig.from_dict(raw), command="pytest", show_progress=False)
    out = tmp_path / "rag"
    summary = json.loads((out / SUMMARY_FILE).read_text())["data"]
    assert summary["retrieval"]["indexed"] == 10  # 5 per family, two families
    # Most rows carry an example; the plain share (a hash of the id) and nothing else does not.
    assert 0.5 * summary["train_examples"] < summary["with_retrieved_example"]
    assert summary["with_retrieved_example"] < summary["train_examples"]
    index = ExampleIndex.load(out)
    assert index is not None and index.max_seq_len == 512
    assert ExampleIndex.load(out / "checkpoints" / "step-0000005") is not None
    # The saved model builds its prompts with the example, as training did.
    loaded = load_model(out)
    messages = loaded.messages("cad", "A plate 90 x 60 mm, 4 mm thick — Ø5 hole.")
    assert messages[1]["content"].startswith("Example request: A plate")
    # Training again without retrieval into the same folder leaves no stale index behind.
    plain = micro_config(data, out, max_steps=2, save_every=0)
    plain["checkpoint_dir"] = str(tmp_path / "plain-checkpoints")
    train_sft(SFTConfig.from_dict(plain), command="pytest", show_progress=False)
    assert ExampleIndex.load(out) is None


def test_retrieval_prompt_of_a_row_never_shows_the_row_itself(data: Path) -> None:
    from genservice.generation.retrieval import ExampleIndex
    from training.sft import _retrieval_prompts

    rows = [r for r in synthetic_rows() if r["split"] == "train"]
    tok = train_tokenizer(iter_rows_texts(rows), 400)
    index = ExampleIndex.from_tasks(rows, per_family=50, seed=0)
    prompts = _retrieval_prompts(tok, rows, index, plain_share=0.0)
    assert all(p is not None for p in prompts)
    references = Counter(r["reference"] for r in rows)
    for row, messages in zip(rows, prompts, strict=True):
        assert messages is not None
        shown = messages[1]["content"].split("\n\nRequest: ")[0]
        if references[row["reference"]] == 1:  # (a twin task may rightly be shown)
            assert row["reference"].strip() not in shown


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["training"].update(batch_size=0), "training.batch_size"),
        (lambda c: c["training"].update(max_steps=None), "epochs or max_steps"),
        (lambda c: c["training"].update(max_seq_len=4096), "max_position_embeddings"),
        (lambda c: c["training"].update(lr="fast"), "training.lr"),
        (lambda c: c["training"].update(schedule="step"), "training.schedule"),
        (lambda c: c["model"].update({"from": "/some/model"}), "exactly one of"),
        (lambda c: c["model"]["init"].update(num_heads=3), "multiple of num_heads"),
        (lambda c: c["model"]["init"].update(architecture="gpt2"), "model.from"),
        (lambda c: c["data"].update(val=None, train_splits=["val"]), "overlap"),
        (lambda c: c.update(trainer="sft"), "unknown keys"),
        (lambda c: c["training"].update(lrate=1), "allowed"),
        (lambda c: c.update(retrieval={"per_family": 0}), "retrieval.per_family"),
        (lambda c: c.update(retrieval={"plain_share": 1.5}), "retrieval.plain_share"),
        (lambda c: c.update(retrieval={"k": 2}), "allowed"),
        (lambda c: c.update(retrieval=True), "retrieval must be a mapping"),
        (lambda c: c["data"].update(whole_program_share=0), "data.whole_program_share"),
        (lambda c: c["data"].update(whole_program_share=1.5), "data.whole_program_share"),
        (lambda c: c["data"].update(whole_program_share="most"), "data.whole_program_share"),
        (lambda c: c["training"].update(device="gpu"), "training.device must be auto, cpu"),
        (lambda c: c["training"].update(device="cuda:x"), "training.device must be auto, cpu"),
        (lambda c: c["training"].update(bf16="yes"), "training.bf16"),
    ],
)
def test_bad_configs_say_what_to_fix(change: Any, message: str, tmp_path: Path) -> None:
    raw = micro_config(tmp_path / "tasks.jsonl", tmp_path / "out")
    change(raw)
    with pytest.raises(ValueError, match=message):
        SFTConfig.from_dict(raw)


def test_shipped_tiny_config_is_valid() -> None:
    config = SFTConfig.from_yaml(ROOT / "training" / "configs" / "tiny.yaml")
    init = config.model.init
    assert init is not None
    params = init.vocab_size * init.hidden_size + init.num_layers * (
        init.hidden_size * init.hidden_size * 2
        + 2 * init.hidden_size * init.num_kv_heads * (init.hidden_size // init.num_heads)
        + 3 * init.hidden_size * init.intermediate_size
    )
    assert params * 4 <= 40e6  # float32 safetensors within 40 MB
    assert config.training.max_minutes is not None and config.training.max_minutes <= 70


def test_the_shipped_stage_two_config_fits_90_minutes_with_stage_one() -> None:
    stage_one = SFTConfig.from_yaml(ROOT / "training" / "configs" / "tiny.yaml")
    stage_two = SFTConfig.from_yaml(ROOT / "training" / "configs" / "tiny_stage2.yaml")
    assert stage_two.model.from_dir == stage_one.output_dir  # it starts from the stage-1 weights
    assert stage_two.data.whole_program_share < 1
    assert (stage_one.training.max_minutes or 0) + (stage_two.training.max_minutes or 0) <= 90
    summary = json.loads(
        (ROOT / "genservice" / "models" / "tiny" / "training_summary.json").read_text()
    )
    stages = []
    while summary is not None:  # the shipped run, then the run it continued, ...
        stages.append(summary)
        summary = summary.get("base")
    commands = [stage["command"] for stage in reversed(stages)]
    assert commands[0].endswith("training/configs/tiny.yaml")
    assert commands[1].endswith("training/configs/tiny_stage2.yaml")
    assert all(stage["wall_time_s"] / 60 <= 90 for stage in stages)  # each stage's budget
    assert (stages[-1]["wall_time_s"] + stages[-2]["wall_time_s"]) / 60 <= 90


def test_the_stage_three_configs_continue_stage_two_within_90_minutes() -> None:
    stage_two = SFTConfig.from_yaml(ROOT / "training" / "configs" / "tiny_stage2.yaml")
    stage_three = SFTConfig.from_yaml(ROOT / "training" / "configs" / "tiny_stage3.yaml")
    stage_three_b = SFTConfig.from_yaml(ROOT / "training" / "configs" / "tiny_stage3b.yaml")
    # stage 2 -> stage 3 -> stage 3b, each from the one before
    assert stage_three.model.from_dir == stage_two.output_dir
    assert stage_three_b.model.from_dir == stage_three.output_dir
    assert (stage_three_b.training.max_minutes or 0) <= 90
    assert (stage_three.training.max_minutes or 0) <= 90
    # a repair row carries its failed program: it must fit the window the model was built with
    assert stage_three.training.max_seq_len <= 1024


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "genservice", "train", "sft", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_cli_trains_refuses_to_overwrite_and_resumes(data: Path, tmp_path: Path) -> None:
    config = tmp_path / "micro.yaml"
    raw = micro_config(data, tmp_path / "unused", max_steps=4, eval_every=0, save_every=2)
    config.write_text(yaml.safe_dump(raw))
    out = tmp_path / "cli-model"
    run = _cli("--config", str(config), "--output", str(out), "--no-progress")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(out)
    assert (out / "model.safetensors").is_file() and (out / SUMMARY_FILE).is_file()
    summary = json.loads((out / SUMMARY_FILE).read_text())
    assert "train sft --config" in summary["command"]
    again = _cli("--config", str(config), "--output", str(out), "--no-progress")
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = _cli("--config", str(config), "--output", str(out), "--resume", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming at step 4" in resumed.stderr


def test_cli_usage_errors(data: Path, tmp_path: Path) -> None:
    missing = _cli("--config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "no such config file" in missing.stderr
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(micro_config(tmp_path / "absent.jsonl", tmp_path / "o")))
    no_data = _cli("--config", str(config))
    assert no_data.returncode == 2 and "data.train: no such file" in no_data.stderr
    raw = micro_config(data, tmp_path / "o")
    raw["training"]["batch_size"] = -1
    config.write_text(yaml.safe_dump(raw))
    bad = _cli("--config", str(config))
    assert bad.returncode == 2 and "training.batch_size" in bad.stderr
    config.write_text(yaml.safe_dump(micro_config(data, tmp_path / "o")))
    budget = _cli("--config", str(config), "--max-minutes", "-3")
    assert budget.returncode == 2 and "--max-minutes" in budget.stderr
    resume = _cli("--config", str(config), "--resume")
    assert resume.returncode == 2 and "no checkpoint" in resume.stderr
    config.write_text("data: [unclosed\n")
    broken = _cli("--config", str(config))
    assert broken.returncode == 2 and "not valid YAML" in broken.stderr
