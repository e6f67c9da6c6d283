"""`genservice eval`: how good a model is on held-back tasks (see training/evaluate.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from genservice.cli.common import UsageError, cli_device, sandbox_limits
from genservice.generation import fit as fit_module
from genservice.generation.engine import MAX_REPAIR
from genservice.generation.fit import DEFAULT_FIT, FIT_STARTS, MAX_FIT, MAX_FIT_STARTS
from genservice.generation.gallery import MAX_RETRIEVE, RETRIEVE_DEFAULT, gallery_candidates
from genservice.generation.pictures import read_by_model
from genservice.generation.sampler import (
    PICTURE_TEMPERATURE,
    TEMPERATURE,
    default_greedy_first,
    default_temperature,
)

# Evaluation tasks are drawn with their own seed; the split of a task depends on its parameters
# only, so no test task is ever a training task whatever seed the training corpus used.
EVAL_SEED = 20261130


def add_eval_command(sub: Any) -> None:
    """Register `eval` on the CLI's subparsers."""
    parser = sub.add_parser(
        "eval",
        help="measure a model: invalidity, spec adherence, IoU, Chamfer, pass@k",
        description="Generate N candidates per task, validate them blind, pick the best by the "
        "validators' reward (never by the reference) and score against the reference.",
    )
    parser.add_argument("--model", type=Path, help="local model directory (default: shipped)")
    parser.add_argument(
        "--device", help="auto, cpu, cuda, cuda:N (default: $GENSERVICE_DEVICE, else auto)"
    )
    parser.add_argument(
        "--tasks", default="test", help="test, ood, or a JSONL task file (default test)"
    )
    parser.add_argument("--per-family", type=int, default=6, help="tasks per family (test/ood)")
    parser.add_argument("--limit", type=int, help="at most this many tasks from a file")
    parser.add_argument("--domains", help="comma-separated: cad,scene,code (default all)")
    parser.add_argument("--n", type=int, default=8, help="candidates per task (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--temperature", type=float,
        help=f"default as served: {PICTURE_TEMPERATURE} for a new part with a picture, else "
        f"{TEMPERATURE}",
    )  # fmt: skip
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument(
        "--greedy-first", action=argparse.BooleanOptionalAction, default=None,
        help="decode each task's first candidate greedily (default as served: for a new part "
        "with a picture); @1 is then that candidate",
    )  # fmt: skip
    parser.add_argument("--max-new-tokens", type=int, default=768)
    parser.add_argument("--workers", type=int, help="sandbox workers")
    parser.add_argument(
        "--steer",
        choices=sorted(STEERING),
        default="signature",
        help="code: steer candidates to the requested function's signature (default), to its "
        "name only, or not at all (to measure what steering adds)",
    )
    parser.add_argument(
        "--bind",
        choices=sorted(BINDING),
        default="on",
        help="cad/scene: mend a parameter the body reads under another name and write each "
        "stated number into the parameter its words name, where that is certain (default on; "
        "off measures the model's own programs)",
    )
    parser.add_argument(
        "--repair",
        type=int,
        default=0,
        metavar="K",
        help="cad/scene: also measure after up to K repair rounds, as serving repairs (each "
        "failing sample and a failing best of N fed back with its error); default 0",
    )
    parser.add_argument(
        "--fit",
        type=int,
        default=0,
        metavar="K",
        help="cad/scene: also measure the best of N after up to K rounds of fitting its "
        "parameters to the request, as serving fits: to the sizes its words state when only "
        f"those are off, then to an image task's picture (serving's default is {DEFAULT_FIT} "
        "with a picture, 0 without); default 0",
    )
    parser.add_argument(
        "--fit-starts",
        type=int,
        default=FIT_STARTS,
        metavar="K",
        help="image tasks with --fit: fit the best and the next best candidates of other "
        f"designs, up to K, and answer the one that ranks first after (serving's is "
        f"{FIT_STARTS}; 1: the best alone); default {FIT_STARTS}",
    )
    parser.add_argument(
        "--fit-camera",
        choices=("held", "free"),
        default="held",
        help="image tasks with --fit: score each fit trial from near the camera the best part "
        "so far was seen from, as serving does (held), or from wherever it looks most like the "
        "picture (free: about three times as long); default held",
    )
    parser.add_argument(
        "--retrieve",
        type=int,
        default=0,
        metavar="K",
        help="image tasks: also measure what serving answers with K parts of the model's "
        "gallery that look most like the picture beside the N samples (serving's default is "
        f"{RETRIEVE_DEFAULT} with a picture); the fit then starts from that answer; default 0",
    )
    parser.add_argument(
        "--look-alike",
        choices=("checked", "closest"),
        default="checked",
        help="image tasks, a model that reads look-alikes: show it the gallery part (of the "
        f"--retrieve K, or {RETRIEVE_DEFAULT}, that look like the picture) that the checks "
        "score best, as serving does (checked, the default), or the one whose coarse "
        "silhouette is closest (closest: as serving did before it checked them first)",
    )
    parser.add_argument(
        "--modality",
        choices=("both", "image", "text"),
        default="both",
        help="which tasks of the set: those asked with a picture, with words only, or both "
        "(default; a text-only model skips the picture tasks and says so)",
    )
    parser.add_argument("-o", "--output", type=Path, default=Path("eval"), help="output directory")


