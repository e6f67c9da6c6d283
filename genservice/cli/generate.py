"""`genservice generate`: sample N programs from a local model, validate them, keep the best.

The best program is written as best.py with its Report (report.json) and every candidate's
verdict (candidates.json); a valid CAD or scene program is also exported (GLB, STEP, STL, ...)
with a provenance manifest naming the model, its weights' sha256, the seed and the sampling. A
sound program that does not match what the request asks (its `request` check) is exported too,
but called NOT AS ASKED, with the number that is off, and the exit status is 1.
torch and transformers are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from genservice.cli.common import UsageError, cli_device, open_pool, sandbox_limits
from genservice.generation.engine import DEFAULT_REPAIR, MAX_REPAIR
from genservice.generation.fit import DEFAULT_FIT, FIT_STARTS, MAX_FIT, default_fit
from genservice.generation.gallery import MAX_RETRIEVE, RETRIEVE_DEFAULT, default_retrieve
from genservice.generation.sampler import (
    PICTURE_TEMPERATURE,
    TEMPERATURE,
    default_greedy_first,
    default_temperature,
)

EXIT_OK, EXIT_FAILED = 0, 1
DEFAULT_FORMATS = "glb,step,stl,png"


def add_generate_command(sub: Any) -> None:
    """Register `generate` on the CLI's subparsers."""
    generate = sub.add_parser(
        "generate",
        help="write programs for a request with a local model and keep the best one",
        description="Sample N candidate programs from a local model, validate each in the "
        "sandbox, keep the one the validators score best and (cad, scene) export it. Exit 0 when "
        "the best candidate is valid, 1 when none is (what there is is still written), 2 on a "
        "usage error.",
    )
    generate.add_argument("prompt", metavar="PROMPT", help="what to make")
    generate.add_argument("--domain", choices=("cad", "scene", "code"), default="cad")
    generate.add_argument("--n", type=int, default=8, help="candidates to sample (default 8)")
    generate.add_argument("--seed", type=int, help="sampling seed (default: random, reported)")
    generate.add_argument(
        "--image",
        action="append",
        default=[],
        type=Path,
        metavar="PNG",
        help="an image to go with the prompt (repeatable; needs a vision-language model)",
    )
    generate.add_argument("--edit", type=Path, metavar="SCRIPT", help="a program to change")
    generate.add_argument("--instruction", help="what to change in the --edit program")
    generate.add_argument(
        "--model", type=Path, metavar="DIR", help="local model directory (default: shipped)"
    )
    generate.add_argument("-o", "--output", type=Path, default=Path("."), help="output directory")
    generate.add_argument("--json", action="store_true", help="print the result as JSON")
    generate.add_argument("--max-new-tokens", type=int, default=1024, help="per candidate")
    generate.add_argument(
        "--temperature", type=float,
        help=f"0 = greedy (default {PICTURE_TEMPERATURE} with --image, else {TEMPERATURE})",
    )  # fmt: skip
    generate.add_argument("--top-p", type=float, default=0.95)
    generate.add_argument(
        "--greedy-first", action=argparse.BooleanOptionalAction, default=None,
        help="decode the first candidate greedily (default: on with --image, else off)",
    )  # fmt: skip
    generate.add_argument(
        "--formats",
        help=f"export formats for a valid cad/scene program (default {DEFAULT_FORMATS})",
    )
    generate.add_argument("--spec", type=Path, help="cad/scene: JSON spec the part should meet")
    generate.add_argument("--tests", type=Path, help="code: file with check(candidate) or test_*")
    generate.add_argument("--entry-point", help="code: the function under test")
    generate.add_argument(
        "--repair",
        type=int,
        default=DEFAULT_REPAIR,
        metavar="K",
        help="cad/scene: when no candidate is valid, up to K rounds that feed the best failing "
        f"candidate and its error back to the model (default {DEFAULT_REPAIR}; 0 = off; "
        f"at most {MAX_REPAIR})",
    )
    generate.add_argument(
        "--fit",
        type=int,
        metavar="K",
        help="cad/scene: up to K rounds that adjust the best part's parameters while it stays "
        "sound: to the sizes the prompt states when only those are off, then (with --image) "
        f"to look more like the picture, from the best {FIT_STARTS} candidates of different "
        f"designs (default {DEFAULT_FIT} with --image, else 0; "
        f"at most {MAX_FIT})",
    )
    generate.add_argument(
        "--retrieve",
        type=int,
        metavar="K",
        help="cad/scene with --image: K parts of the model's gallery that look most like the "
        f"picture join the candidates (default {RETRIEVE_DEFAULT} with --image, else 0; "
        f"at most {MAX_RETRIEVE}; none when the model has no gallery)",
    )
    generate.add_argument(
        "--device", help="auto, cpu, cuda, cuda:1 … (default: $GENSERVICE_DEVICE, else auto)"
    )
    generate.add_argument("--timeout", type=float, help="sandbox seconds per candidate")
    generate.add_argument("--workers", type=int, help="parallel sandbox workers")


