"""Inside the sandbox: run a CadQuery script, collect its parts, measure them and tessellate them.

Only the sandbox imports this module (the warm worker preloads it). The payload it returns is
plain data: per part the solid count, exact B-rep volume, validity, bounding box, holes and a
triangle mesh (float32 vertices, int32 triangles, base64) that the host checks independently.
"""

from __future__ import annotations

import builtins
import inspect
import math
import os
from array import array
from typing import Any

import cadquery as cq
from OCP.BRep import BRep_Tool
from OCP.BRepAdaptor import BRepAdaptor_Surface
from OCP.BRepAlgoAPI import BRepAlgoAPI_Check
from OCP.BRepLib import BRepLib_ToolTriangulatedShape
from OCP.BRepMesh import BRepMesh_IncrementalMesh
from OCP.OSD import OSD_ThreadPool
from OCP.TopAbs import TopAbs_REVERSED
from OCP.TopLoc import TopLoc_Location

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


def _assembly_parts(assy: cq.Assembly, parent: cq.Location, out: list[dict[str, Any]]) -> None:
    location = parent * assy.loc
    if assy.obj is not None:
        shapes = [s.moved(location) for s in _shapes_of(assy.obj)]
        color = list(assy.color.toTuple()) if assy.color is not None else None
        out.append({"name": assy.name, "shapes": shapes, "color": color})
    for child in assy.children:
        _assembly_parts(child, location, out)


def collect_parts(objects: list[tuple[Any, str | None]]) -> tuple[str, list[dict[str, Any]]]:
    """Turn what the script showed into named parts; the kind is "part" or "assembly"."""
    parts: list[dict[str, Any]] = []
    kind = "part" if len(objects) == 1 else "assembly"
    for index, (obj, name) in enumerate(objects):
        if isinstance(obj, cq.Assembly):
            kind = "assembly"
            _assembly_parts(obj, cq.Location(), parts)
        elif isinstance(obj, list | tuple):
            kind = "assembly"
            for j, item in enumerate(obj):
                parts.append({"name": f"{name or 'part'}_{j}", "shapes": _shapes_of(item)})
        else:
            parts.append({"name": name or f"part_{index}", "shapes": _shapes_of(obj)})
    return kind, parts


def _hole_axes(shape: cq.Shape) -> set[tuple[float, ...]]:
    """Axes of concave cylindrical faces (holes, counterbores count once per axis)."""
    axes: set[tuple[float, ...]] = set()
    for face in shape.Faces():
        if face.geomType() != "CYLINDER":
            continue
        cylinder = BRepAdaptor_Surface(face.wrapped).Cylinder()
        axis = cylinder.Axis()
        origin = cq.Vector(axis.Location())
        direction = cq.Vector(axis.Direction()).normalized()
        umin, umax, vmin, vmax = face._uvBounds()
        normal, point = face.normalAt((umin + umax) / 2, (vmin + vmax) / 2)
        radial = (point - origin) - direction * (point - origin).dot(direction)
        if normal.dot(radial) >= 0:
            continue  # convex: a boss or an outer wall, not a hole
        if [round(c, 6) for c in direction.toTuple()] < [0.0, 0.0, 0.0]:
            direction = -direction  # one sign per axis, so both ends of a hole agree
        foot = origin - direction * origin.dot(direction)
        axes.add(tuple(round(v, 2) for v in (*direction.toTuple(), *foot.toTuple())))
    return axes


