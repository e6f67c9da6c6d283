"""The model card of a trained model directory: data, size, the exact commands, measured metrics.

Written from what the run recorded (training_summary.json) and what `genservice eval` measured
(eval.json), so the card never states a figure nobody measured.

Usage: python -m training.model_card MODEL_DIR [EVAL_DIR ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from training.evaluate import markdown_table, modality_table, repair_table


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def headline(summary: dict[str, Any]) -> list[str]:
    """One line per measured domain with the figures the targets are stated in."""
    lines = []
    for domain, group in summary["domains"].items():
        if domain == "code":
            pass_n = next(
                (v for k, v in group.items() if k.startswith("code_pass@") and k != "code_pass@1"),
                None,
            )
            lines.append(
                f"- code: pass@1 {_pct(group['code_pass@1'])}, pass@N {_pct(pass_n)} "
                f"({group['tasks']} tasks)"
            )
            continue
        one = group["pass@1"]
        best_key = next(k for k in group if k.startswith("best_of_"))
        best = group[best_key]
        lines.append(
            f"- {domain}: invalidity@1 {_pct(one['invalidity'])}, spec adherence@1 "
            f"{_pct(one['spec_adherence'])}, request adherence@1 "
            f"{_pct(one.get('request_adherence'))}, median IoU@1 {_num(one['iou_valid_median'])} "
            f"(valid) / {_num(one['iou_all_median'])} (invalid = 0), median Chamfer×10³ "
            f"{_num(one['chamfer_x1000_median'])}; {best_key.replace('_', ' ')}: invalidity "
            f"{_pct(best['invalidity'])}, spec {_pct(best['spec_adherence'])}, request "
            f"{_pct(best.get('request_adherence'))}, median IoU "
            f"{_num(best['iou_all_median'])} ({group['tasks']} tasks)"
        )
    return lines


def _stages(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs that made the model, first to last (a fine-tune records its base run)."""
    base = summary.get("base")
    return [*(_stages(base) if base else []), summary]


def _training_lines(summary: dict[str, Any]) -> list[str]:
    stages = _stages(summary)
    lines = []
    for number, stage in enumerate(stages, start=1):
        config = stage.get("config", {})
        if stage.get("kind") == "rl":
            lines += _rl_lines(number, stage)
            continue
        start = config.get("model", {}).get("from")
        what = "from scratch" if not start else f"continued from the stage-{number - 1} weights"
        where = stage["data"]["train_file"]
        lines += [
            f"- stage {number} ({what}, on `{where}`): {stage['steps']} steps "
            f"({stage['epochs']:.2f} epochs), stopped by {stage['stopped']}, "
            f"{stage['train_time_s'] / 60:.1f} minutes on {stage['num_threads']} CPU threads; "
            f"final train loss {stage['final_train_loss']:.4f}, val loss "
            f"{stage['final_val_loss']:.4f}",
            f"  settings: `{json.dumps(config.get('training'))}`",
        ]
    soup = summary.get("soup")
    if soup:
        lines.append(
            f"- then stage {len(stages)}'s weights were taken {soup['share']:.0%} of the way "
            f"from the stage-{len(stages) - 1} weights to its own (`python -m training.soup`, "
            "no training): the new skill kept with much of the old behaviour"
        )
    if len(stages) > 1:
        total = sum(stage["train_time_s"] for stage in stages) / 60
        lines.append(f"- in all: {total:.1f} minutes of training on 2 CPU cores")
    return lines


def _rl_lines(number: int, stage: dict[str, Any]) -> list[str]:
    """An RL stage: what it optimised, for how long, and the reward it reached."""
    config = stage["config"]
    loss, rollout = config["loss"], config["rollout"]
    return [
        f"- stage {number} (online RL on validator rewards from the stage-{number - 1} weights, "
        f"`{config['data']['tasks']}` train split, {stage['tasks']} tasks): {stage['steps']} "
        f"steps of {rollout['prompts_per_step']} tasks x {rollout['group_size']} candidates, "
        f"{loss['type']} loss, {stage['train_time_s'] / 60:.1f} minutes on "
        f"{stage['num_threads']} CPU threads x {stage['world_size']} process(es); mean reward "
        f"of the last 10 % of steps {stage['final_reward']:.3f}, validity "
        f"{100 * stage['final_valid']:.1f} %",
        f"  settings: `{json.dumps({k: config[k] for k in ('rollout', 'loss', 'training')})}`",
    ]