def generate_command(args: argparse.Namespace) -> int:
    """Run `genservice generate`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    request_kwargs, formats = _check_args(args)
    model_dir, kind = _check_model(args.model, len(args.image))
    if args.output.exists() and not args.output.is_dir():
        raise UsageError(f"{args.output} exists and is not a directory")
    images = [_open_image(path) for path in args.image]

    from genservice.generation.engine import GenerationRequest, generate

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big") >> 1
    try:
        request = GenerationRequest(seed=seed, images=tuple(images), **request_kwargs)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    limits, workers, isolation = sandbox_limits(args.timeout, args.workers)
    device = cli_device(args.device)
    # The sandbox pool (cadquery imported in every worker) starts while the model loads and
    # samples; generate() waits for it only when the candidates are ready to validate.
    with ThreadPoolExecutor(max_workers=1) as starter:
        starting = starter.submit(
            open_pool, min(workers, request.n), limits, isolation, args.domain
        )
        try:
            with _progress() as progress:
                what = f"loading {model_dir.name} ({kind}) on {device}"
                loading = progress.add_task(what, total=None)
                loaded = _load(model_dir, device)
                progress.update(loading, total=1, completed=1)
                tasks: dict[str, Any] = {}

                def on_event(stage: str, done: int, total: int) -> None:
                    if stage == "repairing":  # a new round: its own bars
                        tasks.clear()
                        progress.add_task(f"repair round {done} of {total}", total=None)
                        return
                    if stage == "fitting":  # rounds of fitting to the request: one bar
                        stage = "fitting to the request"
                    if stage not in ("generating", "validating", "fitting to the request"):
                        return
                    if stage not in tasks:
                        tasks[stage] = progress.add_task(stage, total=total)
                    progress.update(tasks[stage], completed=done, total=total)

                result = generate(request, loaded, starting, progress=on_event, limits=limits)
                pool = starting.result()
                files, export_error = _write(args, request, result, loaded, pool, limits, formats)
        finally:
            _close(starting)
    return _finish(args, result, files, export_error)


def best_index(result: Any) -> int:
    """The index of the candidate the answer is, or was fitted from."""
    best = result.candidates[0]
    return best.fitted_from if best.fitted_from is not None else best.index


def fit_line(fit: dict[str, Any]) -> str:
    """What fitting to the request did (its stated sizes, its picture), in a line each."""
    sizes = fit.get("sizes")
    lines = [sizes_line(sizes)] if sizes and (sizes["improved"] or not fit.get("picture")) else []
    if fit.get("picture", True):
        lines.append(_picture_line(fit))
    return "\n".join(lines)


def sizes_line(sizes: dict[str, Any]) -> str:
    """What fitting the stated sizes did, in one line."""
    if not sizes["improved"]:
        return f"fitted to the stated sizes: no change met more of them ({sizes['trials']} tries)"
    changes = ", ".join(f"{n} {old:g} → {new:g}" for n, (old, new) in sizes["changed"].items())
    return (
        f"fitted to the stated sizes: request {sizes['score_before']:.2f} → "
        f"{sizes['score_after']:.2f} ({changes}; {sizes['trials']} tries)"
    )


def _picture_line(fit: dict[str, Any]) -> str:
    if not fit["improved"]:
        return (f"fitted to the picture: no change looked more like it "
                f"(image_match {fit['score_before']:.2f}, {fit['trials']} tries)")  # fmt: skip
    changes = ", ".join(f"{name} {old:g} → {new:g}" for name, (old, new) in fit["changed"].items())
    return (
        f"fitted to the picture: image_match {fit['score_before']:.2f} → "
        f"{fit['score_after']:.2f} ({changes}; {fit['trials']} tries, {fit['seconds']:.1f} s)"
    )


def _close(starting: Future[Any]) -> None:
    """Close the pool once it has started (a pool that failed to start has nothing to close)."""
    try:
        pool = starting.result()
    except Exception:  # its error, if it matters, was raised where the pool was needed
        return
    pool.close()


def _check_args(args: argparse.Namespace) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Request fields from the arguments, and the export formats; UsageError on bad input."""
    if not args.prompt.strip():
        raise UsageError("the prompt is empty")
    if not 1 <= args.n <= 256:
        raise UsageError("--n must be between 1 and 256")
    if args.seed is not None and not 0 <= args.seed < 2**63:
        raise UsageError("--seed must be a whole number >= 0")
    if not 1 <= args.max_new_tokens <= 32768:
        raise UsageError("--max-new-tokens must be between 1 and 32768")
    pictured, edit = bool(args.image), args.edit is not None  # sampling defaults (sampler.py)
    if args.temperature is None:  # cooler for a new part from a picture
        args.temperature = default_temperature(pictured, edit=edit)
    if not (math.isfinite(args.temperature) and 0 <= args.temperature <= 10):
        raise UsageError("--temperature must be in [0, 10] (0 = greedy)")
    if not (math.isfinite(args.top_p) and 0 < args.top_p <= 1):
        raise UsageError("--top-p must be in (0, 1]")
    if args.greedy_first is None:  # the model's best reading of a picture comes first
        args.greedy_first = default_greedy_first(pictured, edit=edit)
    if not 0 <= args.repair <= MAX_REPAIR:
        raise UsageError(f"--repair must be between 0 and {MAX_REPAIR}")
    fit = args.fit if args.fit is not None else default_fit(bool(args.image))
    if not 0 <= fit <= MAX_FIT:
        raise UsageError(f"--fit must be between 0 and {MAX_FIT}")
    retrieve = args.retrieve if args.retrieve is not None else default_retrieve(bool(args.image))
    if not 0 <= retrieve <= MAX_RETRIEVE:
        raise UsageError(f"--retrieve must be between 0 and {MAX_RETRIEVE}")
    if (args.edit is None) != (args.instruction is None):
        raise UsageError("--edit SCRIPT and --instruction TEXT go together")
    previous = _read_text(args.edit, "the program to edit") if args.edit is not None else None
    fields: dict[str, Any] = {
        "prompt": args.prompt,
        "domain": args.domain,
        "n": args.n,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "greedy_first": args.greedy_first,
        "previous_program": previous,
        "instruction": args.instruction,
        "repair": args.repair,
        "fit": fit,
        "retrieve": retrieve,
    }
    if args.domain == "code":
        if args.tests is None or not args.entry_point:
            raise UsageError("--domain code needs --tests FILE and --entry-point NAME")
        if args.spec is not None or args.formats is not None:
            raise UsageError("--spec and --formats apply to cad and scene, not code")
        fields["tests"] = _read_text(args.tests, "tests")
        fields["entry_point"] = args.entry_point
        return fields, ()
    if args.tests is not None or args.entry_point:
        raise UsageError("--tests and --entry-point apply to --domain code")
    if args.spec is not None:
        fields["spec"] = _load_spec(args.spec)
    from exporters.export import ExportOptions

    formats = tuple(f.strip() for f in (args.formats or DEFAULT_FORMATS).split(",") if f.strip())
    try:
        ExportOptions(formats=formats)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return fields, formats


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {what} {path}: {exc}") from exc


