"""The jobs' work, one Celery task per stage: generate (model workers), validate and export
(CPU workers on the sandbox pool).

Each task takes a job id, claims the job for its stage (store/jobs.py), renews its lease from a
heartbeat thread while it works, stores its output and hands the job to the next queue. The
model and the sandbox pools are created on a worker's first task and kept for its lifetime.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from celery import Celery

from genservice.api.views import asset_out
from genservice.celery import TASK_NAMES, dispatch
from genservice.config import Settings, load_settings
from genservice.store import jobs
from genservice.store.assets import LocalAssetStore, candidate_preview_key
from genservice.store.db import Database
from genservice.store.models import Asset, Job, Session, Version, new_id, now

log = logging.getLogger("genservice.worker")
DEFAULT_FORMATS = ("glb", "step", "stl", "png")
CANDIDATE_PREVIEW_PX = 192  # each generated candidate's iso picture, for the editor's gallery
HARD_LIMIT_EXIT = 70


class SoftTimeLimit(Exception):
    """A stage ran past the soft time limit."""


class Runtime:
    """What a worker process keeps between tasks: settings, database, assets, model, pools."""

    def __init__(self, settings: Settings, app: Celery) -> None:
        self.settings = settings
        self.app = app
        self.db = Database(settings.database)
        self.db.migrate()
        self.assets = LocalAssetStore(settings.data_path / "assets")
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._model: Any = None
        self._pools: dict[str, Any] = {}
        self._lock = threading.Lock()

    def model(self) -> Any:
        """The model, loaded on first use and kept (one per process: one process per GPU)."""
        with self._lock:
            if self._model is None:
                from genservice.generation.loader import default_model_dir, load_model

                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                folder = self.settings.model_dir or default_model_dir()
                log.info("loading model %s", folder)
                from genservice.device import resolve_device

                self._model = load_model(folder, device=resolve_device(self.settings.device))
            return self._model

    def limits(self) -> Any:
        """Sandbox limits per program."""
        from validators.sandbox import Limits

        return Limits(
            wall_s=self.settings.sandbox_timeout_s, memory_mb=self.settings.sandbox_memory_mb
        )

    def pool(self, domain: str) -> Any:
        """A warm sandbox pool for the domain (cad and scene share one), started on first use."""
        kind = "code" if domain == "code" else "cad"
        with self._lock:
            if kind not in self._pools:
                from validators.sandbox import Isolation, SandboxPool
                from validators.sandbox.pool import DEFAULT_PRELOAD

                isolation = Isolation("none" if self.settings.unsafe_sandbox else "bwrap")
                preload = ("validators.code.guest",) if kind == "code" else DEFAULT_PRELOAD
                self._pools[kind] = SandboxPool(
                    size=self.settings.sandbox_workers,
                    limits=self.limits(),
                    isolation=isolation,
                    preload=preload,
                )
            return self._pools[kind]

    def send(self, job_id: str, stage: str) -> None:
        """Dispatch a stage of a job."""
        dispatch(self.app, self.settings, job_id, stage)

    def close(self) -> None:
        """Stop the pools."""
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


class StageContext:
    """One claimed stage of one job: progress reporting, cancellation, time limits."""

    def __init__(self, runtime: Runtime, job: Job, stage: str) -> None:
        self.runtime = runtime
        self.job = job
        self.stage = stage
        self.started = time.monotonic()
        self.lost = threading.Event()
        self._latest: tuple[int, int, str] | None = None
        self._written = 0.0

    def progress(self, done: int, total: int, message: str = "") -> None:
        """Record progress (written at most ~4 times a second); stops a cancelled job."""
        self.check()
        shown = message or jobs.STAGE_STATUS[self.stage]
        changed = self._latest is None or self._latest[2] != shown
        self._latest = (done, total, shown)
        if changed or done >= total or time.monotonic() - self._written >= 0.25:
            self._written = time.monotonic()
            self.renew()

    def check(self) -> None:
        """Raise if the job was cancelled or taken, or the soft time limit has passed."""
        if self.lost.is_set():
            raise jobs.LeaseLost(self.job.id)
        if time.monotonic() - self.started > self.runtime.settings.soft_time_limit_s:
            raise SoftTimeLimit(
                f"{jobs.STAGE_STATUS[self.stage]} took longer than the "
                f"{self.runtime.settings.soft_time_limit_s:g} s limit"
            )

    def renew(self) -> None:
        """Extend the lease, with the latest progress."""
        s = self.runtime.settings
        try:
            jobs.renew(self.runtime.db, self.job.id, self.runtime.worker, s.lease_s, self._latest)
        except jobs.LeaseLost:
            self.lost.set()
            raise

    def heartbeat(self, stop: threading.Event) -> None:
        """Thread body: renew the lease every lease_s / 3; end the process past the hard limit."""
        settings = self.runtime.settings
        while not stop.wait(settings.lease_s / 3):
            if time.monotonic() - self.started > settings.hard_time_limit_s:
                reason = (
                    f"{jobs.STAGE_STATUS[self.stage]} passed the hard time limit of "
                    f"{settings.hard_time_limit_s:g} s; the worker was restarted"
                )
                jobs.fail(self.runtime.db, self.job.id, self.runtime.worker, reason)
                log.error("job %s: %s", self.job.id, reason)
                os._exit(HARD_LIMIT_EXIT)  # a stuck model call cannot be interrupted otherwise
            try:
                self.renew()
            except jobs.LeaseLost:
                return
            except Exception:  # a database hiccup: the next beat tries again
                log.exception("job %s: lease renewal failed", self.job.id)


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def runtime(app: Celery) -> Runtime:
    """This process's runtime, created on first use."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = Runtime(load_settings(), app)
        return _runtime


