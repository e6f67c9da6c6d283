"""Validate a CadQuery script: run it in the sandbox, then check what it built.

Checks (absent when they do not apply): `executes`, `solid`, `brep_valid`, `watertight`,
`volume`, `bbox`, and on request `spec` (requested dimensions and feature counts), `request`
(the sizes and counts a request's own words ask, validators/cad/request.py) and `similarity`
(to a reference shape that never enters the candidate's sandbox).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import trimesh

from validators.cad import similarity
from validators.cad.mesh import MeshError, combine, decode_mesh, outlines, watertight_facts
from validators.cad.program import ProgramError, parameters_json, resolve_parameters
from validators.report import Check, ErrorInfo, Report
from validators.reward import composite_reward
from validators.sandbox.limits import Limits
from validators.sandbox.result import SandboxResult

if TYPE_CHECKING:
    from validators.physics import PhysicsOptions, PrintOptions

BASE_CHECKS = ("executes", "solid", "brep_valid", "watertight", "volume", "bbox")
CAD_DOMAINS = ("cad", "scene")
# Checks that inform the reward and the badges but do not make a program invalid: a sound part
# may still need supports to print, or topple. A scene is asked to stand, so there it gates.
ADVISORY = {
    "cad": frozenset({"overhang", "wall_thickness", "build_volume", "stability"}),
    "scene": frozenset({"overhang", "wall_thickness", "build_volume"}),
}
SPEC_KEYS = ("bbox_mm", "volume_mm3", "solids", "holes", "faces")


class Executor(Protocol):
    """Anything that runs a program with a named sandbox runner (the pool, or run_once)."""

    def run(
        self,
        runner: str,
        program: str,
        options: dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> SandboxResult: ...


@dataclass(frozen=True)
class CadOptions:
    """Thresholds of the geometry checks."""

    bbox_min_mm: float = 0.01
    bbox_max_mm: float = 5000.0
    spec_tolerance: float = 0.02  # relative, for dimensions and volume
    spec_tolerance_mm: float = 0.05  # absolute floor for dimensions
    iou_pass: float = 0.9
    check_self_intersection: bool = True
    printability: bool = True  # overhang, wall_thickness, build_volume
    physics: bool = True  # stability; for scenes also interference, floating_parts, support
    physics_options: PhysicsOptions | None = None
    print_options: PrintOptions | None = None

    def __post_init__(self) -> None:
        if not 0 < self.bbox_min_mm < self.bbox_max_mm:
            raise ValueError("CadOptions needs 0 < bbox_min_mm < bbox_max_mm")
        if not 0 <= self.iou_pass <= 1:
            raise ValueError("CadOptions.iou_pass must be in [0, 1]")


class ReferenceLoadError(ValueError):
    """A reference shape could not be loaded; the message says why."""


def check_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Validate a spec's keys and values; raise ValueError saying what to fix."""
    unknown = set(spec) - {*SPEC_KEYS, "tolerance", "any_orientation"}
    if unknown:
        raise ValueError(f"unknown spec key(s) {sorted(unknown)}; allowed: {list(SPEC_KEYS)}")
    if "tolerance" in spec and not (_positive(spec["tolerance"]) and spec["tolerance"] < 1):
        raise ValueError("spec tolerance must be a relative tolerance in (0, 1), e.g. 0.02")
    if "any_orientation" in spec and not isinstance(spec["any_orientation"], bool):
        raise ValueError("spec any_orientation must be true or false")
    if "bbox_mm" in spec:
        box = spec["bbox_mm"]
        if not (isinstance(box, list) and len(box) == 3 and all(_positive(v) for v in box)):
            raise ValueError("spec bbox_mm must be three positive numbers [x, y, z]")
    for key in ("volume_mm3",):
        if key in spec and not _positive(spec[key]):
            raise ValueError(f"spec {key} must be a positive number")
    for key in ("solids", "holes", "faces"):
        value = spec.get(key, 0)
        if key in spec and not (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        ):
            raise ValueError(f"spec {key} must be a whole number >= 0")
    return spec


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def load_reference(path: Path, executor: Executor, limits: Limits | None = None) -> trimesh.Trimesh:
    """A reference shape from .py (CadQuery), .step/.stp or .stl, as a closed mesh."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ReferenceLoadError(f"reference {path} does not exist")
    try:
        if suffix == ".stl":
            return _closed_reference(trimesh.load_mesh(str(path), file_type="stl"), path)
        text = path.read_text()
    except ReferenceLoadError:
        raise
    except Exception as exc:  # trimesh raises many kinds on a malformed file
        raise ReferenceLoadError(f"cannot read reference {path}: {exc}") from exc
    if suffix == ".py":
        result = executor.run("cad", text, {"check_self_intersection": False}, limits)
    elif suffix in (".step", ".stp"):
        result = executor.run("cad_step", text, {"check_self_intersection": False}, limits)
    else:
        raise ReferenceLoadError(
            f"reference must be .py, .step, .stp or .stl, not {suffix or path.name}"
        )
    if not result.ok or not result.payload or "parts" not in result.payload:
        why = (result.error or {}).get("message") or (result.payload or {}).get("problem")
        raise ReferenceLoadError(f"reference {path} did not build a shape: {why}")
    combined = combine([decode_mesh(part.get("mesh")) for part in result.payload["parts"]])
    if combined is None:
        raise ReferenceLoadError(f"reference {path} has no solid")
    return combined


def _closed_reference(mesh: object, path: Path) -> trimesh.Trimesh:
    """An STL reference as a closed, outward-facing mesh, or a clear error."""
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ReferenceLoadError(f"reference {path} holds no triangles")
    mesh.merge_vertices(digits_vertex=5)
    if not (mesh.is_watertight and mesh.is_winding_consistent):
        raise ReferenceLoadError(f"reference {path} is not a closed surface, so it has no volume")
    if mesh.volume < 0:
        mesh.invert()  # inside-out files are common; the shape is still well defined
    return mesh


def _failure(
    domain: str,
    kind: str,
    message: str,
    line: int | None,
    checks: dict[str, Check],
    metrics: dict[str, Any],
    parameters: dict[str, Any],
) -> Report:
    return Report.build(
        valid=False,
        reward=composite_reward(checks, valid=False, domain=domain),
        checks=checks,
        error=ErrorInfo(kind, message, line),
        metrics=metrics,
        parameters=parameters,
    )


@dataclass(frozen=True)
class CadRun:
    """A checked script run: its Report, and the sandbox's payload when the script ran."""

    report: Report
    payload: dict[str, Any] | None