def load_eval_tasks(spec: str, per_family: int, limit: int | None, domains: list[str] | None):
    """Task rows for `--tasks`: a split of the procedural corpus, or a JSONL file."""
    if spec in ("test", "ood", "val"):
        from training.corpus.build import build_corpus
        from training.corpus.families import families_for

        families = families_for(domains)
        chosen = [f for f in families if (f.held_out if spec == "ood" else not f.held_out)]
        if not chosen:
            raise UsageError(f"no {spec} families for domains {domains}")
        count = per_family * len(chosen)
        return list(build_corpus(count, EVAL_SEED, families=chosen, split=spec))
    path = Path(spec)
    if not path.is_file():
        raise UsageError(f"--tasks must be test, ood, val or a JSONL file; {spec} does not exist")
    tasks = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not JSON: {exc}") from exc
        if domains and task.get("domain") not in domains:
            continue
        if task.get("images"):  # picture paths are relative to the task file
            task["images"] = [str(path.parent / name) for name in task["images"]]
        tasks.append(task)
    return tasks[:limit] if limit else tasks


# What the sampler does beyond sampling, as the card and README state it (see entry_point.py).
STEERING = {
    "signature": "a code candidate that does not define the requested function with the "
    "arguments the request states is steered to that signature "
    "(genservice/generation/entry_point.py)",
    "name": "a code candidate that does not define the requested function is steered to its "
    "name (genservice/generation/entry_point.py)",
    "off": "",
}


# What binding does to CAD and scene candidates, as the card and README state it (binding.py).
BINDING = {
    "on": "each number a new CAD or scene request states is written into the candidate's "
    "parameter its words name, where that is certain (genservice/generation/binding.py), "
    "after a parameter the body reads under another name is renamed to it "
    "(genservice/generation/mend.py)",
    "off": "",
}


# How the after-repair figures are made, as the card and README state it (evaluate.repair_task).
REPAIRING = (
    "After repair: up to {k} rounds, as served. Each sample that fails its checks is fed back "
    "with its validator error (one repaired sample per round; after-repair @1 keeps the better "
    "of the chain), and a best of N that fails is fed back for N repairs per round "
    "(genservice/generation/engine.py). Repaired = the share of those that needed a round "
    "that pass every check after it."
)


# How the fitted figures are made (evaluate.fit_task).
FITTING = (
    "Fitted to the request: up to {k} rounds, as served. The best of N of a new part has its "
    "parameters adjusted on the sandbox pool while it stays sound: to the sizes its words "
    "state when only those are off (the request check only, never the task's spec), then, "
    "for an image task, to match the picture better (image_match only, never the reference; "
    "genservice/generation/fit.py). An image task fits its best {starts} candidates of different "
    "designs and answers the one that ranks first after, blind."
)


def _by_modality(
    tasks: list[dict[str, Any]], modality: str, reads_pictures: bool
) -> list[dict[str, Any]]:
    """The tasks of the asked modality; picture tasks only for a model that reads pictures."""
    pictured = [t for t in tasks if t.get("images")]
    worded = [t for t in tasks if not t.get("images")]
    chosen = {"image": pictured, "text": worded, "both": tasks}[modality]
    if pictured and not reads_pictures:
        if modality == "image":
            raise UsageError("this model takes text only: it cannot be evaluated on pictures")
        if modality == "both":
            print(
                f"the model takes text only: {len(pictured)} picture tasks skipped",
                file=sys.stderr,
            )
            chosen = worded
    if not chosen:
        raise UsageError(f"no {modality} tasks in the set")
    return chosen


