"""Benchmark: best-of-N generation, batched with a shared prompt KV cache vs one at a time.

For one prompt and N candidates (default 8), side by side on the same model and settings, each
path writing exactly N x max_new_tokens tokens (end tokens ignored, so the work is equal), runs
interleaved:
- batched: `sample` (one prefill, the cache repeated to N rows, N rows decoded together);
- one at a time: `sample_one_at_a_time` (N prefills, N decodes of one row), the reference;
- transformers `generate(num_return_sequences=N)`, which repeats the prompt before prefill
  (its prompt rows are counted to show it).
Two prompts: a new part (short) and an edit (the previous program in the prompt: long).
Then the cost of steering code candidates to the requested function (entry_point.py): one code
request sampled with and without steering, interleaved, at natural length. Then whole requests
(`engine.generate`: sample, clean, validate on the sandbox pool, rank) to split wall time between
generating and validating. Then repair (`--repair-requests K` per set, default 4): whole requests
from the test split, the held-out families and eval/requests_ood.jsonl served with one repair
round, to measure how often a round is needed and fixes the part, and what a round costs against
the fresh best-of-N it follows (the same request, back to back: its prompt is longer, carrying the
failed program and its error). Then pictures (`--image`): time to first token and candidates/s
of a request with a picture against the same words without one, interleaved, on a
vision-language model (the model itself when it is one, else the model joined to a fresh
vision encoder: training/vlm.py; throughput needs no trained weights).

Without --model it uses the shipped model (genservice/models/tiny) when present, else a tiny
*random, untrained* Qwen2 built on the fly in a temporary directory: its candidates are
garbage that fails to parse, so its validation time is not representative.

Usage: .venv/bin/python -m bench.generate [--model DIR] [--n 8] [--repeats 3] [--repair-requests 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROMPT = "A mounting plate 80 mm by 50 mm, 6 mm thick, with four 5 mm holes 8 mm from each corner."
# A function name and argument no corpus task uses, so the shipped model needs steering to them.
CODE_PROMPT = (
    "Please implement keep_first(people) so that it returns `people` without duplicates. Keep "
    "the first occurrence of each item, in the original order. Do not modify the input list."
)


def _model_dir(choice: Path | None, scratch: Path) -> tuple[Path, str]:
    """The model to measure and a label saying what it is."""
    from genservice.generation.loader import default_model_dir

    if choice is not None:
        return choice, f"{choice}"
    shipped = default_model_dir()
    if (shipped / "config.json").is_file():
        return shipped, f"shipped model {shipped}"
    from tests.genservice.generation.tiny_models import build_causal

    folder = build_causal(scratch / "random-qwen2")
    return folder, "RANDOM untrained tiny Qwen2 (2 layers, hidden 64), built on the fly"


def _hf_generate(loaded: Any, messages: list[dict[str, Any]], args: argparse.Namespace) -> Any:
    """transformers' generate with num_return_sequences at fixed length; (run, prompt rows)."""
    import torch

    from genservice.generation.sampler import encode_prompt

    inputs = encode_prompt(loaded, messages)
    rows: list[int] = []

    def hook(module: Any, positional: Any, kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids")
        if ids is not None and ids.shape[1] > 1:
            rows.append(int(ids.shape[0]))

    def run() -> Any:
        torch.manual_seed(0)
        with torch.inference_mode():
            out = loaded.model.generate(
                **inputs,
                do_sample=True,
                temperature=args.temperature,
                top_p=args.top_p,
                max_new_tokens=args.max_new_tokens,
                min_new_tokens=args.max_new_tokens,
                num_return_sequences=args.n,
                pad_token_id=loaded.eos_token_ids[0],
            )
        if out.is_cuda:  # the sampler's paths end on host lists; time this one to the end too
            torch.cuda.synchronize(out.device)
        return out

    handle = loaded.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        run()
    finally:
        handle.remove()
    return run, rows


def _scenario(loaded: Any, messages: list[dict[str, Any]], args: argparse.Namespace) -> dict:
    """The three paths, interleaved, each writing exactly n x max_new_tokens tokens."""
    import dataclasses

    from genservice.generation.sampler import encode_prompt, sample, sample_one_at_a_time

    endless = dataclasses.replace(loaded, eos_token_ids=(-1,))  # fixed length: equal work
    settings = {
        "n": args.n,
        "seed": 0,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "top_p": args.top_p,
    }
    hf_run, hf_rows = _hf_generate(loaded, messages, args)
    runs = {
        "batched_shared_kv": lambda: sample(endless, messages, **settings),
        "one_at_a_time": lambda: sample_one_at_a_time(endless, messages, **settings),
        "hf_generate_num_return_sequences": hf_run,
    }
    for run in runs.values():
        run()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in runs}
    outputs: dict[str, Any] = {}
    for _ in range(args.repeats):  # interleaved, so load on a shared machine hits all alike
        for name, run in runs.items():
            start = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - start)
    paths = {
        name: {
            "min_s": min(ts),
            "median_s": statistics.median(ts),
            "candidates_per_s": args.n / statistics.median(ts),
        }
        for name, ts in times.items()
    }
    fast, slow = outputs["batched_shared_kv"], outputs["one_at_a_time"]
    batched_s = paths["batched_shared_kv"]["median_s"]
    return {
        "prompt_tokens": int(encode_prompt(loaded, messages)["input_ids"].shape[1]),
        "paths": paths,
        "speedup_vs_one_at_a_time": paths["one_at_a_time"]["median_s"] / batched_s,
        "speedup_vs_hf_generate": paths["hf_generate_num_return_sequences"]["median_s"] / batched_s,
        "hf_generate_prompt_rows_in_prefill": hf_rows,
        "same_candidates_batched_and_one_at_a_time": [c.tokens for c in fast]
        == [c.tokens for c in slow],
    }


