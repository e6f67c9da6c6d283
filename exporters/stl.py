"""Binary STL: every part's triangles in millimetres (STL has no units; slicers assume mm).

The 80-byte header names the export's provenance id and manifest; it never starts with
"solid", which some readers take for the ASCII format.
"""

from __future__ import annotations

import numpy as np

from exporters.parts import PartMesh
from exporters.provenance import Provenance

RECORD = np.dtype(
    [("normal", "<f4", 3), ("v0", "<f4", 3), ("v1", "<f4", 3), ("v2", "<f4", 3), ("attr", "<u2")]
)


def stl_header(provenance: Provenance | None) -> bytes:
    """The 80-byte header: provenance id and manifest name when known."""
    text = "genservice binary STL, mm"
    if provenance is not None:
        text = f"genservice {provenance.id} mm; manifest {provenance.manifest_name}"
    return text.encode("ascii", "replace")[:80].ljust(80, b" ")


def stl_bytes(parts: list[PartMesh], provenance: Provenance | None = None) -> bytes:
    """All parts as one binary STL."""
    chunks = []
    for part in parts:
        corners = part.vertices[part.triangles].astype(np.float32)  # (m, 3, 3)
        normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        length = np.linalg.norm(normal, axis=1, keepdims=True)
        records = np.zeros(len(corners), dtype=RECORD)
        records["normal"] = np.where(length > 0, normal / np.where(length > 0, length, 1), 0)
        records["v0"], records["v1"], records["v2"] = corners[:, 0], corners[:, 1], corners[:, 2]
        chunks.append(records)
    records = np.concatenate(chunks) if chunks else np.zeros(0, dtype=RECORD)
    return stl_header(provenance) + np.uint32(len(records)).tobytes() + records.tobytes()
