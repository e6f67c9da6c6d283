"""Gaussian splats made straight from CAD surfaces, written as 3DGS PLY, Niantic SPZ or splat GLB.

No training: every Gaussian is a flat disc lying on the surface of a part. Samples are spread
over the triangles in proportion to their area (systematic sampling over the cumulative area,
then a low-discrepancy sequence inside each triangle), so the spacing is even and neighbouring
discs overlap enough to close the surface and its silhouette.

Conventions
- `Gaussians` live in the CAD frame: millimetres, +Z up. `scales` are linear standard
  deviations (mm) along the Gaussian's own axes; `rotations` are unit quaternions (w, x, y, z)
  turning those axes into the CAD frame (axis 3 is the surface normal); `opacities` are linear
  0..1; `colors` are linear RGB 0..1, like a glTF baseColorFactor and a CadQuery colour.
- Every file is written in metres with +Y up, the frame of our mesh GLBs (`glb.to_gltf_axes`):
  points (x, y, z) mm -> (x, z, -y) / 1000, quaternions pre-multiplied by that same rotation,
  scales / 1000. This is also SPZ's own frame (RUB: right, up, back). PLY names no frame;
  viewers that assume COLMAP's +Y-down frame show these files upside down.
- 3DGS colour is display-referred sRGB (KHR colorSpace "srgb_rec709_display"), so the files hold
  sRGB-encoded colour: f_dc = (srgb(colour) - 0.5) / SH_C0. glTF COLOR_0 stays linear, as the
  glTF specification requires, with the opacity in its alpha channel.
- PLY (3DGS layout, SH degree 0, the zero f_rest columns omitted): float32 x y z nx ny nz
  f_dc_0..2 opacity scale_0..2 rot_0..3; opacity is a logit, scales natural logs, rot w,x,y,z.
- SPZ version 3 (gzip): 24-bit fixed-point positions with as many fractional bits as the part's
  size allows (at most 20, about 1 micrometre; the reference writer's fixed 12 bits would be
  0.24 mm), opacity * 255, colour bytes f_dc * 0.15 * 255 + 127.5, scale bytes (ln s + 10) * 16
  (so scales are clamped to e^-10..e^5.9 m), quaternions in 'smallest three' 32-bit packing.
  SPZ has nowhere to put provenance; the sidecar manifest covers it by hash.
- splat GLB (KHR_gaussian_splatting, ellipse kernel): a POINTS primitive with POSITION,
  COLOR_0 and the ROTATION (x, y, z, w), SCALE (linear), OPACITY (0..1) and
  SH_DEGREE_0_COEF_0 attributes.

Every writer is deterministic: the same parts and seed give the same bytes.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from plyfile import PlyData
from scipy.spatial.transform import Rotation

from exporters import glb
from exporters.parts import PartMesh
from exporters.provenance import Provenance

SH_C0 = 0.28209479177387814
FORMATS = ("ply", "spz", "splat-glb")
SUFFIXES = {"ply": ".ply", "spz": ".spz", "splat-glb": ".splat.glb"}
DEFAULT_COLOR = (0.5, 0.5, 0.5)  # linear grey, about sRGB 0.74: a neutral mid-light surface
OPACITY = 0.98
# Sigma of a disc over the mean sample spacing: discs overlap so the surface reads closed.
SPREAD = 0.7
# Thickness along the normal over the in-plane sigma: flat discs, not balls.
THICKNESS = 0.03
# Default count: about this many samples across the bounding-box diagonal, within bounds.
SAMPLES_PER_DIAGONAL = 128
MIN_COUNT, MAX_COUNT = 4_096, 40_000
PLASTIC = 1.324717957244746  # R2 low-discrepancy sequence constant
EXTENSION = "KHR_gaussian_splatting"
SPZ_MAGIC = 0x5053474E  # "NGSP"
SPZ_VERSION = 3
SPZ_COLOR_SCALE = 0.15
SQRT1_2 = 0.7071067811865476
# Rotation of the CAD frame into the file frame, as a (w, x, y, z) quaternion.
Y_UP_QUAT = Rotation.from_matrix(glb.Z_UP_TO_Y_UP).as_quat(scalar_first=True, canonical=True)
PLY_PROPERTIES = (
    *("x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2", "opacity"),
    *("scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"),
)


@dataclass(frozen=True)
class Gaussians:
    """Gaussians in the CAD frame (mm, +Z up); see the module docstring for each array."""

    means: np.ndarray
    scales: np.ndarray
    rotations: np.ndarray
    opacities: np.ndarray
    colors: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.means)
        shapes = {"means": 3, "scales": 3, "rotations": 4, "colors": 3, "opacities": 0}
        for name, width in shapes.items():
            array = np.ascontiguousarray(getattr(self, name), dtype=np.float32)
            expected = (n, width) if width else (n,)
            if array.shape != expected:
                raise ValueError(f"Gaussians.{name} has shape {array.shape}, not {expected}")
            object.__setattr__(self, name, array)

    @property
    def count(self) -> int:
        """The number of Gaussians."""
        return len(self.means)

    def normals(self) -> np.ndarray:
        """Unit normals (each Gaussian's third axis) in the CAD frame."""
        return quat_to_matrix(self.rotations)[:, :, 2].astype(np.float32)


# --- quaternions and colour ------------------------------------------------------------------


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (w, x, y, z) quaternions, broadcast over leading axes."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3) of (w, x, y, z) quaternions (normalised first)."""
    q = np.asarray(q, dtype=np.float64)
    return Rotation.from_quat(q, scalar_first=True).as_matrix().reshape(-1, 3, 3)


def _unit_quats(q: np.ndarray) -> np.ndarray:
    """Unit quaternions with w >= 0 (q and -q are the same rotation; one form keeps bytes fixed)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def linear_to_srgb(c: np.ndarray) -> np.ndarray:
    """sRGB encoding of linear colour in [0, 1]."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """Linear colour of sRGB-encoded values in [0, 1]."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


# --- sampling -------------------------------------------------------------------------------


def _surface(parts: Sequence[PartMesh]) -> tuple[np.ndarray, ...]:
    """All parts' triangles (m, 3, 3), corner normals (m, 3, 3), colours (m, 3), opacities (m,)."""
    tris, corners, colors, alphas = [], [], [], []
    for part in parts:
        t = np.asarray(part.triangles, dtype=np.int64).reshape(-1, 3)
        tri = np.asarray(part.vertices, dtype=np.float64)[t]
        face = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        length = np.linalg.norm(face, axis=1)
        keep = length > 1e-12
        tri, t, face = tri[keep], t[keep], face[keep] / length[keep, None]
        corner = np.repeat(face[:, None], 3, axis=1)
        if part.normals is not None:
            given = np.asarray(part.normals, dtype=np.float64)[t]
            # B-rep normals bend smoothly over curved faces; a normal far off its face (a shared
            # vertex at a sharp edge, or a missing one) would tilt the disc, so keep the face's.
            agree = np.abs(np.einsum("mkj,mj->mk", given, face)) > 0.5
            corner = np.where(agree[..., None], given, corner)
        rgba = part.color or (*DEFAULT_COLOR, 1.0)
        tris.append(tri)
        corners.append(corner)
        colors.append(np.tile(np.asarray(rgba[:3], dtype=np.float64), (len(tri), 1)))
        alphas.append(np.full(len(tri), OPACITY * rgba[3]))
    if not tris or not sum(len(t) for t in tris):
        raise ValueError("the parts have no triangles with area to place splats on")
    return tuple(np.concatenate(x) for x in (tris, corners, colors, alphas))


def _areas(tris: np.ndarray) -> np.ndarray:
    return 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)


