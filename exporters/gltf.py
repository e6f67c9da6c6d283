"""Parts as a binary glTF (GLB): metres, +Y up, unit normals, one named node per part.

Layout: one scene with a root node named after the model whose children are the parts, each
with its own mesh and (when the script coloured it) its own PBR material. Provenance goes in
`asset.extras` and a KHR_xmp_json_ld packet (see exporters/glb.py).

Compression options, measured in bench/export.py:
- "quantize": KHR_mesh_quantization, 16-bit positions and normals (the node's transform
  restores the scale); readable by every current viewer, about a third smaller.
- "draco": KHR_draco_mesh_compression through Google's Draco (DracoPy); much smaller, needs a
  Draco decoder in the viewer (three.js and Blender have one).
"""

from __future__ import annotations

from typing import Any

import DracoPy
import numpy as np

from exporters.formats import GLB_COMPRESSIONS
from exporters.glb import (
    ELEMENT_ARRAY_BUFFER,
    BufferBuilder,
    document,
    pack_glb,
    to_gltf_axes,
    to_gltf_directions,
)
from exporters.parts import PartMesh
from exporters.provenance import Provenance

DEFAULT_GREY = (0.8, 0.8, 0.8, 1.0)
SHORT_MAX = 32767
DRACO_POSITION_BITS = 16
DRACO_NORMAL_BITS = 10
# Draco's attribute types, to map its unique ids to glTF semantics.
DRACO_POSITION, DRACO_NORMAL = 0, 1


def vertex_normals(part: PartMesh) -> np.ndarray:
    """Unit normals per vertex: the B-rep's where given, else area-weighted from triangles."""
    vertices = part.vertices.astype(np.float64)
    normals = np.zeros_like(vertices)
    if part.normals is not None:
        normals = part.normals.astype(np.float64)
    length = np.linalg.norm(normals, axis=1)
    missing = length < 1e-6
    if missing.any():
        a, b, c = (vertices[part.triangles[:, i]] for i in range(3))
        face_normals = np.cross(b - a, c - a)  # length = 2 x area: larger faces weigh more
        summed = np.zeros_like(vertices)
        for i in range(3):
            np.add.at(summed, part.triangles[:, i], face_normals)
        normals[missing] = summed[missing]
        length = np.linalg.norm(normals, axis=1)
    normals[length < 1e-12] = (0.0, 0.0, 1.0)  # an isolated point: any unit vector will do
    return normals / np.linalg.norm(normals, axis=1, keepdims=True)


def _indices(triangles: np.ndarray, count: int) -> np.ndarray:
    keep = (
        (triangles[:, 0] != triangles[:, 1])
        & (triangles[:, 1] != triangles[:, 2])
        & (triangles[:, 0] != triangles[:, 2])
    )
    flat = triangles[keep].reshape(-1)
    return flat.astype(np.uint16 if count < 65536 else np.uint32)


def _material(color: tuple[float, float, float, float] | None, name: str) -> dict[str, Any]:
    rgba = color or DEFAULT_GREY
    material: dict[str, Any] = {
        "name": name,
        "pbrMetallicRoughness": {
            "baseColorFactor": [round(float(v), 6) for v in rgba],
            "metallicFactor": 0.0,
            "roughnessFactor": 0.6,
        },
    }
    if rgba[3] < 1.0:
        material["alphaMode"] = "BLEND"
    return material


def _plain_primitive(builder: BufferBuilder, points: np.ndarray, normals: np.ndarray) -> dict:
    return {
        "attributes": {
            "POSITION": builder.accessor(points),
            "NORMAL": builder.accessor(normals, bounds=False),
        }
    }


def _quantized_primitive(
    builder: BufferBuilder, points: np.ndarray, normals: np.ndarray, node: dict[str, Any]
) -> dict:
    # One uniform scale per part keeps normals correct under the node transform.
    low, high = points.min(axis=0).astype(np.float64), points.max(axis=0).astype(np.float64)
    center = (low + high) / 2
    half = max(float((high - low).max()) / 2, 1e-9)
    quantized = np.round((points - center) / half * SHORT_MAX).astype(np.int16)
    node["translation"] = [float(v) for v in center]
    node["scale"] = [half / SHORT_MAX] * 3
    shorts = np.round(normals * SHORT_MAX).astype(np.int16)
    return {
        "attributes": {
            "POSITION": builder.accessor(quantized),
            "NORMAL": builder.accessor(shorts, normalized=True, bounds=False),
        }
    }