def _mesh(shape: cq.Shape, box: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Triangles of every face, in model coordinates, wound outward (with surface normals
    per vertex when options["normals"] is set, as exporters want for smooth shading)."""
    tolerance = options.get("mesh_tolerance") or max(1e-3, 1e-3 * box.DiagonalLength)
    # Serial meshing, for the same reason as the one-thread pool above.
    angular = options.get("angular_tolerance", 0.2)
    BRepMesh_IncrementalMesh(shape.wrapped, tolerance, False, angular, False)
    coords, indices, normals = array("f"), array("i"), array("f")
    with_normals = bool(options.get("normals"))
    offset = 0
    for face in shape.Faces():
        location = TopLoc_Location()
        triangulation = BRep_Tool.Triangulation_s(face.wrapped, location)
        if triangulation is None:
            continue
        count = triangulation.NbNodes()
        node = triangulation.Node
        if location.IsIdentity():
            for i in range(1, count + 1):
                coords.extend(node(i).Coord())
        else:
            transform = location.Transformation()
            for i in range(1, count + 1):
                coords.extend(node(i).Transformed(transform).Coord())
        reverse = face.wrapped.Orientation() == TopAbs_REVERSED
        if with_normals:
            normals.extend(_face_normals(face, triangulation, location, reverse))
        triangle = triangulation.Triangle
        for i in range(1, triangulation.NbTriangles() + 1):
            a, b, c = triangle(i).Get()
            if reverse:
                b, c = c, b
            indices.extend((a - 1 + offset, b - 1 + offset, c - 1 + offset))
        offset += count
    mesh = {"vertices": pack_bytes(coords.tobytes()), "triangles": pack_bytes(indices.tobytes())}
    if with_normals:
        mesh["normals"] = pack_bytes(normals.tobytes())
    return mesh


def _face_normals(face: cq.Face, triangulation: Any, location: Any, reverse: bool) -> array:
    """Unit surface normals at a face's triangulation nodes, pointing out of the solid."""
    if not triangulation.HasNormals():
        BRepLib_ToolTriangulatedShape.ComputeNormals_s(face.wrapped, triangulation)
    transform = None if location.IsIdentity() else location.Transformation()
    sign = -1.0 if reverse else 1.0
    out = array("f")
    for i in range(1, triangulation.NbNodes() + 1):
        normal = triangulation.Normal(i)
        if transform is not None:
            normal = normal.Transformed(transform)
        out.extend((sign * normal.X(), sign * normal.Y(), sign * normal.Z()))
    return out


def invalid_reason(solids: list[cq.Solid], compound: cq.Shape, self_check: bool) -> str | None:
    """Why the solids are not a sound B-rep (BRepCheck, then self-intersection), or None."""
    # BRepAlgoAPI_Check runs BRepCheck_Analyzer itself before its self-interference test,
    # so a passing shape is checked once; the cheaper check below only names the failure.
    if self_check and BRepAlgoAPI_Check(compound.wrapped, True, True).IsValid():
        return None
    if not all(s.isValid() for s in solids):
        return "BRepCheck found an invalid solid"
    return "the solid intersects itself" if self_check else None


def describe_part(part: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Measure one part: counts, exact volume, validity, bounding box, holes and its mesh."""
    shapes: list[cq.Shape] = part["shapes"]
    solids = [solid for shape in shapes for solid in shape.Solids()]
    info: dict[str, Any] = {
        "name": part["name"],
        "color": part.get("color"),
        "solids": len(solids),
        "faces": sum(len(s.Faces()) for s in shapes),
        "volume_mm3": sum(s.Volume() for s in solids),
        "valid": True,
        "invalid_reason": None,
        "holes": 0,
        "bbox": None,
        "mesh": None,
    }
    if not shapes or not solids:
        return info
    compound = cq.Compound.makeCompound(solids)
    reason = invalid_reason(solids, compound, options.get("check_self_intersection", True))
    if reason:
        info["valid"], info["invalid_reason"] = False, reason
    box = compound.BoundingBox()
    info["bbox"] = [box.xmin, box.ymin, box.zmin, box.xmax, box.ymax, box.zmax]
    if not all(math.isfinite(v) for v in info["bbox"]):
        info["valid"], info["invalid_reason"] = False, "the bounding box is not finite"
        return info
    info["holes"] = len(set().union(*(_hole_axes(s) for s in solids)))
    info["mesh"] = _mesh(compound, box, options)
    return info


def describe(objects: list[tuple[Any, str | None]], options: dict[str, Any]) -> dict[str, Any]:
    """The payload for what a script showed."""
    kind, parts = collect_parts(objects)
    return {
        "kind": kind,
        "result_type": type(objects[0][0]).__name__,
        "parts": [describe_part(p, options) for p in parts],
    }


def execute_script(source: str, options: dict[str, Any]) -> list[tuple[Any, str | None]]:
    """Run a script (result = ... or show_object(...)); what it showed, with the names given.

    Raises ResultProblem when there is nothing to describe or the script replaced the code
    that measures it.
    """
    shown: list[tuple[Any, str | None]] = []

    def show_object(obj: Any, name: str | None = None, options: Any = None, **_: Any) -> None:
        shown.append((obj, name))

    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "show_object": show_object,
        "debug": lambda *args, **kwargs: None,
        "log": print,
    }
    exec(compile_program(source, options.get("parameters") or {}), namespace)
    tampered = tampered_with()
    if tampered:
        raise ResultProblem(
            "tamper", "the script replaced what measures it: " + ", ".join(tampered[:5])
        )
    if not shown:
        if "result" not in namespace:
            raise ResultProblem(
                "no_result", "the script neither assigns `result` nor calls show_object(...)"
            )
        shown = [(namespace["result"], None)]
    return shown


def run_cad_script(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad": execute the script and describe what it built."""
    try:
        return describe(execute_script(source, options), options)
    except ResultProblem as problem:
        return {"problem": {"kind": problem.kind, "message": str(problem)}}


def _measuring_code() -> dict[str, Any]:
    """Everything the measurement relies on, as raw (static) objects to compare by identity."""
    watched: dict[str, Any] = {}
    for owner, names in (
        (
            cq.Shape,
            (
                "Volume",
                "isValid",
                "BoundingBox",
                "Solids",
                "Faces",
                "moved",
                "geomType",
                "_uvBounds",
                "normalAt",
                "wrapped",
                "cast",
            ),
        ),
        (cq.Compound, ("makeCompound",)),
        (cq.Workplane, ("vals",)),
        (cq.Assembly, ("traverse", "children", "loc", "obj")),
        (cq.Location, ("__mul__",)),
        (cq.Vector, ("dot", "normalized", "toTuple", "__sub__", "__mul__")),
        (BRepAlgoAPI_Check, ("IsValid", "__init__")),
        (BRep_Tool, ("Triangulation_s",)),
        (BRepMesh_IncrementalMesh, ("__init__",)),
        (BRepAdaptor_Surface, ("Cylinder", "__init__")),
        (
            builtins,
            (
                "isinstance",
                "len",
                "sum",
                "float",
                "int",
                "all",
                "any",
                "type",
                "getattr",
                "hasattr",
                "round",
                "set",
                "list",
                "tuple",
                "min",
                "max",
                "abs",
                "range",
            ),
        ),
    ):
        for name in names:
            try:
                watched[f"{getattr(owner, '__name__', owner)}.{name}"] = inspect.getattr_static(
                    owner, name
                )
            except AttributeError:
                continue
    for name in (
        "describe",
        "describe_part",
        "collect_parts",
        "invalid_reason",
        "_mesh",
        "_face_normals",
        "_hole_axes",
        "_shapes_of",
        "pack_bytes",
        "array",
    ):
        watched[f"guest.{name}"] = globals()[name]
    watched["harness._finish"] = harness._finish
    watched["protocol.encode"] = harness.encode
    return watched


def tampered_with() -> list[str]:
    """Names of measuring code the program replaced (monkeypatching to forge its own facts)."""
    return sorted(
        name
        for name, original in _measuring_code().items()
        if MEASURING_CODE.get(name) is not original
    )


def load_step_file(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad_step": import STEP text (a trusted reference) and describe it like a script."""
    path = os.path.join(os.getcwd(), "reference.step")
    with open(path, "w") as handle:
        handle.write(source)
    shape = cq.importers.importStep(path)
    return describe([(shape, "reference")], options)


# Taken at import, in the warm worker, before any program runs.
MEASURING_CODE: dict[str, Any] = _measuring_code()


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
    """Run a representative script once, so that forked runs inherit warm caches.

    OCCT and cadquery initialise a great deal lazily on first use; done here, in the worker,
    before it forks, a run pays only for its own modelling.
    """
    run_cad_script(WARM_UP_SCRIPT, {})
