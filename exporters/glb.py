"""The GLB container shared by the mesh and splat writers: one JSON chunk, one binary chunk.

CAD geometry is millimetres with +Z up; glTF is metres with +Y up. `to_gltf_axes` does that
conversion once, here, for every writer. Provenance goes into `asset.extras` and a
KHR_xmp_json_ld packet referenced from the asset.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from exporters.provenance import Provenance

GLB_MAGIC = 0x46546C67  # "glTF"
JSON_CHUNK = 0x4E4F534A
BIN_CHUNK = 0x004E4942
ARRAY_BUFFER = 34962
ELEMENT_ARRAY_BUFFER = 34963
COMPONENT_TYPES: dict[np.dtype, int] = {
    np.dtype(np.int8): 5120,
    np.dtype(np.uint8): 5121,
    np.dtype(np.int16): 5122,
    np.dtype(np.uint16): 5123,
    np.dtype(np.uint32): 5125,
    np.dtype(np.float32): 5126,
}
ACCESSOR_TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}
MM_TO_M = 0.001
# (x, y, z) in a Z-up frame -> (x, z, -y) in glTF's Y-up frame: a rotation, so normals follow.
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def to_gltf_axes(points_mm: np.ndarray) -> np.ndarray:
    """Millimetre Z-up points as metre Y-up float32 points."""
    return (np.asarray(points_mm, dtype=np.float64) @ Z_UP_TO_Y_UP.T * MM_TO_M).astype(np.float32)


def to_gltf_directions(directions: np.ndarray) -> np.ndarray:
    """Z-up directions (normals) as Y-up unit float32 directions."""
    turned = np.asarray(directions, dtype=np.float64) @ Z_UP_TO_Y_UP.T
    length = np.linalg.norm(turned, axis=1, keepdims=True)
    return (turned / np.where(length > 0, length, 1.0)).astype(np.float32)


class BufferBuilder:
    """Collects binary data, buffer views and accessors for one GLB."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.buffer_views: list[dict[str, Any]] = []
        self.accessors: list[dict[str, Any]] = []

    def view(self, payload: bytes, target: int | None = None, stride: int | None = None) -> int:
        """Append bytes as a buffer view (4-byte aligned); return its index."""
        self.data.extend(b"\0" * (-len(self.data) % 4))
        view: dict[str, Any] = {"buffer": 0, "byteOffset": len(self.data)}
        view["byteLength"] = len(payload)
        if target is not None:
            view["target"] = target
        if stride is not None:
            view["byteStride"] = stride
        self.data.extend(payload)
        self.buffer_views.append(view)
        return len(self.buffer_views) - 1

    def accessor(
        self,
        array: np.ndarray,
        target: int | None = ARRAY_BUFFER,
        normalized: bool = False,
        bounds: bool = True,
    ) -> int:
        """Append an array (n, k) or (n,) as its own buffer view and accessor; return its index."""
        array = np.ascontiguousarray(array)
        width = 1 if array.ndim == 1 else array.shape[1]
        stride = None
        # Vertex attributes must keep each element 4-byte aligned (e.g. VEC3 of int16).
        element = array.dtype.itemsize * width
        if target == ARRAY_BUFFER and element % 4:
            padded = np.zeros((len(array), (element + 3) // 4 * 4), dtype=np.uint8)
            padded[:, :element] = array.view(np.uint8).reshape(len(array), element)
            payload, stride = padded.tobytes(), padded.shape[1]
        else:
            payload = array.tobytes()
        accessor: dict[str, Any] = {
            "bufferView": self.view(payload, target, stride),
            "componentType": COMPONENT_TYPES[array.dtype],
            "count": len(array),
            "type": ACCESSOR_TYPES[width],
        }
        if normalized:
            accessor["normalized"] = True
        if bounds and len(array):
            flat = array.reshape(len(array), width)
            low, high = flat.min(axis=0), flat.max(axis=0)
            cast = float if array.dtype.kind == "f" else int
            accessor["min"] = [cast(v) for v in low]
            accessor["max"] = [cast(v) for v in high]
        self.accessors.append(accessor)
        return len(self.accessors) - 1


def asset_block(provenance: Provenance | None, generator: str) -> tuple[dict[str, Any], list]:
    """The glTF `asset` object and the root XMP packets for a provenance (or none)."""
    asset: dict[str, Any] = {"version": "2.0", "generator": generator}
    if provenance is None:
        return asset, []
    asset["copyright"] = f"{provenance.creator_tool}; provenance {provenance.manifest_name}"
    asset["extras"] = {"provenance": provenance.summary()}
    asset["extensions"] = {"KHR_xmp_json_ld": {"packet": 0}}
    return asset, [provenance.xmp_packet()]


def document(
    builder: BufferBuilder,
    provenance: Provenance | None,
    generator: str,
    extensions_used: list[str] | None = None,
) -> dict[str, Any]:
    """A glTF document skeleton holding the builder's buffer, views and accessors."""
    asset, packets = asset_block(provenance, generator)
    doc: dict[str, Any] = {"asset": asset}
    used = list(extensions_used or [])
    if packets:
        used.append("KHR_xmp_json_ld")
        doc["extensions"] = {"KHR_xmp_json_ld": {"packets": packets}}
    if used:
        doc["extensionsUsed"] = sorted(set(used))
    doc["buffers"] = [{"byteLength": len(builder.data) + (-len(builder.data) % 4)}]
    doc["bufferViews"] = builder.buffer_views
    doc["accessors"] = builder.accessors
    return doc


def pack_glb(doc: dict[str, Any], binary: bytes) -> bytes:
    """Serialise a glTF document and its binary buffer as GLB bytes (deterministic)."""
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 4)
    binary = bytes(binary) + b"\0" * (-len(binary) % 4)
    chunks = struct.pack("<II", len(text), JSON_CHUNK) + text
    if binary:
        chunks += struct.pack("<II", len(binary), BIN_CHUNK) + binary
    return struct.pack("<III", GLB_MAGIC, 2, 12 + len(chunks)) + chunks


def read_glb(data: bytes) -> tuple[dict[str, Any], bytes]:
    """Split GLB bytes into the JSON document and the binary chunk; ValueError if malformed."""
    if len(data) < 20:
        raise ValueError("too short for a GLB file")
    magic, version, length = struct.unpack_from("<III", data, 0)
    if magic != GLB_MAGIC or version != 2 or length != len(data):
        raise ValueError("not a GLB 2.0 file (bad magic, version or length)")
    json_length, kind = struct.unpack_from("<II", data, 12)
    if kind != JSON_CHUNK:
        raise ValueError("the first GLB chunk is not JSON")
    doc = json.loads(data[20 : 20 + json_length])
    binary = b""
    offset = 20 + json_length
    if offset < len(data):
        bin_length, kind = struct.unpack_from("<II", data, offset)
        if kind != BIN_CHUNK:
            raise ValueError("the second GLB chunk is not binary")
        binary = data[offset + 8 : offset + 8 + bin_length]
    return doc, binary


def accessor_array(doc: dict[str, Any], binary: bytes, index: int) -> np.ndarray:
    """Read an accessor back (tests and readers of our own files)."""
    accessor = doc["accessors"][index]
    view = doc["bufferViews"][accessor["bufferView"]]
    dtype = next(d for d, code in COMPONENT_TYPES.items() if code == accessor["componentType"])
    width = {v: k for k, v in ACCESSOR_TYPES.items()}[accessor["type"]]
    element = dtype.itemsize * width
    stride = view.get("byteStride", element)
    start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
    raw = np.frombuffer(binary, dtype=np.uint8, count=stride * accessor["count"], offset=start)
    rows = raw.reshape(accessor["count"], stride)[:, :element].copy()
    values = rows.view(dtype).reshape(accessor["count"], width)
    return values[:, 0] if width == 1 else values
