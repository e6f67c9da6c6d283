"""The measuring side of a CAD run: read the handed-over B-rep and compute every fact from it.

This module runs in the sandbox's *measurer*: a process forked from the clean warm worker, which
never executed a candidate's code and shares no mutable state with the process that did (the
*builder*, validators/cad/guest.py). Its only input is the hand-over, which the builder wrote and
is therefore untrusted: B-rep bytes (OCCT's native binary BRep format) and plain data beside
them. Everything is checked before it is believed; a hand-over that is oversized, truncated,
malformed or says something its bytes do not (part sizes, digests, kinds) is a `handover`
problem, never a crash or a pass. Validation and export both read these same bytes, so what is
measured is what is delivered.
"""

from __future__ import annotations

import hashlib
import io
import math
import time
from array import array
from collections.abc import Sequence
from typing import Any

import cadquery as cq
from OCP.BinTools import BinTools
from OCP.BRep import BRep_Tool
from OCP.BRepAdaptor import BRepAdaptor_Surface
from OCP.BRepAlgoAPI import BRepAlgoAPI_Check
from OCP.BRepLib import BRepLib_ToolTriangulatedShape
from OCP.BRepMesh import BRepMesh_IncrementalMesh
from OCP.OSD import OSD_ThreadPool
from OCP.TopAbs import TopAbs_REVERSED
from OCP.TopLoc import TopLoc_Location
from OCP.TopoDS import TopoDS_Shape

from validators.sandbox.protocol import ProtocolError, pack_bytes, unpack_bytes

# OCCT's shared thread pool must not start in the warm worker: a forked child would wait forever
# on threads that fork did not copy. One thread (the caller's) keeps every operation in-line.
OSD_ThreadPool.DefaultPool_s(1)

HANDOVER_FORMAT = "occt-bin-brep/1"
MAX_PARTS = 2000
MAX_NAME_CHARS = 200
MAX_DEPTH = 32  # assemblies within assemblies
DEFAULT_HANDOVER_MB = 64


class HandoverError(Exception):
    """The hand-over cannot be believed: the message says what is wrong with it."""


def encode_shape(shape: cq.Shape) -> bytes:
    """One shape as OCCT binary BRep bytes (exact: doubles are written bit for bit)."""
    buffer = io.BytesIO()
    BinTools.Write_s(shape.wrapped, buffer)
    return buffer.getvalue()


def decode_shape(data: bytes) -> cq.Shape:
    """A shape from OCCT binary BRep bytes; HandoverError when they do not parse to one."""
    shape = TopoDS_Shape()
    try:
        BinTools.Read_s(shape, io.BytesIO(data))
    except Exception as exc:  # OCCT raises Standard_Failure subclasses on garbage
        raise HandoverError(f"the B-rep bytes do not parse: {type(exc).__name__}: {exc}") from exc
    if shape.IsNull():
        raise HandoverError("the B-rep bytes hold no shape")
    return cq.Shape.cast(shape)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME_CHARS


def _is_color(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 4
        and all(
            isinstance(c, int | float) and not isinstance(c, bool) and 0 <= c <= 1 for c in value
        )
    )


def read_handover(handover: Any, max_bytes: int) -> tuple[str, list[dict[str, Any]], bytes]:
    """Check and parse a hand-over: its kind, its parts (name, colour, shape) and its bytes.

    Raises HandoverError for anything that is not exactly what the plain data says.
    """
    if not isinstance(handover, dict) or handover.get("format") != HANDOVER_FORMAT:
        raise HandoverError(f"the hand-over is not in the {HANDOVER_FORMAT} format")
    kind, declared = handover.get("kind"), handover.get("parts")
    if kind not in ("part", "assembly"):
        raise HandoverError(f"the hand-over's kind must be 'part' or 'assembly', not {kind!r}")
    if not isinstance(declared, list) or not 1 <= len(declared) <= MAX_PARTS:
        raise HandoverError(f"the hand-over must list 1 to {MAX_PARTS} parts")
    if kind == "part" and len(declared) != 1:
        raise HandoverError(f"the hand-over says 'part' but lists {len(declared)} parts")
    if handover.get("root") is not None and not _is_name(handover["root"]):
        raise HandoverError("the hand-over's root assembly name is not a name")
    packed = handover.get("brep")
    if not isinstance(packed, str) or len(packed) > (max_bytes * 4) // 3 + 4:
        raise HandoverError(f"the B-rep is missing or larger than {max_bytes >> 20} MB")
    try:
        data = unpack_bytes(packed)
    except (ProtocolError, ValueError) as exc:
        raise HandoverError(f"the B-rep bytes are not valid base64: {exc}") from exc
    sizes = [p.get("bytes") if isinstance(p, dict) else None for p in declared]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes):
        raise HandoverError("every part must state its positive size in bytes")
    if sum(sizes) != len(data):  # type: ignore[arg-type]
        raise HandoverError(
            f"the parts state {sum(sizes)} bytes in all but the B-rep has {len(data)}"  # type: ignore[arg-type]
        )
    parts: list[dict[str, Any]] = []
    offset = 0
    for index, entry in enumerate(declared):
        name, color, size = entry.get("name"), entry.get("color"), int(entry["bytes"])
        if not _is_name(name):
            raise HandoverError(f"part {index} has no usable name")
        if color is not None and not _is_color(color):
            raise HandoverError(f"part {name!r} has a colour that is not four numbers in [0, 1]")
        path = entry.get("path", [])
        if not (
            isinstance(path, list) and len(path) <= MAX_DEPTH and all(_is_name(n) for n in path)
        ):
            raise HandoverError(f"part {name!r} has an assembly path that is not a list of names")
        chunk = data[offset : offset + size]
        offset += size
        if hashlib.sha256(chunk).hexdigest() != entry.get("sha256"):
            raise HandoverError(f"part {name!r}: its bytes do not match the digest it states")
        shape = decode_shape(chunk)
        if shape.ShapeType() != "Compound":
            raise HandoverError(f"part {name!r} is a {shape.ShapeType()}, not a compound")
        parts.append({"name": name, "color": color, "path": path, "shapes": [shape]})
    return kind, parts, data


