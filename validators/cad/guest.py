"""Inside the sandbox: run a CadQuery script, collect its parts, measure them and tessellate them.

Only the sandbox imports this module (the warm worker preloads it). The payload it returns is
plain data: per part the solid count, exact B-rep volume, validity, bounding box, holes and a
triangle mesh (float32 vertices, int32 triangles, base64) that the host checks independently.
"""

from __future__ import annotations

import math
import os
from array import array
from typing import Any

import cadquery as cq
from OCP.BRepAdaptor import BRepAdaptor_Surface
from OCP.BRepAlgoAPI import BRepAlgoAPI_Check

from validators.cad.program import compile_program
from validators.sandbox.protocol import pack_bytes


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


def _mesh(shape: cq.Shape, options: dict[str, Any]) -> dict[str, Any]:
    box = shape.BoundingBox()
    tolerance = options.get("mesh_tolerance") or max(1e-3, 1e-3 * box.DiagonalLength)
    vertices, triangles = shape.tessellate(tolerance, options.get("angular_tolerance", 0.2))
    flat = array("f", (c for v in vertices for c in (v.x, v.y, v.z)))
    tris = array("i", (i for t in triangles for i in t))
    return {"vertices": pack_bytes(flat.tobytes()), "triangles": pack_bytes(tris.tobytes())}


def _self_intersection_free(shape: cq.Shape) -> bool:
    check = BRepAlgoAPI_Check(shape.wrapped, True, True)
    return bool(check.IsValid())


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
    if not all(s.isValid() for s in solids):
        info["valid"], info["invalid_reason"] = False, "BRepCheck found an invalid solid"
    elif options.get("check_self_intersection", True) and not _self_intersection_free(compound):
        info["valid"], info["invalid_reason"] = False, "the solid intersects itself"
    box = compound.BoundingBox()
    info["bbox"] = [box.xmin, box.ymin, box.zmin, box.xmax, box.ymax, box.zmax]
    if not all(math.isfinite(v) for v in info["bbox"]):
        info["valid"], info["invalid_reason"] = False, "the bounding box is not finite"
        return info
    info["holes"] = len(set().union(*(_hole_axes(s) for s in solids)))
    info["mesh"] = _mesh(compound, options)
    return info


def describe(objects: list[tuple[Any, str | None]], options: dict[str, Any]) -> dict[str, Any]:
    """The payload for what a script showed."""
    kind, parts = collect_parts(objects)
    return {
        "kind": kind,
        "result_type": type(objects[0][0]).__name__,
        "parts": [describe_part(p, options) for p in parts],
    }


def run_cad_script(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad": execute the script (result = ... or show_object(...)) and describe it."""
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
    if not shown:
        if "result" not in namespace:
            return {"problem": {"kind": "no_result", "message": "the script neither assigns "
                                "`result` nor calls show_object(...)"}}
        shown = [(namespace["result"], None)]
    try:
        return describe(shown, options)
    except ResultProblem as problem:
        return {"problem": {"kind": problem.kind, "message": str(problem)}}


def load_step_file(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad_step": import STEP text (a trusted reference) and describe it like a script."""
    path = os.path.join(os.getcwd(), "reference.step")
    with open(path, "w") as handle:
        handle.write(source)
    shape = cq.importers.importStep(path)
    return describe([(shape, "reference")], options)