def run_stage(rt: Runtime, stage: str, job_id: str) -> str:
    """Claim and run one stage of a job; the claim's outcome ("claimed", "skipped", "failed")."""
    s = rt.settings
    claim = jobs.claim(rt.db, job_id, stage, rt.worker, s.lease_s, s.max_attempts)
    if claim.outcome != "claimed" or claim.job is None:
        log.info("job %s %s: %s (%s)", job_id, stage, claim.outcome, claim.reason)
        return claim.outcome
    context = StageContext(rt, claim.job, stage)
    stop = threading.Event()
    beat = threading.Thread(target=context.heartbeat, args=(stop,), daemon=True)
    beat.start()
    try:
        STAGES[stage](context)
    except jobs.LeaseLost:
        log.info("job %s %s: cancelled or taken over; stopped", job_id, stage)
    except SoftTimeLimit as exc:
        jobs.fail(rt.db, job_id, rt.worker, str(exc))
    except Exception as exc:
        log.exception("job %s %s failed", job_id, stage)
        jobs.fail(rt.db, job_id, rt.worker, f"{jobs.STAGE_STATUS[stage]} failed: {exc}")
    finally:
        stop.set()
        beat.join()
    return "claimed"


# -- generate ----------------------------------------------------------------------------------


def generation_request(rt: Runtime, job: Job, with_images: bool = True) -> Any:
    """The engine's GenerationRequest for a job (the program to edit comes from its parent)."""
    from genservice.generation.engine import GenerationRequest

    r = job.request
    previous = None
    if r.get("instruction"):
        with rt.db.session() as session:
            parent = session.get(Version, job.parent_version_id) if job.parent_version_id else None
        if parent is None:
            raise ValueError("the version to edit no longer exists")
        previous = previous_program(parent)
    images: tuple[Any, ...] = ()
    if with_images and r.get("images"):
        from PIL import Image

        opened = []
        for name in r["images"]:
            with Image.open(rt.settings.data_path / name) as image:
                opened.append(image.convert("RGB"))
        images = tuple(opened)
    return GenerationRequest(
        prompt=r["prompt"],
        domain=job.domain,
        n=r["n"],
        seed=r["seed"],
        max_new_tokens=r["max_new_tokens"],
        temperature=r["temperature"],
        top_p=r["top_p"],
        greedy_first=bool(r.get("greedy_first", False)),
        images=images,
        previous_program=previous,
        instruction=r.get("instruction") if previous is not None else None,
        spec=r.get("spec"),
        tests=r.get("tests"),
        entry_point=r.get("entry_point"),
        time_budget_s=r.get("time_budget_s"),
        repair=int(r.get("repair") or 0),
        fit=int(r.get("fit") or 0),
        retrieve=int(r.get("retrieve") or 0),
    )


def previous_program(parent: Version) -> str:
    """The program a refinement starts from: the parent's code with its parameter values in it."""
    from validators.cad.program import ProgramError, apply_parameters

    try:
        return apply_parameters(parent.program, parent.parameters or {})
    except ProgramError:  # parameters that no longer fit the code: the code as it is
        return parent.program


