"""Export a CadQuery script: run it once in the sandbox, check it, write the files and manifest.

The script is validated exactly as `genservice validate` would (same runner, same Report); an
invalid script writes nothing and the error says why. Every file is written to a temporary name
and renamed, so a failure never leaves half a file behind.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exporters.formats import FORMATS, GLB_COMPRESSIONS, STEP_SCHEMAS, SUFFIXES
from exporters.gltf import glb_bytes
from exporters.parts import PartMesh, PartsError, parts_from_payload
from exporters.provenance import GenerationRecord, Provenance, make_provenance, write_manifest
from exporters.stl import stl_bytes
from exporters.threemf import threemf_bytes
from validators.cad.request import missed_only_the_request
from validators.cad.validate import CadOptions, Executor, run_cad
from validators.report import Report
from validators.sandbox.limits import Limits
from validators.sandbox.protocol import unpack_bytes


class ExportError(Exception):
    """Nothing was exported; `report` (when the script ran) says why."""

    def __init__(self, message: str, report: Report | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class ExportOptions:
    """What to write and how."""

    formats: tuple[str, ...] = ("glb", "step", "stl")
    glb_compression: str = "none"
    step_schema: str = "AP242"
    splat_count: int | None = None
    splat_refine: int = 0  # optimisation steps against renders of the part (0: off)
    device: str = "cpu"  # where splat refinement runs (cuda: gsplat)
    cad: CadOptions = field(default_factory=CadOptions)
    preview_name: str | None = None  # the PNG's file name (default: the stem + .png)

    def __post_init__(self) -> None:
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown or not self.formats:
            raise ValueError(f"formats must be some of {', '.join(FORMATS)}; got {unknown or '[]'}")
        if self.glb_compression not in GLB_COMPRESSIONS:
            raise ValueError(f"GLB compression must be one of {', '.join(GLB_COMPRESSIONS)}")
        if self.step_schema not in STEP_SCHEMAS:
            raise ValueError("the STEP schema must be AP214 or AP242")
        if self.splat_count is not None and not 1 <= self.splat_count <= 2_000_000:
            raise ValueError("the splat count must be between 1 and 2,000,000")
        if not 0 <= self.splat_refine <= 10_000:
            raise ValueError("splat refinement steps must be between 0 and 10,000")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: format -> path, the manifest, the Report and the provenance."""

    files: dict[str, Path]
    manifest: Path
    report: Report
    provenance: Provenance
    checks: dict[str, Any] = field(default_factory=dict)