def _retrieval_lines(data: dict[str, Any]) -> list[str]:
    """How the model uses retrieved examples, when it was trained with them."""
    retrieval = data.get("retrieval")
    if not retrieval:
        return []
    return [
        f"- retrieval: each request is shown with the nearest of {retrieval['indexed']:,} solved "
        f"train tasks (up to {retrieval['per_family']} a family; TF-IDF over the request's words, "
        "same domain, shipped in `retrieval/` beside the weights) and that task's program; "
        f"{data['with_retrieved_example']:,} of the {data['train_examples']:,} training prompts "
        f"had one ({retrieval['plain_share']:.0%} were left without on purpose, and an example "
        "is left out when the prompt with it and a reply as long as its program would not fit)"
    ]


def _cut_lines(summary: dict[str, Any]) -> list[str]:
    """Stages that trained part of their CAD/scene rows on the parameter block alone."""
    lines = []
    for number, stage in enumerate(_stages(summary), start=1):
        cut = stage.get("data", {}).get("cut_after_parameters")
        # An RL or DPO run repeats its start model's data summary, not its cut: only a stage
        # configured with a share cut its rows.
        share = stage.get("config", {}).get("data", {}).get("whole_program_share")
        if cut and share is not None:
            lines.append(
                f"- stage {number}: {cut:,} of its {stage['data']['train_examples']:,} rows were "
                f"trained on the program up to the end of its parameter block (only "
                f"{share:.0%} of CAD and scene rows kept their whole program; "
                "`data.whole_program_share`)"
            )
    return lines