def stage_generate(ctx: StageContext) -> None:
    """Sample the job's N programs with the worker's model; hand them to validation. When the
    validate stage asked for a repair round, sample N repairs of its best failing candidate."""
    from genservice.generation.engine import gallery_programs, sample_programs

    rt, job = ctx.runtime, ctx.job
    ctx.progress(0, job.request["n"], "loading the model")
    loaded = rt.model()
    request = generation_request(rt, job)
    started = time.perf_counter()
    repairs = (job.result or {}).get("repairs") or []
    if repairs and "candidates" not in repairs[-1]:
        _sample_repairs(ctx, loaded, request, repairs)
        return

    def on_event(stage: str, done: int, total: int) -> None:
        ctx.progress(done, total, f"generating {total} candidates")

    look_alike = (job.result or {}).get("look_alike") or {}
    earlier = job.candidates or []  # the gallery parts, checked, when a look-alike was chosen
    gallery = [] if look_alike else gallery_programs(request, loaded)
    if gallery and loaded.reads_look_alikes:
        _check_gallery_first(ctx, loaded, gallery)
        return
    sampled = sample_programs(request, loaded, on_event, look_alike=look_alike.get("program"))
    candidates = [
        *earlier,
        *({**s.to_dict(), "index": i} for i, s in enumerate(sampled)),
        *_gallery_entries(loaded, gallery, request.n),
    ]
    generation = {
        "model_id": loaded.model_id,
        "weights_sha256": loaded.weights_sha256,
        "seed": request.seed,
        "sampling": request.sampling().to_dict(),
        "generated_tokens": sum(s.tokens for s in sampled),
        "generate_s": round(time.perf_counter() - started, 4),
        "created_at": int(now()),
    }
    following = jobs.advance(
        rt.db,
        job.id,
        rt.worker,
        "generate",
        candidates=candidates,
        result={
            "generation": generation,
            **({"look_alike": {**look_alike, "state": "shown"}} if look_alike else {}),
        },
    )
    rt.send(job.id, following)


def _gallery_entries(loaded: Any, gallery: list[Any], first_index: int) -> list[dict[str, Any]]:
    """Gallery parts as job candidates, numbered after the samples, each with its design (the
    fit starts from parts of different designs)."""
    design_of = loaded.gallery.design_of if loaded.gallery is not None else lambda _: None
    return [
        {**s.to_dict(), "index": first_index + i,
         **({"design": design} if (design := design_of(s.retrieved_from)) else {})}
        for i, s in enumerate(gallery)
    ]  # fmt: skip


def _check_gallery_first(ctx: StageContext, loaded: Any, gallery: list[Any]) -> None:
    """Send a picture request's gallery parts to validation before any sampling, so that the
    model is shown the one the checks score best (engine.generate does the same in one go);
    validation chooses it and hands the job back here to sample."""
    rt, job = ctx.runtime, ctx.job
    following = jobs.advance(
        rt.db,
        job.id,
        rt.worker,
        "generate",
        candidates=_gallery_entries(loaded, gallery, job.request["n"]),
        result={**(job.result or {}), "look_alike": {"state": "checking"}},
    )
    rt.send(job.id, following)


def _sample_repairs(
    ctx: StageContext, loaded: Any, request: Any, repairs: list[dict[str, Any]]
) -> None:
    """Repair round len(repairs): the failing candidate and its error, fed back to the model."""
    from genservice.generation.engine import repair_messages, repair_seed, sample_programs
    from validators.report import Report

    rt, job = ctx.runtime, ctx.job
    earlier = job.candidates or []
    asked = repairs[-1]
    failed = next(c for c in earlier if c["index"] == asked["repaired"])
    started = time.perf_counter()

    def on_event(stage: str, done: int, total: int) -> None:
        ctx.progress(done, total, f"repair round {asked['round']}: generating {total} candidates")

    sampled = sample_programs(
        request,
        loaded,
        on_event,
        messages=repair_messages(request, (failed["program"], Report.from_dict(failed["report"]))),
        seed=repair_seed(request.seed, asked["round"]),
    )
    fresh = [
        {**s.to_dict(), "index": len(earlier) + i, "round": asked["round"]}
        for i, s in enumerate(sampled)
    ]
    asked["generate_s"] = round(time.perf_counter() - started, 4)
    asked["tokens"] = sum(s.tokens for s in sampled)
    following = jobs.advance(
        rt.db,
        job.id,
        rt.worker,
        "generate",
        candidates=[*earlier, *fresh],
        result={**(job.result or {}), "repairs": repairs},
    )
    rt.send(job.id, following)


# -- validate ----------------------------------------------------------------------------------


def _request_picture(rt: Runtime, job: Job) -> Any | None:
    """The first picture a generation was asked with (PIL), for the `image_match` check."""
    names = job.request.get("images") or []
    if job.kind != "generation" or not names or job.domain == "code":
        return None
    from PIL import Image

    with Image.open(rt.settings.data_path / names[0]) as picture:
        return picture.convert("RGB")


def store_candidate_preview(rt: Runtime, job_id: str, index: int, data: bytes) -> str:
    """Put a candidate's picture in the asset store; the API path that serves it."""
    scratch = rt.settings.data_path / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    temporary = scratch / f"{job_id}-{index}-{uuid.uuid4().hex}.png"
    temporary.write_bytes(data)
    try:
        rt.assets.put(candidate_preview_key(job_id, index), temporary)
    finally:
        temporary.unlink(missing_ok=True)
    return f"/v1/generations/{job_id}/candidates/{index}/preview"