def _draco_primitive(
    builder: BufferBuilder, points: np.ndarray, normals: np.ndarray, triangles: np.ndarray
) -> dict:
    encoded = DracoPy.encode(
        points,
        triangles.astype(np.uint32),
        quantization_bits=DRACO_POSITION_BITS,
        compression_level=7,
        normals=normals.astype(np.float64),
        normal_quantization_bits=DRACO_NORMAL_BITS,
    )
    # Draco reorders and deduplicates: accessors describe the decoded mesh, so decode once.
    decoded = DracoPy.decode(encoded)
    ids = {a["attribute_type"]: a["unique_id"] for a in decoded.attributes}
    decoded_points = np.asarray(decoded.points, dtype=np.float32)
    accessors = builder.accessors
    position = {
        "componentType": 5126,
        "count": len(decoded_points),
        "type": "VEC3",
        "min": [float(v) for v in decoded_points.min(axis=0)],
        "max": [float(v) for v in decoded_points.max(axis=0)],
    }
    normal = {"componentType": 5126, "count": len(decoded_points), "type": "VEC3"}
    index_type = 5123 if len(decoded_points) < 65536 else 5125
    indices = {
        "componentType": index_type,
        "count": int(np.asarray(decoded.faces).size),
        "type": "SCALAR",
    }
    accessors.extend([position, normal, indices])
    first = len(accessors) - 3
    return {
        "attributes": {"POSITION": first, "NORMAL": first + 1},
        "indices": first + 2,
        "extensions": {
            "KHR_draco_mesh_compression": {
                "bufferView": builder.view(encoded),
                "attributes": {"POSITION": ids[DRACO_POSITION], "NORMAL": ids[DRACO_NORMAL]},
            }
        },
    }


def glb_bytes(
    parts: list[PartMesh],
    name: str = "model",
    provenance: Provenance | None = None,
    compression: str = "none",
) -> bytes:
    """The parts as GLB bytes (deterministic for the same input)."""
    if compression not in GLB_COMPRESSIONS:
        raise ValueError(f"GLB compression must be one of {GLB_COMPRESSIONS}, not {compression!r}")
    builder = BufferBuilder()
    meshes: list[dict[str, Any]] = []
    materials: list[dict[str, Any]] = []
    children: list[int] = []
    nodes: list[dict[str, Any]] = [{"name": name, "children": children}]
    for part in parts:
        points = to_gltf_axes(part.vertices)
        normals = to_gltf_directions(vertex_normals(part))
        node: dict[str, Any] = {"name": part.name, "mesh": len(meshes)}
        if compression == "draco":
            primitive = _draco_primitive(builder, points, normals, part.triangles)
        else:
            if compression == "quantize":
                primitive = _quantized_primitive(builder, points, normals, node)
            else:
                primitive = _plain_primitive(builder, points, normals)
            indices = _indices(part.triangles, len(points))
            primitive["indices"] = builder.accessor(indices, ELEMENT_ARRAY_BUFFER, bounds=False)
        primitive["material"] = len(materials)
        primitive["mode"] = 4  # triangles
        materials.append(_material(part.color, part.name))
        meshes.append({"name": part.name, "primitives": [primitive]})
        children.append(len(nodes))
        nodes.append(node)
    used = {"none": [], "quantize": ["KHR_mesh_quantization"]}.get(
        compression, ["KHR_draco_mesh_compression"]
    )
    doc = document(builder, provenance, _generator(provenance), used)
    if used:
        doc["extensionsRequired"] = list(used)
    doc.update(
        {"scene": 0, "scenes": [{"name": name, "nodes": [0]}], "nodes": nodes, "meshes": meshes}
    )
    doc["materials"] = materials
    return pack_glb(doc, bytes(builder.data))


def _generator(provenance: Provenance | None) -> str:
    return provenance.creator_tool if provenance else "genservice"