def validate_cad(
    source: str,
    executor: Executor,
    *,
    spec: dict[str, Any] | None = None,
    reference: trimesh.Trimesh | None = None,
    parameters: dict[str, Any] | None = None,
    limits: Limits | None = None,
    options: CadOptions | None = None,
    domain: str = "cad",
    request: list[dict[str, Any]] | None = None,
) -> Report:
    """Run and check one CadQuery script (domain "cad", or "scene" with physics expectations);
    `request`: what its request asked (validators/cad/request.py), checked as `request`."""
    return run_cad(
        source,
        executor,
        spec=spec,
        reference=reference,
        parameters=parameters,
        limits=limits,
        options=options,
        domain=domain,
        request=request,
    ).report


def run_cad(
    source: str,
    executor: Executor,
    *,
    spec: dict[str, Any] | None = None,
    reference: trimesh.Trimesh | None = None,
    parameters: dict[str, Any] | None = None,
    limits: Limits | None = None,
    options: CadOptions | None = None,
    domain: str = "cad",
    runner: str = "cad",
    runner_options: dict[str, Any] | None = None,
    request: list[dict[str, Any]] | None = None,
) -> CadRun:
    """validate_cad, keeping the payload; `runner` may be one that adds to it (e.g. exports)."""
    if domain not in CAD_DOMAINS:
        raise ValueError(f"validate_cad handles the domains {CAD_DOMAINS}, not {domain!r}")
    if request:
        from validators.cad.request import check_request

        check_request(request)  # a malformed item is the caller's error, as a bad domain is
    options = options or CadOptions()
    try:
        values, found = resolve_parameters(source, parameters or {})
    except ProgramError as exc:
        checks = {"executes": Check(0.0, False, {"stage": "parse"})}
        return CadRun(_failure(domain, exc.kind, exc.message, exc.line, checks, {}, {}), None)
    params = parameters_json(found)
    run_options = {
        **(runner_options or {}),
        "parameters": values,
        "check_self_intersection": options.check_self_intersection,
    }
    result = executor.run(runner, source, run_options, limits)
    metrics: dict[str, Any] = {
        "duration_s": round(result.duration_s, 4),
        "peak_memory_mb": round(result.peak_memory_mb, 1),
    }
    if not result.ok or result.payload is None:
        error = result.error or {}
        detail = {"status": result.status.value, "stderr": result.stderr[-2000:]}
        checks = {"executes": Check(0.0, False, detail)}
        failure = _failure(
            domain,
            str(error.get("kind") or result.status.value),
            str(error.get("message") or f"the run ended with status {result.status.value}"),
            error.get("line"),
            checks,
            metrics,
            params,
        )
        return CadRun(failure, None)
    payload = result.payload
    if payload.get("problem"):
        problem = payload["problem"]
        checks = {"executes": Check(0.0, False, {"status": "no usable result"})}
        kind, message = problem["kind"], problem["message"]
        return CadRun(_failure(domain, kind, message, None, checks, metrics, params), None)
    # What the measurer read: size and digest of the B-rep every fact (and export) comes from.
    if isinstance(payload.get("handover"), dict):
        metrics["handover"] = payload["handover"]
    try:
        report = _check_geometry(
            payload, metrics, params, spec, reference, options, domain, request
        )
    except (MeshError, KeyError, TypeError, ValueError) as exc:
        checks = {"executes": Check(1.0, True, {"status": "ok"})}
        malformed = _failure(
            domain,
            "payload",
            f"the sandbox returned malformed geometry: {exc}",
            None,
            checks,
            metrics,
            params,
        )
        return CadRun(malformed, None)
    return CadRun(report, payload)