def stage_validate(ctx: StageContext) -> None:
    """Validate every candidate on the sandbox pool, rank them, and decide what comes next."""
    from genservice.generation.engine import round_order
    from genservice.generation.rerank import rerank, verdict_order
    from validators.report import Report

    rt, job = ctx.runtime, ctx.job
    r = job.request
    # Candidates of earlier rounds keep their Reports; only a repair round's new ones run (or
    # a picture request's samples, after its gallery parts were checked to choose a look-alike).
    earlier = [c for c in job.candidates or [] if "report" in c]
    sampled = [c for c in job.candidates or [] if "report" not in c]
    look_alike = (job.result or {}).get("look_alike") or {}
    checking = (  # what the editor and the API's progress events say
        "checking {total} gallery parts that look like the picture"
        if look_alike.get("state") == "checking"
        else "validating {total} programs"
    )
    started = time.perf_counter()
    asked = _asked(rt, job)
    items = judged_request(rt, job, asked)
    picture = _request_picture(rt, job)
    ranked = rerank(
        [c["program"] for c in sampled],
        job.domain,
        rt.pool(job.domain),
        spec=r.get("spec"),
        tests=r.get("tests"),
        entry_point=r.get("entry_point"),
        time_budget_s=r.get("time_budget_s"),
        parameters=r.get("parameters") or None,
        limits=rt.limits(),
        progress=lambda done, total: ctx.progress(done, total, checking.format(total=total)),
        asked=asked,
        request=items,
        preview_size=CANDIDATE_PREVIEW_PX if job.kind == "generation" else None,
        picture=picture,
    )
    fresh = []
    for s in ranked:
        index = sampled[s.index].get("index", s.index)
        entry = {
            "index": index,
            "round": sampled[s.index].get("round", 0),
            "program": s.program,
            "reward": s.reward,
            "valid": s.valid,
            "finish_reason": sampled[s.index].get("finish_reason", ""),
            "report": s.report.to_dict(),
        }
        if sampled[s.index].get("retrieved_from"):
            entry["retrieved_from"] = sampled[s.index]["retrieved_from"]
        if s.preview is not None:
            entry["preview_url"] = store_candidate_preview(rt, job.id, index, s.preview)
        fresh.append(entry)
    # Each round is ranked; all rounds together as the engine merges them (earlier rounds first
    # on ties: the sort is stable). The first round is ordered as rerank orders it, its samples
    # before the gallery parts that were checked before them.
    repairs = (job.result or {}).get("repairs") or []
    if repairs:
        scored = sorted([*earlier, *fresh], key=lambda c: round_order(c["valid"], c["reward"]))
    else:
        both = [*fresh, *earlier]
        scored = sorted(both, key=lambda c: verdict_order(Report.from_dict(c["report"])))
    validate_s = round(time.perf_counter() - started, 4)
    if look_alike.get("state") == "checking":
        _choose_look_alike(rt, job, scored, validate_s)
        return
    best = scored[0]
    # What the `request` check asked, kept with the job: its export, an export of more formats
    # and the manual edits below its version are judged against the same items.
    result = {**(job.result or {}), "asked": items or [], "repairs": repairs}
    if repairs:  # this validated a repair round
        repairs[-1].update(
            candidates=len(fresh), valid=sum(c["valid"] for c in fresh), validate_s=validate_s
        )
    else:
        result["validate_s"] = validate_s
    if job.kind == "validate":
        jobs.finish(rt.db, job.id, rt.worker, {**result, "report": best["report"]})
        return
    # A new part is fitted to its stated sizes and picture first (once; it costs no sampling):
    # what misses only those is the fit's to put right, not repair's.
    if asked is not None and asked[1] is None and "fit" not in result:
        scored = _fit_to_request(ctx, picture, scored, asked, items, result)
        best = scored[0]
    if _repair_next(rt, job, best, scored, result):
        return
    if picture is not None and job.kind == "generation" and job.domain in ("cad", "scene"):
        scored = _settle(rt, job, scored)  # as the engine does once the candidates are final
        best = scored[0]
    if not best["valid"] and not not_as_asked(best["report"]):
        jobs.fail(
            rt.db,
            job.id,
            rt.worker,
            invalid_reason(scored),
            result={**result, **outcome(scored)},
        )
        return
    # A sound part that ignores what was asked is still delivered (a version, its files), its
    # Report saying what is off and never VALID: the editor shows the part and the number.
    if job.domain == "code":  # nothing to export: the function and its test report are the result
        version_id = version_id_for(job)
        jobs.finish(
            rt.db,
            job.id,
            rt.worker,
            {**result, **outcome(scored), "version_id": version_id, "assets": []},
            also=lambda session: _ignore(add_version(session, job, version_id, best, {})),
            candidates=scored,
            version_id=version_id,
        )
        return
    following = jobs.advance(rt.db, job.id, rt.worker, "validate", candidates=scored, result=result)
    rt.send(job.id, following)