def _load_spec(path: Path) -> dict[str, Any]:
    from validators.cad.validate import check_spec

    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read spec {path}: {exc}") from exc
    if not isinstance(spec, dict):
        raise UsageError("the spec must be a JSON object")
    try:
        return check_spec(spec)
    except ValueError as exc:
        raise UsageError(f"spec {path}: {exc}") from exc


def _check_model(model: Path | None, images: int) -> tuple[Path, str]:
    """The model directory and kind; UsageError if absent or if it cannot take the images."""
    from genservice.generation.loader import (
        TEXT_ONLY,
        ModelNotFoundError,
        check_model_dir,
        default_model_dir,
        model_kind,
    )

    try:
        folder = check_model_dir(model if model is not None else default_model_dir())
        kind = model_kind(folder)
    except ModelNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the model configuration in {model}: {exc}") from exc
    if images and kind != "vlm":
        raise UsageError(TEXT_ONLY)
    return folder, kind


def _open_image(path: Path) -> Any:
    """The picture at `path` as RGB, checked as the API checks an upload (UsageError if not)."""
    import io

    from PIL import Image

    from genservice.generation.pictures import PictureError, check_picture

    try:
        data = path.read_bytes()
        check_picture(data)
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("RGB")
    except OSError as exc:
        raise UsageError(f"cannot read image {path}: {exc}") from exc
    except PictureError as exc:
        raise UsageError(f"image {path}: {exc}") from exc