def eval_command(args: argparse.Namespace) -> int:
    """Run `genservice eval`."""
    if not 1 <= args.n <= 64:
        raise UsageError("--n must be between 1 and 64")
    if args.per_family < 1:
        raise UsageError("--per-family must be at least 1")
    if not 0 <= args.repair <= MAX_REPAIR:
        raise UsageError(f"--repair must be between 0 and {MAX_REPAIR}")
    if not 0 <= args.fit <= MAX_FIT:
        raise UsageError(f"--fit must be between 0 and {MAX_FIT}")
    if not 0 <= args.retrieve <= MAX_RETRIEVE:
        raise UsageError(f"--retrieve must be between 0 and {MAX_RETRIEVE}")
    if not 1 <= args.fit_starts <= MAX_FIT_STARTS:
        raise UsageError(f"--fit-starts must be between 1 and {MAX_FIT_STARTS}")
    domains = [d.strip() for d in args.domains.split(",")] if args.domains else None
    if domains and set(domains) - {"cad", "scene", "code"}:
        raise UsageError("--domains takes cad, scene and code")
    tasks = load_eval_tasks(args.tasks, args.per_family, args.limit, domains)
    if not tasks:
        raise UsageError("no tasks to evaluate")
    try:  # before the work, not after it: a long evaluation is never lost to its folder
        Path(args.output).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write the results to {args.output}: {exc}") from exc

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from genservice.generation.binding import bind_candidates
    from genservice.generation.entry_point import EntryPoint
    from genservice.generation.loader import ModelNotFoundError, default_model_dir, load_model
    from genservice.generation.prompts import build_repair_messages, clean_completion
    from genservice.generation.sampler import sample
    from training.evaluate import picture_target, run_evaluation, write_outputs
    from training.sft import row_look_alike, task_messages
    from validators.sandbox import SandboxPool, SandboxUnavailable
    from validators.sandbox.pool import DEFAULT_PRELOAD

    model_dir = args.model or default_model_dir()
    try:
        loaded = load_model(model_dir, device=cli_device(args.device))
    except (ModelNotFoundError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    tasks = _by_modality(tasks, args.modality, loaded.accepts_images)

    def steer_to(task: dict[str, Any]) -> EntryPoint | None:
        if task["domain"] != "code" or args.steer == "off":
            return None
        if args.steer == "name":
            return EntryPoint(task["entry_point"])
        return EntryPoint.from_request(task["prompt"], task["entry_point"])

    def new_picture(task: dict[str, Any]) -> bool:
        # Serving's sampling defaults differ for a new part asked with a picture.
        return bool(task.get("images")) and task.get("previous_program") is None

    def temperature_for(task: dict[str, Any]) -> float:
        # As served (cooler for a new part with a picture), unless the run says.
        if args.temperature is not None:
            return float(args.temperature)
        return default_temperature(new_picture(task))

    def greedy_first_for(task: dict[str, Any]) -> bool:
        # As served (the model's best reading first for a new part with a picture), unless
        # the run says.
        if args.greedy_first is not None:
            return bool(args.greedy_first)
        return default_greedy_first(new_picture(task))

    def generate(task: dict[str, Any], n: int, seed: int, messages: Any = None) -> list[str]:
        # An edit task (previous program + instruction) is asked exactly as Refine asks it; an
        # image task with its pictures, as an upload is.
        pictures = read_by_model(task.get("images") or [])  # as serving shows the model
        look_alike = None  # as serving: a repair round shows none, and mends from none
        if messages is None:
            if task.get("previous_program") is None:  # an edit is shown its own program
                look_alike = shown_look_alike(task)
            messages = task_messages({**task, "look_alike": look_alike}, loaded)
        completions = sample(
            loaded,
            messages,
            n=n,
            seed=seed,
            max_new_tokens=args.max_new_tokens,
            temperature=temperature_for(task),
            top_p=args.top_p,
            greedy_first=greedy_first_for(task),
            images=pictures or None,
            entry_point=steer_to(task),
        )
        programs = [clean_completion(c.text) for c in completions]
        if args.bind == "off":
            return programs
        edited = task.get("previous_program")
        return bind_candidates(
            programs, task["domain"], task["prompt"], edited, look_alike, task.get("instruction")
        )

    def repair(task: dict[str, Any], program: str, error: dict, n: int, seed: int) -> list[str]:
        # Asked exactly as a serving repair round asks (engine.repair_messages).
        messages = build_repair_messages(
            task["domain"], task.get("instruction") or task["prompt"], program,
            error["kind"], error["message"], error["line"],
            images=len(read_by_model(task.get("images") or [])),
        )  # fmt: skip
        return generate(task, n, seed, messages)

    def retrieve(task: dict[str, Any], k: int | None = None) -> list[tuple[str, str | None]]:
        # Asked exactly as serving retrieves (engine.retrieve_programs): all its pictures.
        found = loaded.gallery.nearest(picture_target(task), task["domain"], k or args.retrieve)
        programs = [r.entry.scaled_to(task["prompt"]) for r in found]
        bound = programs
        if args.bind != "off":
            bound = bind_candidates(programs, task["domain"], task["prompt"])
        ids = [r.entry.id for r in found]
        parts = gallery_candidates(bound, programs, ids)
        return [(program, loaded.gallery.design_of(entry_id)) for program, entry_id in parts]

    def shown_look_alike(task: dict[str, Any]) -> str | None:
        # Chosen as serving chooses it (engine.check_gallery), or as it did (closest).
        if args.look_alike == "closest":
            return row_look_alike(task, loaded)
        return row_look_alike(task, loaded, pool, limits, args.retrieve or RETRIEVE_DEFAULT)

    if args.retrieve and loaded.gallery is None:
        raise UsageError(f"--retrieve: the model at {model_dir} has no gallery/")
    limits, workers, isolation = sandbox_limits(None, args.workers)
    preload = (*DEFAULT_PRELOAD, "validators.code.guest")
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=None,
        transient=False,
    )
    try:
        pool = SandboxPool(size=workers, limits=limits, isolation=isolation, preload=preload)
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from exc
    held, fit_module.HOLD_CAMERA = fit_module.HOLD_CAMERA, args.fit_camera == "held"
    try:
        with pool, progress:
            bar = progress.add_task("evaluating", total=len(tasks))
            results = run_evaluation(
                tasks,
                generate,
                pool,
                n=args.n,
                seed=args.seed,
                limits=limits,
                progress=lambda done, total: progress.update(bar, completed=done),
                repair=repair,
                rounds=args.repair,
                fit=args.fit,
                retrieve=retrieve if args.retrieve else None,
                fit_starts=args.fit_starts,
                greedy_first=greedy_first_for,
            )
    finally:  # the module's own setting again, for whatever runs next in this process
        fit_module.HOLD_CAMERA = held
    meta = {
        "model": str(model_dir),
        "model_id": loaded.model_id,
        "weights_sha256": loaded.weights_sha256,
        "tasks": args.tasks,
        "task_count": len(tasks),
        "n": args.n,
        "seed": args.seed,
        "temperature": args.temperature
        if args.temperature is not None
        else {"picture": default_temperature(True), "words": default_temperature(False)},
        "top_p": args.top_p,
        "greedy_first": args.greedy_first
        if args.greedy_first is not None
        else {"picture": default_greedy_first(True), "words": default_greedy_first(False)},
        "max_new_tokens": args.max_new_tokens,
        "eval_seed": EVAL_SEED,
        "per_family": args.per_family,
        "steer": args.steer,
        "steering": STEERING[args.steer],
        "bind": args.bind,
        "binding": BINDING[args.bind],
        "repair": args.repair,
        "modality": args.modality,
        "repairing": REPAIRING.format(k=args.repair) if args.repair else "",
        "fit": args.fit,
        "retrieve": args.retrieve,
        "fit_starts": args.fit_starts,
        "fit_camera": args.fit_camera,
        "fitting": FITTING.format(k=args.fit, starts=args.fit_starts) if args.fit else "",
        "command": "genservice " + " ".join(sys.argv[1:]),
    }
    paths = write_outputs(results, args.output, meta)
    print(paths["markdown"].read_text())
    print(f"written: {', '.join(str(p) for p in paths.values())}", file=sys.stderr)
    return 0