def _choose_look_alike(
    rt: Runtime, job: Job, checked: list[dict[str, Any]], validate_s: float
) -> None:
    """Choose the look-alike the model is shown from a picture request's gallery parts, now
    checked and ranked (gallery.checked_look_alike), and hand the job back to sample."""
    from genservice.generation.gallery import checked_look_alike

    program = checked_look_alike([c["program"] for c in checked])
    chosen = next((c for c in checked if c["program"] == program), None)
    look_alike = {
        "state": "chosen",
        "program": program,
        "retrieved_from": chosen.get("retrieved_from") if chosen else None,
        "validate_s": validate_s,
    }
    _back_to_generate(rt, job, checked, {**(job.result or {}), "look_alike": look_alike})


def _back_to_generate(
    rt: Runtime, job: Job, candidates: list[dict[str, Any]], result: dict[str, Any]
) -> None:
    """Hand a job from validation back to a model worker (to sample, or to repair)."""
    following = jobs.advance(
        rt.db, job.id, rt.worker, "validate", to="generate", candidates=candidates, result=result
    )
    rt.send(job.id, following)


def _fit_to_request(
    ctx: StageContext,
    picture: Any,
    scored: list[dict[str, Any]],
    asked: Any,
    items: Any,
    result: dict[str, Any],
) -> list[dict[str, Any]]:
    """Fit the best candidate to the request's stated sizes and picture (if any) when the
    request asks for rounds of it, and with a picture the next best of other designs too, as
    the engine does (engine.fit_best, fit.fit_starts); the candidates with each fitted one
    added, in rerank's order, and what the fit that came out first did under result["fit"]."""
    from genservice.generation.engine import wants_fit
    from genservice.generation.fit import fit_candidate, fit_starts
    from genservice.generation.rerank import fit_rank, verdict_order
    from genservice.generation.settle import served_fit
    from validators.report import Report

    rt, job = ctx.runtime, ctx.job
    r = job.request
    rounds = int(r.get("fit") or 0)
    if not wants_fit(
        rounds, job.domain, True, picture is not None, Report.from_dict(scored[0]["report"])
    ):
        return scored
    ranked = [(c["program"], _fine(c)) for c in scored]
    designs = [c.get("design") for c in scored]
    starts = [scored[i] for i in fit_starts(ranked, picture is not None, designs=designs)]

    def fit_one(number: int, start: dict[str, Any]) -> Any:
        def progress(done: int, total: int) -> None:
            overall, whole = number * total + done, len(starts) * total
            ctx.progress(overall, whole, f"fitting to the request: round {overall} of {whole}")

        fit = fit_candidate(
            job.domain, rt.pool(job.domain), picture, start["program"],
            Report.from_dict(start["report"]), r["prompt"], rounds,
            keep=set(r.get("parameters") or ()), progress=progress, spec=r.get("spec"),
            asked=asked, request=items, limits=rt.limits(),
            parameters=r.get("parameters") or None, preview_size=CANDIDATE_PREVIEW_PX,
        )  # fmt: skip
        fit.starts = len(starts)
        return fit

    fits = [(fit_one(number, start), start) for number, start in enumerate(starts)]
    index = max(c["index"] for c in scored)
    fitted = [
        _fitted_entry(rt, job, fit, start, index := index + 1)
        for fit, start in fits
        if fit.scored is not None
    ]
    result["fit"] = fits[0][0].to_dict()
    if not fitted:
        return scored
    if len(starts) == 1:  # the best, fitted: it meets the request better than it did
        return [*fitted, *scored]
    # A fitted candidate goes before any it ties with (its start among them): sorted is stable.
    ordered = sorted([*fitted, *scored], key=lambda c: verdict_order(Report.from_dict(c["report"])))
    if ordered[0].get("fitted_from") is not None:  # which fit serves: settle.served_fit
        chosen = fitted[served_fit([fit_rank(Report.from_dict(c["report"])) for c in fitted])]
        ordered = [chosen, *(c for c in ordered if c is not chosen)]
    first = ordered[0].get("fitted_from")
    result["fit"] = next((f for f, s in fits if s["index"] == first), fits[0][0]).to_dict()
    return ordered


def _fitted_entry(
    rt: Runtime, job: Job, fit: Any, start: dict[str, Any], index: int
) -> dict[str, Any]:
    """A candidate (JSON) of the part a fit came to from `start`, numbered `index`."""
    chosen = fit.scored.record
    entry = {
        "index": index,
        "round": start.get("round", 0),
        "program": chosen.program,
        "reward": chosen.reward,
        "valid": chosen.valid,
        "finish_reason": "fitted",
        "fitted_from": start["index"],
        "report": chosen.report.to_dict(),
    }
    if chosen.preview is not None:
        entry["preview_url"] = store_candidate_preview(rt, job.id, index, chosen.preview)
    return entry