def _load(folder: Path, device: str) -> Any:
    from transformers.utils import logging as hf_logging

    from genservice.generation.loader import load_model

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        return load_model(folder, device=device)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the model in {folder}: {exc}") from exc


def _progress() -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )


def _write(
    args: argparse.Namespace,
    request: Any,
    result: Any,
    loaded: Any,
    pool: Any,
    limits: Any,
    formats: tuple[str, ...],
) -> tuple[list[dict[str, str]], str | None]:
    """Write best.py, report.json, candidates.json and (valid cad/scene) the exports."""
    out: Path = args.output
    out.mkdir(parents=True, exist_ok=True)
    written = {
        "program": _write_file(out / "best.py", result.program),
        "report": _write_file(out / "report.json", result.report.to_json(indent=2) + "\n"),
        "candidates": _write_file(
            out / "candidates.json",
            json.dumps([c.to_dict(with_report=True) for c in result.candidates], indent=2) + "\n",
        ),
    }
    files = [{"format": kind, "path": str(path)} for kind, path in written.items()]
    from validators.cad.request import missed_only_the_request

    # A sound part that ignores the request is exported too (its Report says what is off).
    if not ((result.valid or missed_only_the_request(result.report)) and formats):
        return files, None
    from datetime import UTC, datetime

    from exporters.export import ExportError, ExportOptions, export_script
    from exporters.provenance import GenerationRecord, utc_seconds
    from genservice.generation.rerank import request_items

    # A gallery part as the answer says so in every file's provenance: the model did not write it.
    first = best_index(result)
    source = next((c for c in result.candidates if c.index == first), result.candidates[0])
    record = GenerationRecord(
        created_at=utc_seconds(datetime.now(UTC)),
        model_id=loaded.model_id,
        weights_sha256=loaded.weights_sha256,
        prompt=request.prompt,
        seed=request.seed,
        sampling={
            **result.sampling, "domain": request.domain, "images": len(request.images),
            **({"retrieved_from": source.retrieved_from} if source.retrieved_from else {}),
        },
    )  # fmt: skip
    try:
        exported = export_script(
            result.program,
            out,
            pool,
            stem="best",
            record=record,
            options=ExportOptions(formats=formats, preview_name="preview.png"),
            limits=limits,
            domain=request.domain,
            spec=request.spec,
            request=request_items(request.asked(), request.domain),
        )
    except ExportError as exc:
        return files, str(exc)
    files += [{"format": fmt, "path": str(path)} for fmt, path in exported.files.items()]
    files.append({"format": "manifest", "path": str(exported.manifest)})
    return files, None


def verdict_word(valid: bool, mismatch: bool) -> str:
    """The verdict: "valid", "not as asked" (sound, not what was asked) or "invalid", as a
    job says it."""
    return "valid" if valid else "not as asked" if mismatch else "invalid"