def _check_geometry(
    payload: dict[str, Any],
    metrics: dict[str, Any],
    params: dict[str, Any],
    spec: dict[str, Any] | None,
    reference: trimesh.Trimesh | None,
    options: CadOptions,
    domain: str,
    request: list[dict[str, Any]] | None = None,
) -> Report:
    """The geometry checks of a built script, then those against what was asked: the spec, the
    reference, and `request` (its request's words). `request` gates like `spec`: a served part
    that ignores what was asked is never VALID, however sound. `geometry_sound` in the metrics
    keeps the other half of the verdict (every check passed but those that judge against what
    was asked), so that the editor shows "sound geometry" apart from "matches the request"."""
    from validators.cad.request import JUDGED, request_check

    parts: list[dict[str, Any]] = payload["parts"]
    kind = payload["kind"]
    meshes = [decode_mesh(p.get("mesh")) for p in parts]
    checks: dict[str, Check] = {"executes": Check(1.0, True, {"status": "ok"})}
    solids = sum(int(p["solids"]) for p in parts)
    volume = sum(float(p["volume_mm3"]) for p in parts)
    boxes = [p["bbox"] for p in parts if p.get("bbox")]
    low = np.min([b[:3] for b in boxes], axis=0) if boxes else np.zeros(3)
    high = np.max([b[3:] for b in boxes], axis=0) if boxes else np.zeros(3)
    extents = [float(v) for v in high - low]
    metrics.update(
        kind=kind,
        volume_mm3=volume,
        bbox_mm=extents,
        solids=solids,
        faces=sum(int(p["faces"]) for p in parts),
        holes=sum(int(p["holes"]) for p in parts),
        hole_diameters_mm=[d for p in parts for d in p.get("hole_diameters", [])],
        parts=[
            {
                "name": p["name"],
                "solids": p["solids"],
                "volume_mm3": p["volume_mm3"],
                "bbox": p["bbox"],
                "color": p.get("color"),
            }
            for p in parts
        ],
    )

    expected = spec.get("solids") if spec and "solids" in spec else None
    if kind == "part":
        # A part in pieces is unsound geometry (disjoint solids), whatever was asked.
        solid_ok = solids == (expected if expected is not None else 1)
        want = f"{expected if expected is not None else 1} solid(s) in a part"
    else:
        # A scene of sound objects is sound however many it has; how many were asked is the
        # spec's `solids` item (and the request's counts), so five blocks for two is a sound
        # scene that is not as asked, not an invalid program.
        solid_ok = all(int(p["solids"]) >= 1 for p in parts)
        want = "at least one solid per assembly part"
    checks["solid"] = Check(
        float(solid_ok), solid_ok, {"solids": solids, "expected": want, "parts": len(parts)}
    )
    if solids == 0:
        return _failure(
            domain,
            "no_solid",
            "the result has no solid: it is a sketch, wire or face, "
            "or a boolean removed everything",
            None,
            checks,
            metrics,
            params,
        )

    invalid = [p for p in parts if not p["valid"]]
    checks["brep_valid"] = Check(
        float(not invalid),
        not invalid,
        {"invalid_parts": [{"name": p["name"], "reason": p["invalid_reason"]} for p in invalid]},
    )
    facts = [watertight_facts(m) if m is not None else None for m in meshes]
    leaky = [
        p["name"]
        for p, f in zip(parts, facts, strict=True)
        if f is None or not (f["closed"] and f["winding_consistent"] and f["outward"])
    ]
    mesh_volume = sum(f["mesh_volume_mm3"] for f in facts if f is not None)
    metrics["mesh_volume_mm3"] = mesh_volume
    passes = [f["through_holes"] for f in facts if f is not None]
    if passes and all(n is not None for n in passes):
        metrics["through_holes"] = sum(passes)
    whole = combine(meshes)  # every part's mesh as one: the fill, the plausibility, the IoU
    if whole is not None and math.isfinite(volume) and volume > 0:
        hull = float(whole.convex_hull.volume)  # what a lump of the same outline would hold
        metrics["fill"] = min(1.0, volume / hull) if hull > 0 else 1.0
    if whole is not None:
        # Is a diameter round, a "hex nut" a hexagon? The outline seen along each axis says.
        metrics["outline_fill"], metrics["outline_sides"] = outlines(whole)
    checks["watertight"] = Check(
        1.0 - len(leaky) / len(parts),
        not leaky,
        {"leaky_parts": leaky, "triangles": sum(f["triangles"] for f in facts if f)},
    )
    volume_ok = (
        math.isfinite(volume)
        and volume > 0
        and all(float(p["volume_mm3"]) > 0 for p in parts if int(p["solids"]))
    )
    checks["volume"] = Check(float(volume_ok), volume_ok, {"volume_mm3": volume})
    bbox_ok = all(
        math.isfinite(e) and options.bbox_min_mm <= e <= options.bbox_max_mm for e in extents
    )
    checks["bbox"] = Check(
        float(bbox_ok),
        bbox_ok,
        {"bbox_mm": extents, "limits_mm": [options.bbox_min_mm, options.bbox_max_mm]},
    )
    geometry_ok = all(checks[name].passed for name in BASE_CHECKS)
    named = [(p["name"], m) for p, m in zip(parts, meshes, strict=True) if m is not None]
    if geometry_ok and named:
        checks.update(_plausibility_checks(named, whole, domain, options))

    if spec:
        checks["spec"] = spec_check(spec, metrics, options)
    asked = request_check(request, metrics) if request else None
    if asked is not None:
        checks["request"] = asked
    if reference is not None:
        checks["similarity"] = _similarity_check(
            whole,
            reference,
            geometry_ok,
            options,
            metrics,
            any_way=bool((spec or {}).get("any_orientation")),
        )
    advisory = ADVISORY[domain]
    failed = [name for name, check in checks.items() if not check.passed and name not in advisory]
    metrics["geometry_sound"] = not [name for name in failed if name not in JUDGED]
    message = f"failed checks: {', '.join(failed)}"
    if asked is not None and not asked.passed:
        message += f"; not as asked: {asked.detail['summary']}"
    error = ErrorInfo("check_failed", message) if failed else None
    reward = composite_reward(checks, geometry_ok, domain=domain)
    return Report.build(not failed, reward, checks, error, metrics, params)