# A bore counts as a hole when its wall goes at least this far round: a whole drilled hole, a
# keyed or D-shaped bore, a clip's seat. Less is a rounded corner, a fillet, a slot's end, a grip
# notch or what is left of holes drilled into one another, none of which is a hole a person asked
# for (and all of which a program could otherwise scatter to forge a count).
HOLE_MIN_SWEEP = 4 * math.pi / 3


def find_holes(solids: Sequence[cq.Shape]) -> list[list[float]]:
    """Round holes in the solids, each as the sorted diameters of its bores: concave cylindrical
    walls on one axis (a counterbore is [6.0, 10.0], a wall split in two counts once) that go
    at least HOLE_MIN_SWEEP round; parallel bores that cut into one another (their circles cross)
    are one opening."""
    sweeps: dict[tuple[tuple[float, ...], float], float] = {}
    for solid in solids:
        for axis, radius, sweep in _concave_cylinders(solid):
            key = (axis, radius)
            sweeps[key] = sweeps.get(key, 0.0) + sweep
    bores: dict[tuple[float, ...], list[float]] = {}  # axis -> the radii that are holes
    for (axis, radius), sweep in sweeps.items():
        if sweep >= HOLE_MIN_SWEEP - 1e-6:
            bores.setdefault(axis, []).append(radius)
    axes = list(bores)
    group = list(range(len(axes)))

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for i, a in enumerate(axes):
        for j in range(i):
            b = axes[j]
            ra, rb, apart = max(bores[a]), max(bores[b]), math.dist(a[3:], b[3:])
            # Cut into one another: their circles cross. One inside the other (holes in the
            # floor of a cup or a pocket) are holes of their own.
            if a[:3] == b[:3] and abs(ra - rb) + 1e-3 < apart < ra + rb - 1e-3:
                group[root(i)] = root(j)
    openings: dict[int, set[float]] = {}
    for i, axis in enumerate(axes):
        openings.setdefault(root(i), set()).update(round(2 * r, 3) for r in bores[axis])
    return [sorted(diameters) for diameters in openings.values()]


def _concave_cylinders(shape: cq.Shape) -> list[tuple[tuple[float, ...], float, float]]:
    """(axis line, radius, angle swept) of each concave cylindrical face: a hole's wall, not a
    boss or an outer wall. The axis is its direction (one sign, so both ends of a hole agree)
    and the point where it crosses the plane through the origin square to it."""
    found = []
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
            direction = -direction
        foot = origin - direction * origin.dot(direction)
        line = tuple(round(v, 2) for v in (*direction.toTuple(), *foot.toTuple()))
        found.append((line, round(cylinder.Radius(), 3), min(umax - umin, 2 * math.pi)))
    return found


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
        "hole_diameters": [],
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
    holes = find_holes(solids)
    info["holes"], info["hole_diameters"] = len(holes), holes
    info["mesh"] = _mesh(compound, box, options)
    return info


def measure(handover: Any, options: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read a hand-over and describe it: the payload, and the parsed parts (for exporters).

    Raises HandoverError when the hand-over cannot be believed.
    """
    max_bytes = int(options.get("handover_mb") or DEFAULT_HANDOVER_MB) << 20
    started = time.perf_counter()
    kind, parts, data = read_handover(handover, max_bytes)
    read_ms = (time.perf_counter() - started) * 1000
    payload = {
        "kind": kind,
        "root": handover.get("root"),
        "result_type": str(handover.get("result_type", ""))[:100],
        "parts": [describe_part(part, options) for part in parts],
        "handover": {
            "format": HANDOVER_FORMAT,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "read_ms": round(read_ms, 3),
            "parts": len(parts),
        },
    }
    return payload, parts


def measure_cad(handover: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Measurer "cad": every fact of a CAD run, from its hand-over alone."""
    try:
        return measure(handover, options)[0]
    except HandoverError as exc:
        return {"problem": {"kind": "handover", "message": f"bad hand-over: {exc}"}}
    except Exception as exc:  # OCCT refused a shape that parsed: it cannot be judged sound
        message = f"the shape could not be measured: {type(exc).__name__}: {exc}"[:2000]
        return {"problem": {"kind": "measure", "message": message}}