def compare_paths(
    loaded: Any,
    messages: list[dict[str, Any]],
    n: int = 8,
    max_new_tokens: int = 128,
    repeats: int = 3,
    temperature: float = 0.8,
    top_p: float = 0.95,
) -> dict:
    """Best-of-n for one prompt three ways (batched with a shared prompt KV cache, one at a
    time, transformers' generate), interleaved, each writing exactly n x max_new_tokens tokens:
    per path the median time and candidates/s, and the speedups of the batched path."""
    settings = argparse.Namespace(
        n=n, max_new_tokens=max_new_tokens, repeats=repeats, temperature=temperature, top_p=top_p
    )
    return _scenario(loaded, messages, settings)


def _steering(loaded: Any, args: argparse.Namespace) -> dict:
    """Sampling one code request with and without steering to its entry point, interleaved."""
    from genservice.generation.entry_point import EntryPoint
    from genservice.generation.sampler import sample

    messages = loaded.messages("code", CODE_PROMPT)
    entry = EntryPoint.from_request(CODE_PROMPT, "keep_first")
    settings = {"n": args.n, "seed": 0, "max_new_tokens": 256, "temperature": args.temperature}
    runs = {
        "free": lambda: sample(loaded, messages, **settings),
        "steered": lambda: sample(loaded, messages, **settings, entry_point=entry),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    outputs: dict[str, Any] = {}
    for _ in range(args.repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - start)
    free_s, steered_s = (statistics.median(times[name]) for name in runs)
    changed = sum(
        a.tokens != b.tokens for a, b in zip(outputs["free"], outputs["steered"], strict=True)
    )
    return {
        "free_median_s": free_s,
        "steered_median_s": steered_s,
        "steered_over_free": steered_s / free_s,
        "candidates_steered": changed,
        "candidates": args.n,
    }


def _image_cost(folder: Path, scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    """A request with a picture against the same words without one: first token and
    candidates/s at a fixed length, interleaved."""
    import dataclasses

    from PIL import Image

    from exporters.export import script_parts
    from exporters.render import View, render
    from exporters.samples import sample_source
    from genservice.generation.loader import load_model, model_kind
    from genservice.generation.sampler import encode_prompt, sample
    from training.vlm import VisionSpec, build_vlm
    from validators.sandbox import SandboxPool

    if model_kind(folder) != "vlm":
        folder = build_vlm(folder, scratch / "vlm", VisionSpec())
    loaded = load_model(folder, device=args.device)
    endless = dataclasses.replace(loaded, eos_token_ids=(-1,))

    with SandboxPool(size=1) as pool:
        parts, _ = script_parts(sample_source("flange"), pool)
    picture = Image.fromarray(render(parts, [View.orbit(30, 35)], 224))
    words = "make this, 80 mm across"
    asks = {
        # As served: a model that reads look-alikes is shown the gallery's closest part too.
        "image": (
            loaded.messages(
                "cad", words, images=1, look_alike=loaded.look_alike("cad", words, [picture])
            ),
            [picture],
        ),
        "text": (loaded.messages("cad", words), None),
    }
    times: dict[str, dict[str, list[float]]] = {name: {"first": [], "all": []} for name in asks}
    settings = {"n": args.n, "seed": 0, "temperature": args.temperature, "top_p": args.top_p}
    for messages, images in asks.values():  # warm-up
        sample(endless, messages, max_new_tokens=2, images=images, **settings)
    for _ in range(args.repeats):
        for name, (messages, images) in asks.items():
            begun = time.perf_counter()
            sample(endless, messages, max_new_tokens=1, images=images, **settings)
            times[name]["first"].append(time.perf_counter() - begun)
            begun = time.perf_counter()
            sample(endless, messages, max_new_tokens=args.max_new_tokens, images=images, **settings)
            times[name]["all"].append(time.perf_counter() - begun)
    found: dict[str, Any] = {}
    for name, (messages, images) in asks.items():
        first, whole = (
            statistics.median(times[name]["first"]),
            statistics.median(times[name]["all"]),
        )
        found[name] = {
            "prompt_tokens": int(encode_prompt(loaded, messages, images)["input_ids"].shape[1]),
            "first_token_s": first,
            "candidates_per_s": args.n / whole,
        }
    found["first_token_ratio"] = found["image"]["first_token_s"] / found["text"]["first_token_s"]
    found["throughput_ratio"] = (
        found["image"]["candidates_per_s"] / found["text"]["candidates_per_s"]
    )
    return found


def _repair_sets(per_set: int) -> dict[str, list[dict[str, Any]]]:
    """Requests to serve with repair: a few of the test split, the held-out families and the
    independent request set."""
    from training.corpus.build import build_corpus
    from training.corpus.families import families_for

    families = families_for(["cad", "scene"])
    sets = {
        "test": list(
            build_corpus(per_set, 2027, [f for f in families if not f.held_out], split="test")
        ),
        "ood families": list(
            build_corpus(per_set, 2027, [f for f in families if f.held_out], split="ood")
        ),
    }
    lines = (Path(__file__).parent.parent / "eval" / "requests_ood.jsonl").read_text().splitlines()
    sets["requests_ood"] = [json.loads(line) for line in lines if line.strip()][:per_set]
    return sets


def _repair_cost(loaded: Any, pool: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Serve each set's requests with one repair round: how often it ran and fixed the part,
    and the cost of the round against the first best-of-N of the same request."""
    from genservice.generation.engine import GenerationRequest, generate

    rows = []
    for name, tasks in _repair_sets(args.repair_requests).items():
        for number, task in enumerate(tasks):
            request = GenerationRequest(
                task["prompt"], domain=task["domain"], n=args.n, seed=number,
                max_new_tokens=args.repair_tokens, temperature=args.temperature,
                top_p=args.top_p, spec=task.get("spec"), repair=1,
            )  # fmt: skip
            begun = time.perf_counter()
            result = generate(request, loaded, pool)
            row: dict[str, Any] = {
                "set": name,
                "id": task.get("id"),
                "wall_s": time.perf_counter() - begun,
                "first_s": result.timings["generate_s"] + result.timings["validate_s"],
                "first_valid": any(c.valid for c in result.candidates if c.round == 0),
                "repaired": bool(result.repairs),
                "valid": result.valid,
            }
            if result.repairs:
                round_ = result.repairs[0]
                row["repair_s"] = round_.generate_s + round_.validate_s
                row["fixed"] = round_.valid > 0
            rows.append(row)
    first = [r["first_s"] for r in rows]
    rounds = [r["repair_s"] for r in rows if "repair_s" in r]
    by_set = {}
    for name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == name]
        needed = [r for r in mine if r["repaired"]]
        by_set[name] = {
            "requests": len(mine),
            "needed": len(needed) / len(mine),
            "fixed_of_needed": sum(r["fixed"] for r in needed) / len(needed) if needed else None,
            "valid_before": sum(r["first_valid"] for r in mine) / len(mine),
            "valid_after": sum(r["valid"] for r in mine) / len(mine),
        }
    summary: dict[str, Any] = {"sets": by_set, "n": args.n, "max_new_tokens": args.repair_tokens}
    if first and rounds:
        summary.update(
            first_round_median_s=statistics.median(first),
            repair_round_median_s=statistics.median(rounds),
            repair_over_first=statistics.median(rounds) / statistics.median(first),
            first_candidates_per_s=args.n / statistics.median(first),
            repair_candidates_per_s=args.n / statistics.median(rounds),
            wall_median_s_repaired=statistics.median(r["wall_s"] for r in rows if r["repaired"]),
            wall_median_s_unrepaired=(
                statistics.median(w) if (w := [r["wall_s"] for r in rows if not r["repaired"]])
                else None
            ),
        )  # fmt: skip
    return {"summary": summary, "requests": rows}


def main() -> None:
    """Run the benchmark and write its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="local model directory")
    parser.add_argument("--n", type=int, default=8, help="candidates per request")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--repair-requests",
        type=int,
        default=4,
        help="requests per set served with repair (0: skip)",
    )
    parser.add_argument("--repair-tokens", type=int, default=600, help="new tokens per candidate")
    parser.add_argument(
        "--image", action="store_true", help="also: a request with a picture against words only"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/generate.json"))
    args = parser.parse_args()

    import torch
    from rich.console import Console
    from rich.table import Table
    from transformers.utils import logging as hf_logging

    from exporters.samples import sample_source
    from genservice.generation.engine import GenerationRequest, generate
    from genservice.generation.loader import load_model
    from validators.sandbox import Limits, SandboxPool

    hf_logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder, label = _model_dir(args.model, Path(scratch))
        console.print(f"model: {label}")
        loaded = load_model(folder, device=args.device)
        prompts = {
            "new_part": loaded.messages("cad", PROMPT),  # with its retrieved example, if any
            "edit": loaded.messages(
                "cad",
                "A table with four legs.",
                previous_program=sample_source("table_scene"),
                instruction="make the legs 20 mm taller",
            ),
        }
        scenarios = {}
        for name, messages in prompts.items():
            console.print(f"sampling: {name}")
            scenarios[name] = _scenario(loaded, messages, args)

        console.print("sampling: code, with and without steering")
        steering = _steering(loaded, args)

        console.print("whole requests (sample, validate, rank)")
        started = time.perf_counter()
        pool = SandboxPool(size=min(args.n, os.cpu_count() or 1), limits=Limits(wall_s=10))
        pool_start_s = time.perf_counter() - started
        requests = []
        with pool:
            for seed in range(args.repeats):
                request = GenerationRequest(
                    PROMPT,
                    n=args.n,
                    seed=seed,
                    max_new_tokens=args.max_new_tokens,
                    temperature=args.temperature,
                    top_p=args.top_p,
                )
                begun = time.perf_counter()
                result = generate(request, loaded, pool)
                requests.append(
                    {
                        **result.timings,
                        "wall_s": time.perf_counter() - begun,
                        "valid": sum(c.valid for c in result.candidates),
                    }
                )
            repair = _repair_cost(loaded, pool, args) if args.repair_requests > 0 else None
        pictures = None
        if args.image:
            console.print("a request with a picture against words only")
            pictures = _image_cost(folder, Path(scratch), args)
    generating = statistics.median(r["generate_s"] for r in requests)
    validating = statistics.median(r["validate_s"] for r in requests)
    summary = {
        "model": label,
        "model_id": loaded.model_id,
        "device": args.device,
        "torch_threads": torch.get_num_threads(),
        "n": args.n,
        "max_new_tokens": args.max_new_tokens,
        "scenarios": scenarios,
        "code_steering": steering,
        "request_split": {
            "generate_s": generating,
            "validate_s": validating,
            "generate_share": generating / max(1e-9, generating + validating),
            "valid_candidates": [r["valid"] for r in requests],
            "pool_start_s": pool_start_s,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if repair is not None:
        summary["repair"] = repair["summary"]
    if pictures is not None:
        summary["image_request"] = pictures
    payload = {
        "summary": summary,
        "requests": requests,
        "repair_requests": (repair or {}).get("requests"),
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")

    out = Console(width=120)
    out.print(f"{label}; best-of-{args.n}, {args.max_new_tokens} new tokens each")
    table = Table("scenario", "prompt tokens", "path", "median s", "candidates/s", "speedup")
    for name, scenario in scenarios.items():
        base = scenario["paths"]["batched_shared_kv"]["median_s"]
        for path, row in scenario["paths"].items():
            table.add_row(
                name,
                str(scenario["prompt_tokens"]),
                path,
                f"{row['median_s']:.3f}",
                f"{row['candidates_per_s']:.1f}",
                f"{row['median_s'] / base:.2f}x slower" if path != "batched_shared_kv" else "",
            )
    out.print(table)
    out.print(
        f"code request: {steering['candidates_steered']} of {args.n} candidates steered to "
        f"keep_first(people); {steering['steered_median_s']:.3f} s steered vs "
        f"{steering['free_median_s']:.3f} s free ({steering['steered_over_free']:.2f}x)"
    )
    split = summary["request_split"]
    out.print(
        f"request wall time: generating {generating:.3f} s, validating {validating:.3f} s "
        f"({100 * split['generate_share']:.0f}% generating; pool start "
        f"{pool_start_s:.1f} s, once)"
    )
    if repair is not None:
        _print_repair(out, repair["summary"])
    if pictures is not None:
        out.print(
            f"picture request: first token {pictures['image']['first_token_s']:.3f} s vs "
            f"{pictures['text']['first_token_s']:.3f} s for words only "
            f"({pictures['first_token_ratio']:.2f}x; {pictures['image']['prompt_tokens']} vs "
            f"{pictures['text']['prompt_tokens']} prompt tokens); "
            f"{pictures['image']['candidates_per_s']:.1f} vs "
            f"{pictures['text']['candidates_per_s']:.1f} candidates/s "
            f"({pictures['throughput_ratio']:.2f}x)"
        )
    out.print(f"wrote {args.out}")


def _print_repair(out: Any, summary: dict[str, Any]) -> None:
    """The repair table: per set, how often a round ran and fixed the part; what it cost."""
    from rich.table import Table

    table = Table(
        "set", "requests", "round needed", "fixed (of needed)", "valid before", "valid after"
    )
    for name, row in summary["sets"].items():
        fixed = row["fixed_of_needed"]
        table.add_row(
            name, str(row["requests"]), f"{100 * row['needed']:.0f}%",
            "–" if fixed is None else f"{100 * fixed:.0f}%",
            f"{100 * row['valid_before']:.0f}%", f"{100 * row['valid_after']:.0f}%",
        )  # fmt: skip
    out.print(table)
    if "repair_over_first" in summary:
        out.print(
            f"a repair round: {summary['repair_round_median_s']:.2f} s median "
            f"({summary['repair_candidates_per_s']:.2f} candidates/s) vs the first best-of-"
            f"{summary['n']} {summary['first_round_median_s']:.2f} s "
            f"({summary['first_candidates_per_s']:.2f} candidates/s): "
            f"{summary['repair_over_first']:.2f}x"
        )


if __name__ == "__main__":
    main()