def _plausibility_checks(
    parts: list[tuple[str, trimesh.Trimesh]],
    whole: trimesh.Trimesh | None,
    domain: str,
    options: CadOptions,
) -> dict[str, Check]:
    """Printability of the whole shape (all parts' meshes as one) and physics of its parts, as
    the options ask."""
    from validators import physics  # MuJoCo and coacd load only when used

    checks: dict[str, Check] = {}
    if options.printability and whole is not None:
        checks.update(physics.printability_checks(whole, options.print_options))
    if options.physics:
        checks.update(
            physics.physics_checks(parts, scene=domain == "scene", options=options.physics_options)
        )
    return checks


def spec_check(spec: Mapping[str, Any], metrics: Mapping[str, Any], options: CadOptions) -> Check:
    """The `spec` check of a built part's measured metrics (its bbox, volume and counts)."""
    tolerance = float(spec.get("tolerance", options.spec_tolerance))
    items: dict[str, dict[str, Any]] = {}
    if "bbox_mm" in spec:
        want, have = list(map(float, spec["bbox_mm"])), list(metrics["bbox_mm"])
        if spec.get("any_orientation"):
            want, have = sorted(want), sorted(have)
        errors = [abs(h - w) for w, h in zip(want, have, strict=True)]
        ok = all(
            e <= max(tolerance * w, options.spec_tolerance_mm)
            for e, w in zip(errors, want, strict=True)
        )
        score = float(np.mean([max(0.0, 1 - e / w) for e, w in zip(errors, want, strict=True)]))
        items["bbox_mm"] = {"requested": want, "measured": have, "ok": ok, "score": score}
    if "volume_mm3" in spec:
        want_v, have_v = float(spec["volume_mm3"]), float(metrics["volume_mm3"])
        rel = abs(have_v - want_v) / want_v
        items["volume_mm3"] = {
            "requested": want_v,
            "measured": have_v,
            "ok": rel <= tolerance,
            "score": max(0.0, 1 - rel),
        }
    for key in ("solids", "holes", "faces"):
        if key in spec:
            want_n, have_n = int(spec[key]), int(metrics[key])
            items[key] = {
                "requested": want_n,
                "measured": have_n,
                "ok": want_n == have_n,
                "score": 1.0
                if want_n == have_n
                else max(0.0, 1 - abs(have_n - want_n) / max(want_n, 1)),
            }
    passed = all(item["ok"] for item in items.values())
    score = (
        float(np.mean([1.0 if i["ok"] else i["score"] for i in items.values()])) if items else 1.0
    )
    return Check(score, passed, {"items": items, "tolerance": tolerance})


def _similarity_check(
    mesh: trimesh.Trimesh | None,
    reference: trimesh.Trimesh,
    geometry_ok: bool,
    options: CadOptions,
    metrics: dict[str, Any],
    any_way: bool = False,
) -> Check:
    """IoU to the reference; with `any_way` (the spec's any_orientation), at the best of the
    24 axis turns, as the size check allows any orientation."""
    if mesh is None or not geometry_ok:
        return Check(0.0, False, {"reason": "the candidate has no valid closed geometry"})
    try:
        value, chamfer = similarity.compare(mesh, reference, any_way)
    except ValueError as exc:
        return Check(0.0, False, {"reason": str(exc)})
    chamfer *= 1000
    metrics.update(iou=value, chamfer_x1000=chamfer)
    normalisation = "bbox centre to origin, largest extent to 1"
    return Check(
        value,
        value >= options.iou_pass,
        {
            "iou": value,
            "chamfer_x1000": chamfer,
            "iou_pass": options.iou_pass,
            "normalisation": normalisation + ("; best of 24 axis turns" if any_way else ""),
        },
    )