def default_count(parts: Sequence[PartMesh]) -> int:
    """A count that scales with surface area over bounding-box size, within MIN/MAX_COUNT."""
    return _default_count(_surface(parts)[0])


def _default_count(tris: np.ndarray) -> int:
    points = tris.reshape(-1, 3)
    diagonal = float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))
    wanted = _areas(tris).sum() * (SAMPLES_PER_DIAGONAL / max(diagonal, 1e-9)) ** 2
    return int(np.clip(round(wanted), MIN_COUNT, MAX_COUNT))


def gaussians_from_parts(
    parts: Sequence[PartMesh], count: int | None = None, seed: int = 0
) -> Gaussians:
    """Flat surface-aligned Gaussians spread evenly over the parts (deterministic by seed)."""
    tris, corners, colors, alphas = _surface(parts)
    n = _default_count(tris) if count is None else int(count)
    if n < 1:
        raise ValueError(f"a splat needs at least one Gaussian, not {n}")
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(_areas(tris))
    # Systematic sampling: one random phase, then evenly spaced along the cumulative area, so
    # each triangle gets the floor or ceiling of its share instead of a Poisson-random count.
    along = (np.arange(n) + rng.random()) * (cumulative[-1] / n)
    which = np.minimum(np.searchsorted(cumulative, along, side="right"), len(tris) - 1)
    rank = np.arange(n) - np.searchsorted(which, which, side="left")
    # Inside a triangle: an R2 sequence from a random start, mapped with Heitz's low-distortion
    # square-to-triangle map, so samples sharing a large CAD triangle stay evenly spread.
    start = rng.random((len(tris), 2))
    step = np.array([1 / PLASTIC, 1 / PLASTIC**2])
    u = (start[which] + rank[:, None] * step) % 1.0
    lower = u[:, 1] > u[:, 0]
    b0 = np.where(lower, u[:, 0] / 2, u[:, 0] - u[:, 1] / 2)
    b1 = np.where(lower, u[:, 1] - u[:, 0] / 2, u[:, 1] / 2)
    bary = np.stack([b0, b1, 1.0 - b0 - b1], axis=1)
    means = np.einsum("nk,nkj->nj", bary, tris[which])
    normal = np.einsum("nk,nkj->nj", bary, corners[which])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    sigma = SPREAD * np.sqrt(cumulative[-1] / n)
    scales = np.tile([sigma, sigma, sigma * THICKNESS], (n, 1))
    return Gaussians(
        means=means,
        scales=scales,
        rotations=_frames(normal),
        opacities=alphas[which],
        colors=colors[which],
    )