def _settle(rt: Runtime, job: Job, scored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates (JSON) of a picture request, each that passed marked NOT AS ASKED when
    the picture fits a different part as well as the best (generation/settle.py, as the
    engine marks them); the same list otherwise."""
    from genservice.generation.settle import settle
    from validators.report import Report

    reports = [(c["index"], c["program"], Report.from_dict(c["report"])) for c in scored]
    changed = settle(reports, rt.pool(job.domain), rt.limits())
    return [
        {**c, "valid": False, "report": changed[c["index"]].to_dict()}
        if c["index"] in changed else c
        for c in scored
    ]  # fmt: skip


def _repair_next(
    rt: Runtime, job: Job, best: dict[str, Any], scored: list[dict[str, Any]], result: dict
) -> bool:
    """Hand the job back to a model worker for a repair round when no candidate is valid and
    rounds are left (generation.engine.wants_repair); whether it did."""
    from genservice.generation.engine import error_of, wants_repair
    from validators.report import Report

    repairs = result.get("repairs") or []
    rounds = int(job.request.get("repair") or 0) if job.kind == "generation" else 0
    # A sound part that misses only the picture is the fit's to improve, not repair's.
    if not wants_repair(rounds, job.domain, _fine(best), len(repairs)):
        return False
    error = error_of(Report.from_dict(best["report"]))
    repairs.append({"round": len(repairs) + 1, "repaired": best["index"], "error": error})
    _back_to_generate(rt, job, scored, {**result, "repairs": repairs})
    return True


def _fine(candidate: dict[str, Any]) -> bool:
    """Whether a candidate (JSON) passes every check, the picture's perhaps excepted."""
    from genservice.generation.rerank import valid_but_the_picture
    from validators.report import Report

    return valid_but_the_picture(Report.from_dict(candidate["report"]))


def _ignore(_value: Any) -> None:
    return None


def _asked(rt: Runtime, job: Job) -> tuple[str, str | None] | None:
    """What a generation asked (its text, and the previous program of a refinement), for
    ranking its candidates; None for hand-made versions and plain validation."""
    if job.kind != "generation":
        return None
    instruction = job.request.get("instruction")
    if not instruction or not job.parent_version_id:
        return (job.request.get("prompt") or "", None)
    with rt.db.session() as session:
        parent = session.get(Version, job.parent_version_id)
    return (instruction, previous_program(parent) if parent is not None else None)


def judged_request(
    rt: Runtime, job: Job, asked: tuple[str, str | None] | None
) -> list[dict[str, Any]] | None:
    """The items a job's candidates are checked against (the `request` check): a generation's
    own words; a manual edit keeps the request its parent version was judged against (a slider
    that makes the 80 mm part 120 mm is not as asked); a validation, the words it was given or
    the request of the version it edits. None when nothing is asked."""
    from genservice.generation.asked import asked_items
    from genservice.generation.rerank import request_items

    if job.domain == "code":
        return None
    if job.kind == "generation":
        return request_items(asked, job.domain)
    r = job.request
    if r.get("request"):
        return asked_items(r["request"], job.domain) or None
    if r.get("job_id"):  # an opened candidate: the request of the generation it came from
        return standing_request(rt, job_id=r["job_id"])
    stands_on = r.get("version_id") if job.kind == "validate" else job.parent_version_id
    return standing_request(rt, version_id=stands_on)


def standing_request(
    rt: Runtime, version_id: str | None = None, job_id: str | None = None
) -> list[dict[str, Any]] | None:
    """The request items a version (or the job that made it) was judged against, as that job
    recorded them; None when nothing was asked."""
    with rt.db.session() as session:
        if version_id:
            version = session.get(Version, version_id)
            job_id = version.job_id if version is not None else None
        made_by = session.get(Job, job_id) if job_id else None
    if made_by is None:
        return None
    return (made_by.result or {}).get("asked") or None


def invalid_reason(scored: list[dict[str, Any]]) -> str:
    """Why no candidate was accepted, from the best one's Report."""
    best = scored[0]
    error = best["report"].get("error")
    if error:
        where = f" (line {error['line']})" if error.get("line") else ""
        why = f"{error['kind']}: {error['message']}{where}"
    else:
        failed = [n for n, c in best["report"].get("checks", {}).items() if not c.get("passed")]
        why = "failed checks: " + (", ".join(failed) or "none passed")
    many = len(scored)
    what = "the program is invalid" if many == 1 else f"none of the {many} candidates is valid"
    return f"{what}; best (reward {best['reward']:.3f}): {why}"


def not_as_asked(report: dict[str, Any]) -> bool:
    """Whether a Report (JSON) is invalid only because the part does not match its request."""
    from validators.cad.request import missed_only_the_request
    from validators.report import Report

    return missed_only_the_request(Report.from_dict(report))


def verdict(report: dict[str, Any]) -> str:
    """The verdict of a Report (JSON): "valid", "not as asked" (sound geometry, not what the
    request asked) or "invalid"."""
    if report.get("valid"):
        return "valid"
    return "not as asked" if not_as_asked(report) else "invalid"


def outcome(scored: list[dict[str, Any]]) -> dict[str, Any]:
    """The result fields every generation reports: the chosen program, its Report and verdict,
    all rewards."""
    best = scored[0]
    return {
        "program": best["program"],
        "report": best["report"],
        "valid": best["valid"],
        "verdict": verdict(best["report"]),
        "candidates": [
            {
                "index": c["index"],
                "round": c.get("round", 0),
                "reward": c["reward"],
                "valid": c["valid"],
                "verdict": verdict(c["report"]),
                "finish_reason": c["finish_reason"],
                "program": c["program"],
                **({"preview_url": c["preview_url"]} if c.get("preview_url") else {}),
                **({"fitted_from": c["fitted_from"]} if "fitted_from" in c else {}),
                **({"retrieved_from": c["retrieved_from"]} if "retrieved_from" in c else {}),
            }
            for c in scored
        ],
    }


# -- export ------------------------------------------------------------------------------------


def version_id_for(job: Job) -> str:
    """A job's version id, derived from the job id so that a retried export reuses it."""
    return job.version_id or "ver_" + job.id.removeprefix("job_")


def add_version(
    session: Any, job: Job, version_id: str, best: dict[str, Any], record: dict[str, Any]
) -> Version:
    """Insert the job's version into its session (numbered) and make it the session's head."""
    assert job.session_id is not None
    count = session.query(Version).filter(Version.session_id == job.session_id).count()
    version = Version(
        id=version_id,
        session_id=job.session_id,
        owner_id=job.owner_id,
        parent_id=job.parent_version_id,
        number=count + 1,
        job_id=job.id,
        source="generation" if job.kind == "generation" else job.request.get("source", "edit"),
        domain=job.domain,
        prompt=job.request.get("instruction") or job.request.get("prompt") or "",
        program=best["program"],
        parameters=job.request.get("parameters") or {},
        report=best["report"],
        record=record,
        created_at=now(),
    )
    session.add(version)
    owner = session.get(Session, job.session_id)
    if owner is not None:
        owner.head_version_id = version_id
        owner.updated_at = now()
    return version


def provenance_record(job: Job) -> dict[str, Any]:
    """What the manifest says about how the program was made (fixed per version)."""
    generation = (job.result or {}).get("generation")
    if generation is not None:
        retrieved = answer_retrieved_from(job.candidates or [])
        return {
            "created_at": generation["created_at"],
            "model_id": generation["model_id"],
            "weights_sha256": generation["weights_sha256"],
            "prompt": job.request.get("instruction") or job.request.get("prompt"),
            "seed": generation["seed"],
            "sampling": {
                **generation["sampling"],
                "domain": job.domain,
                **({"retrieved_from": retrieved} if retrieved else {}),
            },
        }
    return {"created_at": int(job.created_at)}


def answer_retrieved_from(candidates: list[dict[str, Any]]) -> str | None:
    """The gallery entry the answer (the first candidate) is, or was fitted from; None when
    the model wrote it."""
    if not candidates:
        return None
    best = candidates[0]
    if best.get("fitted_from") is not None:
        best = next((c for c in candidates if c["index"] == best["fitted_from"]), best)
    return best.get("retrieved_from")


def export_files(
    rt: Runtime,
    version_id: str,
    program: str,
    parameters: dict[str, Any],
    record: dict[str, Any],
    formats: tuple[str, ...],
    domain: str,
    spec: dict[str, Any] | None,
    scratch: Path,
    request: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Export a program into `scratch` and put each file in the asset store; file entries."""
    from exporters.export import ExportOptions, export_script
    from exporters.formats import MEDIA_TYPES
    from exporters.provenance import GenerationRecord

    generation_record = GenerationRecord(
        created_at=datetime.fromtimestamp(int(record["created_at"]), UTC),
        model_id=record.get("model_id"),
        weights_sha256=record.get("weights_sha256"),
        prompt=record.get("prompt"),
        seed=record.get("seed"),
        sampling=record.get("sampling") or {},
    )
    exported = export_script(
        program,
        scratch,
        rt.pool(domain),
        stem="model",
        parameters=parameters,
        record=generation_record,
        options=ExportOptions(formats=formats),
        limits=rt.limits(),
        domain=domain,
        spec=spec,
        request=request,
    )
    files = [*exported.files.items(), ("manifest", exported.manifest)]
    entries = []
    for fmt, path in files:
        key = f"{version_id}/{path.name}"
        sha256, size = rt.assets.put(key, path)
        media = "application/json" if fmt == "manifest" else MEDIA_TYPES[fmt]
        entries.append(
            {"format": fmt, "path": key, "sha256": sha256, "size": size, "media_type": media}
        )
    return entries


def upsert_assets(
    session: Any, version: Version | None, version_id: str, owner_id: str, entries: list[dict]
) -> list[dict[str, Any]]:
    """Record the files as the version's assets (replacing a format's older row)."""
    existing = {a.format: a for a in session.query(Asset).filter(Asset.version_id == version_id)}
    listed = []
    for entry in entries:
        asset = existing.get(entry["format"])
        if asset is None:
            asset = Asset(id=new_id("ast"), version_id=version_id, owner_id=owner_id, **entry)
            session.add(asset)
        else:
            asset.path, asset.sha256, asset.size = entry["path"], entry["sha256"], entry["size"]
            asset.media_type = entry["media_type"]
        listed.append(asset_out(asset).model_dump())
    return listed


def stage_export(ctx: StageContext) -> None:
    """Export the chosen program (new version) or more formats of a version (on demand)."""
    rt, job = ctx.runtime, ctx.job
    scratch = rt.settings.data_path / "tmp" / f"{job.id}-{rt.worker.replace(':', '-')}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        if job.kind == "export":
            _export_more(ctx, scratch)
        else:
            _export_version(ctx, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _export_version(ctx: StageContext, scratch: Path) -> None:
    rt, job = ctx.runtime, ctx.job
    best = (job.candidates or [])[0]
    version_id = version_id_for(job)
    record = provenance_record(job)
    formats = tuple(job.request.get("formats") or DEFAULT_FORMATS)
    ctx.progress(0, len(formats), "exporting " + ", ".join(formats))
    from exporters.export import ExportError

    try:
        entries = export_files(
            rt,
            version_id,
            best["program"],
            job.request.get("parameters") or {},
            record,
            formats,
            job.domain,
            job.request.get("spec"),
            scratch,
            (job.result or {}).get("asked") or None,
        )
    except ExportError as exc:
        jobs.fail(rt.db, job.id, rt.worker, f"the program is valid but exporting it failed: {exc}")
        return
    ctx.check()
    listed: list[dict[str, Any]] = []

    def write(session: Any) -> None:
        version = add_version(session, job, version_id, best, record)
        session.flush()
        listed.extend(upsert_assets(session, version, version_id, job.owner_id, entries))

    scored = job.candidates or []
    # `write` fills `listed` (asset ids exist once their rows do) before the job row is
    # updated in the same transaction, so the result is complete the moment it reads "done".
    result = {**(job.result or {}), **outcome(scored), "version_id": version_id, "assets": listed}
    jobs.finish(rt.db, job.id, rt.worker, result, also=write, version_id=version_id)


def _export_more(ctx: StageContext, scratch: Path) -> None:
    rt, job = ctx.runtime, ctx.job
    version_id = job.request["version_id"]
    with rt.db.session() as session:
        version = session.get(Version, version_id)
        have = [a.format for a in session.query(Asset).filter(Asset.version_id == version_id)]
    if version is None:
        jobs.fail(rt.db, job.id, rt.worker, f"version {version_id} no longer exists")
        return
    asked = standing_request(rt, version_id=version_id)
    wanted = [f for f in have if f != "manifest"]
    wanted += [f for f in job.request["formats"] if f not in wanted]
    ctx.progress(0, len(wanted), "exporting " + ", ".join(wanted))
    from exporters.export import ExportError

    try:
        # Everything again, so that one manifest covers every file (unchanged files are
        # byte-identical: the provenance record fixes every timestamp).
        entries = export_files(
            rt,
            version_id,
            version.program,
            version.parameters,
            version.record or {"created_at": int(version.created_at)},
            tuple(wanted),
            version.domain,
            None,
            scratch,
            asked,
        )
    except ExportError as exc:
        jobs.fail(rt.db, job.id, rt.worker, f"exporting failed: {exc}")
        return
    listed: list[dict[str, Any]] = []

    def write(session: Any) -> None:
        listed.extend(upsert_assets(session, None, version_id, version.owner_id, entries))

    result = {"version_id": version_id, "assets": listed}
    jobs.finish(rt.db, job.id, rt.worker, result, also=write)


STAGES: dict[str, Callable[[StageContext], None]] = {
    "generate": stage_generate,
    "validate": stage_validate,
    "export": stage_export,
}


def register_tasks(app: Celery) -> None:
    """Define the three stage tasks on the app."""
    for stage, name in TASK_NAMES.items():

        def task(job_id: str, _stage: str = stage) -> str:
            return run_stage(runtime(app), _stage, job_id)

        task.__name__ = f"{stage}_task"
        app.task(name=name, acks_late=True, reject_on_worker_lost=True)(task)