def _short(text: str, limit: int = 80) -> str:
    """One line of at most `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _write_file(path: Path, text: str) -> Path:
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(text)
    scratch.replace(path)
    return path


def _finish(
    args: argparse.Namespace, result: Any, files: list[dict[str, str]], export_error: str | None
) -> int:
    """Print the outcome; the exit status (1 also for a sound part that ignores the request)."""
    from validators.cad.request import missed_only_the_request, what_is_off

    valid = sum(c.valid for c in result.candidates)
    message = None
    mismatch = missed_only_the_request(result.report)
    picture = result.report.checks.get("image_match")
    if mismatch and picture is not None and picture.detail.get("rivals"):
        message = (  # settle.py: it matches, but so does another part
            f"the picture does not settle which part it shows; the best (reward "
            f"{result.report.reward:.3f}) is sound geometry but not as asked: "
            f"{what_is_off(result.report)}"
        )
    elif mismatch:
        asked = what_is_off(result.report)
        message = (
            f"no candidate among {len(result.candidates)} matches the request; the best (reward "
            f"{result.report.reward:.3f}) is sound geometry but not as asked: {asked}"
        )
    elif not result.valid:
        error = result.report.error
        why = f"{error.kind}: {error.message}" if error else "it failed its checks"
        message = (
            f"no valid candidate among {len(result.candidates)}; the best (reward "
            f"{result.report.reward:.3f}) is invalid: {why}"
        )
    elif export_error:
        message = f"the best candidate is valid but exporting it failed: {export_error}"
    if args.json:
        print(
            json.dumps(
                {
                    "valid": result.valid,
                    "verdict": verdict_word(result.valid, mismatch),
                    "program": result.program,
                    "report": result.report.to_dict(),
                    "files": files,
                    "candidates": [
                        {
                            "reward": c.reward,
                            "valid": c.valid,
                            "index": c.index,
                            "round": c.round,
                            **({"retrieved_from": c.retrieved_from} if c.retrieved_from else {}),
                        }
                        for c in result.candidates
                    ],
                    "repairs": [r.to_dict() for r in result.repairs],
                    "fit": result.fit,
                    "look_alike": result.look_alike,
                    "seed": result.seed,
                    "sampling": result.sampling,
                    "model_id": result.model_id,
                    "weights_sha256": result.weights_sha256,
                    "timings": result.timings,
                    "message": message,
                },
                indent=2,
            )
        )
    else:
        verdict = "VALID" if result.valid else "NOT AS ASKED" if mismatch else "INVALID"
        print(
            f"best of {len(result.candidates)}: {verdict}  reward {result.report.reward:.3f}  "
            f"({valid} of {len(result.candidates)} valid)"
        )
        for repair in result.repairs:
            error = repair.error
            print(
                f"repair round {repair.round}: fed back candidate #{repair.repaired} "
                f"({error['kind']}: {_short(error['message'])}) → {repair.valid} of "
                f"{repair.candidates} valid"
            )
        if result.repairs and result.valid:
            print(f"repaired: the best is candidate #{result.candidates[0].index} "
                  f"(round {result.candidates[0].round})")  # fmt: skip
        source = next((c for c in result.candidates if c.index == best_index(result)), None)
        if source is not None and source.retrieved_from is not None:
            print(f"the answer starts from the gallery's part {source.retrieved_from}: it looked "
                  "most like the picture")  # fmt: skip
        if result.look_alike is not None:
            shown = result.look_alike["retrieved_from"]
            print(f"the model was shown the gallery's part {shown}: of the parts that look like "
                  "the picture, the checks scored it best")  # fmt: skip
        if result.fit is not None:
            print(fit_line(result.fit))
        for entry in files:
            print(f"{entry['format']:>10}  {entry['path']}")
        timings = result.timings
        print(
            f"seed {result.seed}  model {result.model_id}  generate {timings['generate_s']:.2f} s"
            f"  validate {timings['validate_s']:.2f} s"
            + (f"  gallery {timings['gallery_s']:.2f} s" if timings.get("gallery_s") else "")
        )
    if message:
        print(f"genservice generate: {message}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
