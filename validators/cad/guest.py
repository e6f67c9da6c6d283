"""The building side of a CAD run: execute a CadQuery script and hand over what it built.

This module runs in the sandbox's *builder*, the process that executes the candidate, which may
rewrite anything in its own memory (a method's `__code__`, a class attribute, bytes through
ctypes). So nothing measured here is trusted, and nothing is measured here: the builder's only
output is the hand-over, B-rep bytes of each part with plain data beside them (names, colours),
which the measurer (validators/cad/measurer.py), a process that never ran candidate code, reads
and measures. A script that forges the hand-over can only change which shape is measured, and
that shape is then also the one delivered.
"""

from __future__ import annotations

import builtins
import hashlib
import inspect
import os
from typing import Any

import cadquery as cq
from OCP.OSD import OSD_ThreadPool

from validators.cad.measurer import HANDOVER_FORMAT, MAX_NAME_CHARS, encode_shape, measure_cad
from validators.cad.program import compile_program
from validators.sandbox.guest import harness
from validators.sandbox.protocol import pack_bytes

# OCCT's shared thread pool must not start in the warm worker: a forked child would wait forever
# on threads that fork did not copy. One thread (the caller's) keeps every operation in-line;
# the pool runs one program per worker and per core anyway.
OSD_ThreadPool.DefaultPool_s(1)