def _vision(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The vision encoder's settings when a stage joined one (a vision-language model)."""
    for stage in _stages(summary):
        vision = ((stage.get("config") or {}).get("model") or {}).get("vision")
        if vision:
            return dict(vision)
    return None


def _built_with(summary: dict[str, Any], option: str) -> bool:
    """Whether any stage's corpus was built with this `genservice corpus build` option."""
    return any(option in (stage.get("corpus_command") or "") for stage in _stages(summary))


def _commands(summary: dict[str, Any]) -> list[str]:
    lines = []
    for stage in _stages(summary):
        lines.append(stage.get("corpus_command") or CORPUS_COMMAND)
        lines.append(stage["command"])
    soup = summary.get("soup")
    if soup:
        lines.append(
            f"python -m training.soup {soup['tuned']} {soup['start']} --share {soup['share']} "
            f"-o {soup.get('output') or soup['tuned'] + '-soup'}"
        )
    return lines


CORPUS_COMMAND = "genservice corpus build --n 40000 --seed 0 -o data/corpus/corpus.jsonl"


def _gallery_lines(model_dir: Path) -> list[str]:
    """What the model's picture gallery holds (genservice/generation/gallery.py), if it has one."""
    index = model_dir / "gallery" / "index.json"
    if not index.is_file():
        return []
    meta = json.loads(index.read_text())
    return [
        f"- gallery: {meta['entries']:,} train-split programs of `{meta['source']}` drawn from "
        f"{len(meta['views'])} viewpoints (`genservice corpus gallery`); a picture request gets "
        "the ones that look most like its picture as candidates beside the samples"
    ]


def _look_alike_rows(summary: dict[str, Any]) -> int:
    """How many picture rows the stage that taught look-alikes trained with one in the prompt."""
    # max, not sum: an RL or DPO run repeats its start model's data summary.
    counts = [stage.get("data", {}).get("with_look_alike") or 0 for stage in _stages(summary)]
    return max(counts)


def _look_alike_lines(summary: dict[str, Any]) -> list[str]:
    """How the model reads look-alikes, when a stage trained it to."""
    rows = _look_alike_rows(summary)
    if not rows:
        return []
    return [
        f"- look-alikes: {rows:,} picture rows were trained with the program of the gallery part "
        "that looks most like the picture in the prompt (never the row's own reference; "
        "`genservice corpus look-alikes`); `look_alike.json` beside the weights makes serving, "
        "evaluation, RL and DPO show it one with every new CAD or scene picture request: the "
        "one of the request's gallery parts that the checks score best, built before sampling"
    ]


def write_model_card(model_dir: Path, eval_dirs: list[Path]) -> Path:
    """Write MODEL_DIR/README.md from the training summary and the evaluations given."""
    summary = json.loads((model_dir / "training_summary.json").read_text())
    data, model = summary["data"], summary["model"]
    vision = _vision(summary)
    lines = [
        f"# {model_dir.name}: genservice's embedded model",
        "",
        "A small causal language model (Qwen2 architecture) trained from scratch on this machine "
        "class (2 CPU cores) from genservice's own procedural corpus. It writes CadQuery scripts "
        "for parts and scenes and Python functions, in the chat format of "
        "`genservice/generation/prompts.py`. Nothing was downloaded."
        + (
            " A second stage taught it to edit: given a program and an instruction "
            '("make it 12 mm thick"), write the changed program.'
            if summary.get("base")
            else ""
        )
        + (
            " A further stage taught it a vocabulary beyond its families (compositional parts: "
            "sketches, solids and features composed, with everyday names) and to repair a "
            "failed program from the validator's error."
            if _built_with(summary, "--compositional")
            else ""
        )
        + (
            " Then a vision encoder, trained from scratch, was joined to it (LLaVA): it reads "
            "a picture of a part (a render, a screenshot, a line drawing), with or without "
            "words, and writes the CadQuery program that builds it."
            if vision
            else ""
        )
        + (
            " A stage after that taught it to read a request by the parts it lists rather "
            "than by the thing's name (furniture on legs, tubes bent on a radius, plates "
            "leaning at an angle, often called by a made-up word), so that a thing it was "
            "never named can still be built from its parts."
            if _built_with(summary, "--novel-names")
            else ""
        )
        + (
            " Another taught it the defaults people leave unsaid: a bend said by its radius "
            "alone turns a right angle, a backrest of unsaid thickness is as thick as the legs."
            if _built_with(summary, "--unsaid-defaults")
            else ""
        )
        + (
            " The latest stage taught it to read a picture beside the gallery part that looks "
            "most like it, and to adapt that part's program to the picture and the words."
            if _look_alike_rows(summary)
            else ""
        )
        + (
            " A last stage of online RL rewarded it with the validators' scores of its own "
            "samples (`genservice train rl`)."
            if summary.get("kind") == "rl"
            else ""
        ),
        "",
        "## Size",
        f"- {model['parameters'] / 1e6:.2f} M parameters, vocabulary {model['vocab_size']} "
        "(byte-level BPE trained on the corpus, digits split one per token)",
        f"- architecture: `{json.dumps(_stages(summary)[0]['config']['model']['init'])}`",
        *(
            [
                f"- vision encoder (CLIP-style, trained from scratch) and projector: "
                f"`{json.dumps(vision)}`; {model['architecture']}"
            ]
            if vision
            else []
        ),
        "",
        "## Data",
        f"- corpus: `{data['train_file']}`, built by `genservice corpus build` (see the command "
        "below); train split only, "
        f"{data['train_examples']} examples ({json.dumps(data.get('by_domain'))}), "
        f"{data['train_tokens']:,} tokens of which {data['reply_tokens']:,} are replies (the "
        "loss is on replies only)",
        *_retrieval_lines(data),
        *_cut_lines(summary),
        *_gallery_lines(model_dir),
        *_look_alike_lines(summary),
        f"- validation: {data['val_examples']} rows of the val split",
        "- test and out-of-distribution tasks are never trained on: a task's split is a hash of "
        "its family and parameters, and four families are held out entirely",
        "",
        "## Training",
        *_training_lines(summary),
        "",
        "## Commands",
        "```bash",
        *_commands(summary),
        "```",
        "",
    ]
    for eval_dir in eval_dirs:
        report = json.loads((eval_dir / "eval.json").read_text())
        meta = report["meta"]
        lines += [
            f"## Evaluation: {meta['tasks']} ({meta['task_count']} tasks, N = {meta['n']})",
            "",
            f"`{meta['command']}`",
            "",
            *headline(report["summary"]),
            "",
            report["summary"]["selection"]
            + "."
            + (f" Sampling: {meta['steering']}." if meta.get("steering") else "")
            + (f" Binding: {meta['binding']}." if meta.get("binding") else ""),
            "",
            markdown_table(report["summary"]),
        ]
        by_modality = modality_table(report["summary"])
        if by_modality:
            lines += ["Pictures and words:", "", by_modality]
        repaired = repair_table(report["summary"])
        if repaired:
            lines += [meta.get("repairing", ""), "", repaired]
    notes = summary.get("evaluation_notes") or {}
    if notes:
        lines += ["## Notes on the task sets", ""]
        lines += [f"- {name}: {text}" for name, text in notes.items()]
        lines.append("")
    path = model_dir / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    print(write_model_card(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]))