def _frames(normal: np.ndarray) -> np.ndarray:
    """Unit quaternions whose third axis is `normal` (the in-plane axes are arbitrary)."""
    helper = np.where(np.abs(normal[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    first = np.cross(helper, normal)
    first /= np.linalg.norm(first, axis=1, keepdims=True)
    second = np.cross(normal, first)
    matrices = np.stack([first, second, normal], axis=2)
    return Rotation.from_matrix(matrices).as_quat(scalar_first=True, canonical=True)


# --- the file frame -------------------------------------------------------------------------


def _to_file(g: Gaussians) -> dict[str, np.ndarray]:
    """Float64 arrays in the file frame (metres, +Y up): means, scales, quats (w,x,y,z), f_dc."""
    if not g.count:
        raise ValueError("there are no Gaussians to write")
    return {
        "means": g.means.astype(np.float64) @ glb.Z_UP_TO_Y_UP.T * glb.MM_TO_M,
        "scales": g.scales.astype(np.float64) * glb.MM_TO_M,
        "quats": _unit_quats(quat_multiply(Y_UP_QUAT, g.rotations)),
        "f_dc": (linear_to_srgb(g.colors) - 0.5) / SH_C0,
        "opacities": np.clip(g.opacities.astype(np.float64), 0.0, 1.0),
    }


def _from_file(
    means: np.ndarray, scales: np.ndarray, quats: np.ndarray, opacities: np.ndarray, f_dc: Any
) -> Gaussians:
    """Gaussians in the CAD frame from file-frame arrays (the inverse of `_to_file`)."""
    back = np.array([Y_UP_QUAT[0], *(-Y_UP_QUAT[1:])])
    return Gaussians(
        means=np.asarray(means, dtype=np.float64) @ glb.Z_UP_TO_Y_UP / glb.MM_TO_M,
        scales=np.asarray(scales, dtype=np.float64) / glb.MM_TO_M,
        rotations=_unit_quats(quat_multiply(back, np.asarray(quats, dtype=np.float64))),
        opacities=opacities,
        colors=srgb_to_linear(0.5 + SH_C0 * np.asarray(f_dc, dtype=np.float64)),
    )


# --- PLY ------------------------------------------------------------------------------------


def _comment(text: str) -> str:
    """One PLY comment line: ASCII, no line breaks."""
    return "comment " + " ".join(text.encode("ascii", "replace").decode().split())


def ply_bytes(g: Gaussians, provenance: Provenance | None = None) -> bytes:
    """A binary little-endian 3DGS PLY (SH degree 0); provenance goes into comment lines."""
    f = _to_file(g)
    normals = quat_to_matrix(f["quats"])[:, :, 2]
    opacity = np.clip(f["opacities"], 1e-6, 1 - 1e-6)
    columns = [
        f["means"],
        normals,
        f["f_dc"],
        np.log(opacity / (1 - opacity))[:, None],
        np.log(f["scales"]),
        f["quats"],
    ]
    body = np.concatenate(columns, axis=1).astype("<f4")
    lines = ["ply", "format binary_little_endian 1.0"]
    lines.append(_comment("genservice gaussian splats; metres, +Y up (the glTF frame)"))
    if provenance is not None:
        for key, value in provenance.summary().items():
            if value is not None:
                lines.append(_comment(f"provenance {key} {value}"))
    lines.append(f"element vertex {g.count}")
    lines += [f"property float {name}" for name in PLY_PROPERTIES]
    lines.append("end_header")
    return ("\n".join(lines) + "\n").encode("ascii") + body.tobytes()


def read_ply(data: bytes) -> Gaussians:
    """Gaussians from a 3DGS PLY (extra properties such as f_rest are ignored)."""
    vertex = PlyData.read(io.BytesIO(data))["vertex"]
    names = {p.name for p in vertex.properties}
    missing = [name for name in PLY_PROPERTIES[:3] + PLY_PROPERTIES[6:] if name not in names]
    if missing:
        raise ValueError(f"not a 3DGS PLY: no {', '.join(missing)} properties")

    def cols(*keys: str) -> np.ndarray:
        return np.stack([np.asarray(vertex[k], dtype=np.float64) for k in keys], axis=1)

    return _from_file(
        means=cols("x", "y", "z"),
        scales=np.exp(cols("scale_0", "scale_1", "scale_2")),
        quats=cols("rot_0", "rot_1", "rot_2", "rot_3"),
        opacities=1.0 / (1.0 + np.exp(-np.asarray(vertex["opacity"], dtype=np.float64))),
        f_dc=cols("f_dc_0", "f_dc_1", "f_dc_2"),
    )


# --- SPZ ------------------------------------------------------------------------------------


def _round(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, as the reference C++ (std::round) does."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _bytes(x: np.ndarray) -> np.ndarray:
    return np.clip(_round(x), 0, 255).astype(np.uint8)


def _gzip(payload: bytes) -> bytes:
    """A single-member gzip stream with a fixed header (no name, mtime 0), so bytes repeat."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    body = deflate.compress(payload) + deflate.flush()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def _fractional_bits(means: np.ndarray) -> int:
    """The finest fixed point whose 24-bit range still holds every coordinate (at most 20)."""
    largest = float(np.abs(means).max(initial=0.0))
    whole = int(np.floor(np.log2(largest))) + 1 if largest > 0 else 0
    return int(np.clip(22 - whole, 1, 20))  # 23 magnitude bits, one spare for rounding


def _pack_smallest_three(q: np.ndarray) -> np.ndarray:
    """(x, y, z, w) unit quaternions as uint32: largest index (2 bits), 3 x (sign + 9 bits)."""
    largest = np.argmax(np.abs(q), axis=1)
    flip = q[np.arange(len(q)), largest] < 0  # drop the largest's sign: q and -q are one turn
    packed = largest.astype(np.uint32)
    for axis in range(4):
        value = q[:, axis]
        sign = ((value < 0) ^ flip).astype(np.uint32)
        magnitude = np.minimum(np.floor(511 * np.abs(value) / SQRT1_2 + 0.5), 511).astype(np.uint32)
        packed = np.where(largest == axis, packed, (packed << 10) | (sign << 9) | magnitude)
    return packed.astype("<u4")


def _unpack_smallest_three(packed: np.ndarray) -> np.ndarray:
    """(x, y, z, w) quaternions from 'smallest three' uint32s."""
    packed = packed.astype(np.uint32)
    largest = packed >> 30
    q = np.zeros((len(packed), 4))
    for axis in (3, 2, 1, 0):
        here = largest != axis
        value = SQRT1_2 * (packed & 511) / 511.0
        value = np.where((packed >> 9) & 1, -value, value)
        q[:, axis] = np.where(here, value, 0.0)
        packed = np.where(here, packed >> 10, packed)
    rest = np.maximum(0.0, 1.0 - np.sum(q * q, axis=1))
    q[np.arange(len(q)), largest] = np.sqrt(rest)
    return q


def spz_bytes(g: Gaussians) -> bytes:
    """Niantic SPZ version 3 (gzip), SH degree 0. SPZ has no field for provenance."""
    f = _to_file(g)
    fractional = _fractional_bits(f["means"])
    fixed = _round(f["means"] * (1 << fractional)).astype("<i4")
    positions = fixed.view(np.uint8).reshape(g.count, 3, 4)[:, :, :3]
    xyzw = np.roll(f["quats"], -1, axis=1)
    sections = [
        positions,
        _bytes(f["opacities"] * 255.0),
        _bytes(f["f_dc"] * (SPZ_COLOR_SCALE * 255.0) + 127.5),
        _bytes((np.log(f["scales"]) + 10.0) * 16.0),
        _pack_smallest_three(xyzw),
    ]
    header = struct.pack("<IIIBBBB", SPZ_MAGIC, SPZ_VERSION, g.count, 0, fractional, 0, 0)
    return _gzip(header + b"".join(np.ascontiguousarray(s).tobytes() for s in sections))


def read_spz(data: bytes) -> Gaussians:
    """Gaussians from SPZ versions 2 and 3 (gzip); higher SH degrees are read and dropped."""
    try:
        raw = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not a gzip SPZ stream: {exc}") from exc
    if len(raw) < 16:
        raise ValueError("too short for an SPZ header")
    magic, version, n, degree, fractional, flags, _ = struct.unpack_from("<IIIBBBB", raw)
    if magic != SPZ_MAGIC or version not in (2, 3) or degree > 3:
        raise ValueError(f"unsupported SPZ (magic {magic:#x}, version {version}, SH {degree})")
    rot = 4 if version >= 3 else 3
    sizes = [9 * n, n, 3 * n, 3 * n, rot * n, {0: 0, 1: 9, 2: 24, 3: 45}[degree] * n]
    # Extensions (flag 0x2) sit between the header and the sections, so read those from the end.
    start = len(raw) - sum(sizes) if flags & 0x2 else 16
    if start < 16 or len(raw) < start + sum(sizes):
        raise ValueError(f"SPZ payload too short for {n} points")
    offsets = np.cumsum([start, *sizes])[:-1]
    section = [
        np.frombuffer(raw, np.uint8, s, o) for o, s in zip(offsets.tolist(), sizes, strict=True)
    ]
    b = section[0].reshape(n, 3, 3).astype(np.int32)
    fixed = b[:, :, 0] | (b[:, :, 1] << 8) | (b[:, :, 2] << 16)
    fixed = np.where(fixed & 0x800000, fixed - (1 << 24), fixed)
    if version >= 3:
        xyzw = _unpack_smallest_three(section[4].view("<u4"))
    else:
        xyz = section[4].reshape(n, 3) / 127.5 - 1.0
        w = np.sqrt(np.maximum(0.0, 1.0 - np.sum(xyz * xyz, axis=1)))
        xyzw = np.concatenate([xyz, w[:, None]], axis=1)
    return _from_file(
        means=fixed / float(1 << fractional),
        scales=np.exp(section[3].reshape(n, 3) / 16.0 - 10.0),
        quats=np.roll(xyzw, 1, axis=1),
        opacities=section[1] / 255.0,
        f_dc=(section[2].reshape(n, 3) / 255.0 - 0.5) / SPZ_COLOR_SCALE,
    )


# --- splat GLB ------------------------------------------------------------------------------

ATTRIBUTES = {
    "rotation": f"{EXTENSION}:ROTATION",
    "scale": f"{EXTENSION}:SCALE",
    "opacity": f"{EXTENSION}:OPACITY",
    "sh0": f"{EXTENSION}:SH_DEGREE_0_COEF_0",
}


def splat_glb_bytes(g: Gaussians, provenance: Provenance | None = None) -> bytes:
    """A GLB with one KHR_gaussian_splatting POINTS primitive; provenance as in mesh GLBs."""
    f = _to_file(g)
    builder = glb.BufferBuilder()
    color = np.concatenate([g.colors, f["opacities"][:, None]], axis=1)
    attributes = {
        "POSITION": builder.accessor(f["means"].astype(np.float32)),
        "COLOR_0": builder.accessor(color.astype(np.float32), bounds=False),
        ATTRIBUTES["rotation"]: builder.accessor(
            np.roll(f["quats"], -1, axis=1).astype(np.float32), bounds=False
        ),
        ATTRIBUTES["scale"]: builder.accessor(f["scales"].astype(np.float32), bounds=False),
        ATTRIBUTES["opacity"]: builder.accessor(f["opacities"].astype(np.float32), bounds=False),
        ATTRIBUTES["sh0"]: builder.accessor(f["f_dc"].astype(np.float32), bounds=False),
    }
    splatting = {
        "kernel": "ellipse",
        "colorSpace": "srgb_rec709_display",
        "projection": "perspective",
        "sortingMethod": "cameraDistance",
    }
    primitive = {"attributes": attributes, "mode": 0, "extensions": {EXTENSION: splatting}}
    generator = provenance.creator_tool if provenance is not None else "genservice"
    doc = glb.document(builder, provenance, generator, extensions_used=[EXTENSION])
    doc["meshes"] = [{"name": "splats", "primitives": [primitive]}]
    doc["nodes"] = [{"name": "splats", "mesh": 0}]
    doc["scenes"] = [{"nodes": [0]}]
    doc["scene"] = 0
    return glb.pack_glb(doc, bytes(builder.data))


def read_splat_glb(data: bytes) -> Gaussians:
    """Gaussians from the first KHR_gaussian_splatting primitive of a GLB."""
    doc, binary = glb.read_glb(data)
    primitives = [p for m in doc.get("meshes", []) for p in m.get("primitives", [])]
    splat = next((p for p in primitives if EXTENSION in p.get("extensions", {})), None)
    if splat is None:
        raise ValueError(f"the GLB has no {EXTENSION} primitive")
    attrs = splat["attributes"]

    def read(name: str) -> np.ndarray:
        return glb.accessor_array(doc, binary, attrs[name]).astype(np.float64)

    return _from_file(
        means=read("POSITION"),
        scales=read(ATTRIBUTES["scale"]),
        quats=np.roll(read(ATTRIBUTES["rotation"]), 1, axis=1),
        opacities=read(ATTRIBUTES["opacity"]),
        f_dc=read(ATTRIBUTES["sh0"]),
    )


# --- the exporters' entry point -------------------------------------------------------------


def write_splats(
    parts: Sequence[PartMesh],
    fmt: str,
    provenance: Provenance | None = None,
    count: int | None = None,
    seed: int = 0,
) -> bytes:
    """The parts as a splat file: fmt "ply", "spz" or "splat-glb" (see SUFFIXES for names)."""
    return splat_bytes(gaussians_from_parts(parts, count=count, seed=seed), fmt, provenance)


def splat_bytes(g: Gaussians, fmt: str, provenance: Provenance | None = None) -> bytes:
    """Gaussians as a splat file: fmt "ply", "spz" or "splat-glb"."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown splat format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "ply":
        return ply_bytes(g, provenance)
    if fmt == "spz":
        return spz_bytes(g)
    return splat_glb_bytes(g, provenance)