class ResultProblem(Exception):
    """The script ran but its result cannot be validated (none, or of the wrong type)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _shapes_of(obj: Any) -> list[cq.Shape]:
    if isinstance(obj, cq.Workplane):
        return [v for v in obj.vals() if isinstance(v, cq.Shape)]
    if isinstance(obj, cq.Shape):
        return [obj]
    if isinstance(obj, cq.Sketch):
        return [f for f in obj._faces] if hasattr(obj, "_faces") else []
    wrapped = getattr(obj, "wrapped", None)
    if wrapped is not None or type(obj).__module__.startswith("OCP"):
        return [cq.Shape.cast(wrapped if wrapped is not None else obj)]
    raise ResultProblem(
        "result_type",
        f"the result is a {type(obj).__name__}; expected a cadquery Workplane, Shape or Assembly",
    )


def _assembly_parts(
    assy: cq.Assembly, parent: cq.Location, out: list[dict[str, Any]], path: list[str]
) -> None:
    """Parts of an assembly, placed; `path` names the assemblies above each (for STEP's tree)."""
    location = parent * assy.loc
    if assy.obj is not None:
        shapes = [s.moved(location) for s in _shapes_of(assy.obj)]
        color = list(assy.color.toTuple()) if assy.color is not None else None
        out.append({"name": assy.name, "shapes": shapes, "color": color, "path": path})
    for child in assy.children:
        _assembly_parts(child, location, out, [*path, assy.name])


def collect_parts(objects: list[tuple[Any, str | None]]) -> tuple[str, list[dict[str, Any]]]:
    """Turn what the script showed into named parts; the kind is "part" or "assembly"."""
    parts: list[dict[str, Any]] = []
    kind = "part" if len(objects) == 1 else "assembly"
    for index, (obj, name) in enumerate(objects):
        if isinstance(obj, cq.Assembly):
            kind = "assembly"
            _assembly_parts(obj, cq.Location(), parts, [])
        elif isinstance(obj, list | tuple):
            kind = "assembly"
            for j, item in enumerate(obj):
                parts.append({"name": f"{name or 'part'}_{j}", "shapes": _shapes_of(item)})
        else:
            parts.append({"name": name or f"part_{index}", "shapes": _shapes_of(obj)})
    return kind, parts


def hand_over(objects: list[tuple[Any, str | None]]) -> dict[str, Any]:
    """The hand-over for what a script showed: B-rep bytes and plain data, nothing measured.

    Each part's shapes (placed at their assembly locations) become one compound, written in
    OCCT's binary BRep format; the parts list names, colours, sizes and digests of the bytes.
    """
    kind, parts = collect_parts(objects)
    chunks: list[bytes] = []
    listed: list[dict[str, Any]] = []
    for part in parts:
        data = encode_shape(cq.Compound.makeCompound(part["shapes"]))
        chunks.append(data)
        listed.append(
            {
                "name": str(part["name"])[:MAX_NAME_CHARS] or "part",
                "color": part.get("color"),
                "path": [str(name)[:MAX_NAME_CHARS] for name in part.get("path", [])],
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    alone = objects[0][0] if len(objects) == 1 else None
    return {
        "format": HANDOVER_FORMAT,
        "kind": kind,
        "root": alone.name if isinstance(alone, cq.Assembly) else None,
        "result_type": type(objects[0][0]).__name__,
        "parts": listed,
        "brep": pack_bytes(b"".join(chunks)),
    }


def execute_script(source: str, options: dict[str, Any]) -> list[tuple[Any, str | None]]:
    """Run a script (result = ... or show_object(...)); what it showed, with the names given.

    Raises ResultProblem when there is nothing to describe or the script replaced the code
    that measures it.
    """
    shown: list[tuple[Any, str | None]] = []

    def show_object(obj: Any, name: str | None = None, options: Any = None, **_: Any) -> None:
        shown.append((obj, name))

    namespace: dict[str, Any] = {  # SCRIPT_GLOBALS in program.py names these
        "__name__": "__main__",
        "show_object": show_object,
        "debug": lambda *args, **kwargs: None,
        "log": print,
    }
    exec(compile_program(source, options.get("parameters") or {}), namespace)
    tampered = tampered_with()
    if tampered:
        raise ResultProblem(
            "tamper", "the script replaced what hands its shapes over: " + ", ".join(tampered[:5])
        )
    if not shown:
        if "result" not in namespace:
            raise ResultProblem(
                "no_result", "the script neither assigns `result` nor calls show_object(...)"
            )
        shown = [(namespace["result"], None)]
    return shown


def build_cad_script(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad" (builder side): execute the script and hand over what it built."""
    try:
        return hand_over(execute_script(source, options))
    except ResultProblem as problem:
        return {"problem": {"kind": problem.kind, "message": str(problem)}}


def _handover_code() -> dict[str, Any]:
    """The code the hand-over relies on, as raw (static) objects to compare by identity.

    Defence in depth only: a script that rewrites these without replacing them (a new
    `__code__`) is not caught here, and need not be, because the builder measures nothing.
    """
    watched: dict[str, Any] = {}
    for owner, names in (
        (cq.Shape, ("Solids", "moved", "wrapped", "cast")),
        (cq.Compound, ("makeCompound",)),
        (cq.Workplane, ("vals",)),
        (cq.Assembly, ("children", "loc", "obj")),
        (cq.Location, ("__mul__",)),
        (builtins, ("isinstance", "len", "type", "getattr", "str", "list", "tuple")),
    ):
        for name in names:
            try:
                watched[f"{getattr(owner, '__name__', owner)}.{name}"] = inspect.getattr_static(
                    owner, name
                )
            except AttributeError:
                continue
    for name in ("hand_over", "collect_parts", "_shapes_of", "encode_shape", "pack_bytes"):
        watched[f"guest.{name}"] = globals()[name]
    watched["harness._finish"] = harness._finish
    watched["protocol.encode"] = harness.encode
    return watched


def tampered_with() -> list[str]:
    """Names of hand-over code the program replaced (a crude attempt at forging it)."""
    return sorted(
        name
        for name, original in _handover_code().items()
        if HANDOVER_CODE.get(name) is not original
    )


def build_step_file(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad_step" (builder side): import STEP text and hand it over like a script's."""
    path = os.path.join(os.getcwd(), "reference.step")
    with open(path, "w") as handle:
        handle.write(source)
    return hand_over([(cq.importers.importStep(path), "reference")])


# Taken at import, in the warm worker, before any program runs.
HANDOVER_CODE: dict[str, Any] = _handover_code()


WARM_UP_SCRIPT = """
import cadquery as cq
base = cq.Workplane("XY").box(40, 30, 10).edges("|Z").fillet(2).faces(">Z").workplane()
base = base.rarray(20, 10, 2, 2).cboreHole(3, 6, 2).faces("<Z").chamfer(0.5)
ring = cq.Workplane("XZ").polyline([(5, 0), (10, 0), (10, 5), (5, 5)]).close().revolve(360)
disc = cq.Workplane().circle(20).extrude(3).faces(">Z").workplane().polarArray(12, 0, 360, 6)
disc = disc.hole(2)
loft = cq.Workplane().rect(10, 10).workplane(offset=10).circle(4).loft()
path = cq.Workplane("XZ").spline([(0, 0), (5, 5), (10, 5)])
pipe = cq.Workplane("XY").circle(1).sweep(path)
box = cq.Workplane().box(20, 20, 20).faces(">Z").shell(-1)
sk = cq.Workplane().placeSketch(cq.Sketch().rect(20, 10).vertices().fillet(2)).extrude(2)
assy = cq.Assembly().add(base, name="base").add(ring, name="ring", loc=cq.Location((0, 0, 20)))
show_object(assy)
show_object(disc.union(loft).union(pipe).union(box).union(sk))
"""


def warm_up() -> None:
    """Build and measure a representative script once, so forked runs inherit warm caches.

    OCCT and cadquery initialise a great deal lazily on first use; done here, in the worker,
    before it forks, a run pays only for its own modelling (the script is ours, not a candidate).
    """
    measure_cad(build_cad_script(WARM_UP_SCRIPT, {}), {})