def safe_stem(name: str) -> str:
    """A file-name stem from any text (letters, digits, '-', '_', '.')."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"
    return stem[:80]


def export_script(
    source: str,
    out_dir: Path,
    executor: Executor,
    *,
    stem: str = "model",
    parameters: dict[str, Any] | None = None,
    record: GenerationRecord | None = None,
    options: ExportOptions | None = None,
    limits: Limits | None = None,
    domain: str = "cad",
    spec: dict[str, Any] | None = None,
    request: list[dict[str, Any]] | None = None,
) -> ExportResult:
    """Run, validate and export one script; raise ExportError (writing nothing) if invalid.

    `request`: what its request asked (validators/cad/request.py). A sound part that misses it
    is still exported (a person asked for it and sees what is off), its manifest carrying the
    Report that says so: never VALID."""
    options = options or ExportOptions()
    record = record or GenerationRecord.for_script()
    stem = safe_stem(stem)
    provenance = make_provenance(source, parameters or {}, record, stem)
    step_header = {
        "name": stem,
        "timestamp": provenance.created,
        "originating_system": provenance.creator_tool,
        "description": f"genservice {provenance.id}; manifest {provenance.manifest_name}; "
        f"program sha256 {provenance.program_sha256}; {provenance.digital_source_type}",
        "schema": options.step_schema,
    }
    run = run_cad(
        source,
        executor,
        spec=spec,
        parameters=parameters,
        limits=limits,
        options=options.cad,
        domain=domain,
        runner="cad_export",
        runner_options={"step": step_header if "step" in options.formats else None},
        request=request,
    )
    report = run.report
    if not (report.valid or missed_only_the_request(report)) or run.payload is None:
        why = report.error.message if report.error else "the result failed its checks"
        failed = [n for n, c in report.checks.items() if not c.passed]
        detail = f" (failed checks: {', '.join(failed)})" if failed and not report.error else ""
        raise ExportError(f"not exported: the script is invalid: {why}{detail}", report)
    try:
        parts = parts_from_payload(run.payload)
    except PartsError as exc:
        raise ExportError(f"not exported: {exc}", report) from exc
    notes: dict[str, Any] = {}
    writers = _writers(parts, run.payload, provenance, options, notes)
    contents = {fmt: writers[fmt]() for fmt in options.formats}
    out_dir.mkdir(parents=True, exist_ok=True)
    names = {fmt: stem + SUFFIXES[fmt] for fmt in contents}
    if options.preview_name and "png" in names:
        names["png"] = safe_stem(options.preview_name)
    files = {fmt: _write_atomic(out_dir / names[fmt], data) for fmt, data in contents.items()}
    checks = {"step": run.payload["step_check"]} if "step" in files else {}
    checks |= notes
    # Every file above was written from the B-rep the measurer read and measured: its digest
    # ties the files to the Report.
    handover = run.payload.get("handover") or {}
    brep = {key: handover.get(key) for key in ("format", "bytes", "sha256")}
    verdict = "valid" if report.valid else "not as asked"
    manifest = write_manifest(provenance, files, report.to_dict(), out_dir, checks, brep, verdict)
    return ExportResult(files, manifest, report, provenance, checks)


def script_parts(
    source: str,
    executor: Executor,
    *,
    parameters: dict[str, Any] | None = None,
    limits: Limits | None = None,
    domain: str = "cad",
) -> tuple[list[PartMesh], Report]:
    """Run a script in the sandbox and return its tessellated parts with its Report.

    The parts come back whatever the checks said (a picture of a failing part shows what is
    wrong); ExportError when the script built no geometry."""
    run = run_cad(
        source,
        executor,
        parameters=parameters,
        limits=limits,
        domain=domain,
        runner="cad_export",
        runner_options={"step": None},
    )
    if run.payload is None:
        why = run.report.error.message if run.report.error else "it built no geometry"
        raise ExportError(f"nothing to render: {why}", run.report)
    try:
        return parts_from_payload(run.payload), run.report
    except PartsError as exc:
        raise ExportError(f"nothing to render: {exc}", run.report) from exc


def _writers(
    parts: list[PartMesh],
    payload: dict[str, Any],
    provenance: Provenance,
    options: ExportOptions,
    notes: dict[str, Any],
) -> dict[str, Callable[[], bytes]]:
    """A writer per format; `notes` receives what the manifest should add (splat refinement)."""
    name = provenance.stem
    made: list[Any] = []  # the Gaussians, made (and refined) once for every splat format

    def step() -> bytes:
        if "step" not in payload:
            why = payload.get("step_error") or "the sandbox returned no STEP data"
            raise ExportError(f"STEP export failed: {why}")
        return unpack_bytes(payload["step"])

    def splats(fmt: str) -> bytes:
        from exporters.splat import gaussians_from_parts, splat_bytes  # only when asked for

        if not made:
            gaussians = gaussians_from_parts(parts, count=options.splat_count)
            if options.splat_refine:
                from exporters.splat_refine import refine_splats

                try:
                    refined = refine_splats(
                        gaussians, parts, options.splat_refine, device=options.device
                    )
                except ValueError as exc:
                    raise ExportError(f"splat refinement failed: {exc}") from exc
                gaussians = refined.gaussians
                notes["splat_refinement"] = refined.to_dict()
            made.append(gaussians)
        return splat_bytes(made[0], fmt, provenance)

    def preview() -> bytes:
        from exporters.render import png_bytes, render  # open3d is imported only for previews

        # The provenance travels in the PNG's text chunks too, as it does in the GLB and STEP.
        text = {"Software": provenance.creator_tool, "genservice:provenance": provenance.id}
        return png_bytes(render(parts), text)

    return {
        "glb": lambda: glb_bytes(parts, name, provenance, options.glb_compression),
        "step": step,
        "stl": lambda: stl_bytes(parts, provenance),
        "3mf": lambda: threemf_bytes(parts, name, provenance),
        "ply": lambda: splats("ply"),
        "spz": lambda: splats("spz"),
        "splat-glb": lambda: splats("splat-glb"),
        "png": preview,
    }


def _write_atomic(path: Path, data: bytes) -> Path:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; files are shared
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
