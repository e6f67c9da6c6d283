"""A small CPU renderer for checking splats against the mesh they came from (tests, reports).

gsplat has no CPU rasteriser, so this renders with torch on the CPU, following the 3DGS forward
pass the KHR_gaussian_splatting ellipse kernel describes: each 3D covariance R S S^T R^T is
projected with the Jacobian of the pinhole projection (EWA), dilated by 0.3 px^2, cut off at a
Mahalanobis distance of 3, and the Gaussians are alpha-composited front to back. The image is
split in 8 x 8 pixel tiles and each tile only sees the Gaussians whose 3-sigma box touches it,
so 30k Gaussians on 128 x 128 pixels stay within a few MB and well under a second.

Cameras follow OpenCV: camera x right, y down, z forward; the pixel in row i, column j covers
[j, j+1) x [i, i+1) and is sampled at its centre. Scenes are in whatever units the inputs use
(the CAD frame, mm, +Z up, for `Gaussians` and `PartMesh`).

`mesh_mask` rasterises triangles to a silhouette for the same cameras, and `silhouette_iou`
compares the two: splat alpha above 0.5 against mesh coverage, from several views.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from exporters.parts import PartMesh
from exporters.splat import Gaussians, quat_to_matrix

TILE = 8
DILATION = 0.3  # px^2 added to every projected covariance, as in 3DGS
CUTOFF = 9.0  # squared Mahalanobis distance: the kernel's 3-sigma cut-off
MAX_ALPHA = 0.99
MIN_ALPHA = 1.0 / 255.0
CHUNK = 4096  # Gaussians composited at once within a tile


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: world-to-camera rotation, centre, focal length (px) and image size."""

    rotation: np.ndarray
    position: np.ndarray
    focal: float
    width: int
    height: int

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """World points (n, 3) in camera coordinates."""
        return (np.asarray(points, dtype=np.float64) - self.position) @ self.rotation.T

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates (n, 2) and depths (n,) of world points."""
        cam = self.to_camera(points)
        z = cam[:, 2]
        safe = np.where(np.abs(z) > 1e-12, z, 1e-12)
        uv = self.focal * cam[:, :2] / safe[:, None] + [self.width / 2, self.height / 2]
        return uv, z


def look_at(eye: np.ndarray, target: np.ndarray, focal: float, size: int) -> Camera:
    """A camera at `eye` looking at `target`, world +Z up on screen where possible."""
    forward = np.asarray(target, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    up = np.array([0.0, 0.0, 1.0]) if abs(forward[2]) < 0.99 else np.array([0.0, 1.0, 0.0])
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    return Camera(np.stack([right, down, forward]), np.asarray(eye, float), focal, size, size)


def look_at_cameras(
    center: np.ndarray, radius: float, n_views: int = 6, size: int = 128, fov_deg: float = 40.0
) -> list[Camera]:
    """Cameras around a bounding sphere: one from above, one from below, the rest in a ring."""
    half = math.radians(fov_deg) / 2
    distance = 1.15 * radius / math.sin(half)  # the whole sphere fits with a margin
    focal = size / 2 / math.tan(half)
    directions = [np.array([0.15, 0.1, 1.0]), np.array([-0.1, 0.15, -1.0])]
    for k in range(max(n_views - 2, 0)):
        azimuth = 2 * math.pi * k / max(n_views - 2, 1) + 0.3
        elevation = math.radians(30.0 if k % 2 == 0 else -20.0)
        directions.append(
            np.array(
                [
                    math.cos(elevation) * math.cos(azimuth),
                    math.cos(elevation) * math.sin(azimuth),
                    math.sin(elevation),
                ]
            )
        )
    center = np.asarray(center, dtype=np.float64)
    return [
        look_at(center + distance * d / np.linalg.norm(d), center, focal, size)
        for d in directions[:n_views]
    ]


def _projected(g: Gaussians, camera: Camera) -> dict[str, torch.Tensor]:
    """Screen-space Gaussians: centres, conics (a, b, c), 3-sigma radii, depth, colour."""
    cam = camera.to_camera(g.means)
    z = cam[:, 2]
    front = z > 1e-6
    cam, z = cam[front], z[front]
    rot = quat_to_matrix(g.rotations[front])
    m = rot * g.scales[front].astype(np.float64)[:, None, :]
    sigma = camera.rotation @ (m @ m.transpose(0, 2, 1)) @ camera.rotation.T
    f = camera.focal
    jac = np.zeros((len(z), 2, 3))
    jac[:, 0, 0] = f / z
    jac[:, 1, 1] = f / z
    jac[:, 0, 2] = -f * cam[:, 0] / z**2
    jac[:, 1, 2] = -f * cam[:, 1] / z**2
    cov = jac @ sigma @ jac.transpose(0, 2, 1) + DILATION * np.eye(2)
    a, b, c = cov[:, 0, 0], cov[:, 0, 1], cov[:, 1, 1]
    det = a * c - b * b
    mid = (a + c) / 2
    largest = mid + np.sqrt(np.maximum(mid * mid - det, 0.0))
    uv = f * cam[:, :2] / z[:, None] + [camera.width / 2, camera.height / 2]
    arrays = {
        "uv": uv,
        "conic": np.stack([c / det, -b / det, a / det], axis=1),
        "radius": 3.0 * np.sqrt(largest),
        "depth": z,
        "opacity": g.opacities[front],
        "color": g.colors[front],
    }
    # Geometry is worked out in float64; float32 is plenty for the per-pixel compositing.
    return {k: torch.from_numpy(v.astype(np.float32)) for k, v in arrays.items()}


def _tile_pairs(p: dict[str, torch.Tensor], width: int, height: int) -> tuple[torch.Tensor, ...]:
    """(tile id, Gaussian index) pairs sorted by tile, then front to back within each tile."""
    tiles_x, tiles_y = -(-width // TILE), -(-height // TILE)
    uv, r = p["uv"], p["radius"]
    x0 = ((uv[:, 0] - r) // TILE).clamp(0, tiles_x - 1).long()
    x1 = ((uv[:, 0] + r) // TILE).clamp(0, tiles_x - 1).long()
    y0 = ((uv[:, 1] - r) // TILE).clamp(0, tiles_y - 1).long()
    y1 = ((uv[:, 1] + r) // TILE).clamp(0, tiles_y - 1).long()
    onscreen = (uv[:, 0] + r >= 0) & (uv[:, 0] - r < width) & (uv[:, 1] + r >= 0)
    onscreen &= uv[:, 1] - r < height
    spans_x, spans_y = x1 - x0 + 1, y1 - y0 + 1
    counts = torch.where(onscreen, spans_x * spans_y, torch.zeros_like(x0))
    index = torch.repeat_interleave(torch.arange(len(uv)), counts)
    # Position of each pair within its Gaussian's tile rectangle.
    first = torch.cumsum(counts, 0) - counts
    local = torch.arange(len(index)) - first.repeat_interleave(counts)
    tx = x0[index] + local % spans_x[index]
    ty = y0[index] + local // spans_x[index]
    tile = ty * tiles_x + tx
    order = torch.argsort(p["depth"], stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))
    key = tile * len(uv) + rank[index]
    sort = torch.argsort(key)
    return tile[sort], index[sort]


@contextmanager
def _one_thread() -> Iterator[None]:
    """Run torch on one thread: the per-tile tensors are small, and on a busy machine torch's
    thread pool turned a 0.2 s render into 10 s."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def render(g: Gaussians, camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """RGB (h, w, 3) and alpha (h, w) images of the Gaussians, composited front to back."""
    with _one_thread():
        return _render(g, camera)


def _render(g: Gaussians, camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    width, height = camera.width, camera.height
    rgb = torch.zeros(height, width, 3)
    alpha = torch.zeros(height, width)
    if not g.count:
        return rgb.double().numpy(), alpha.double().numpy()
    p = _projected(g, camera)
    tiles, index = _tile_pairs(p, width, height)
    tiles_x = -(-width // TILE)
    ids, counts = torch.unique_consecutive(tiles, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    for tile, start, count in zip(ids.tolist(), starts.tolist(), counts.tolist(), strict=True):
        ty, tx = divmod(tile, tiles_x)
        rows = torch.arange(ty * TILE, min((ty + 1) * TILE, height), dtype=torch.float32)
        cols = torch.arange(tx * TILE, min((tx + 1) * TILE, width), dtype=torch.float32)
        py, px = torch.meshgrid(rows + 0.5, cols + 0.5, indexing="ij")
        color, transmit = _composite(p, index[start : start + count], px.flatten(), py.flatten())
        block = (slice(ty * TILE, ty * TILE + len(rows)), slice(tx * TILE, tx * TILE + len(cols)))
        rgb[block] = color.reshape(len(rows), len(cols), 3)
        alpha[block] = (1.0 - transmit).reshape(len(rows), len(cols))
    return rgb.double().numpy(), alpha.double().numpy()


def _composite(
    p: dict[str, torch.Tensor], index: torch.Tensor, px: torch.Tensor, py: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Colour and transmittance of pixels under depth-sorted Gaussians, in bounded chunks."""
    color = torch.zeros(len(px), 3)
    transmit = torch.ones(len(px))
    for start in range(0, len(index), CHUNK):
        part = index[start : start + CHUNK]
        dx = px[None, :] - p["uv"][part, 0:1]
        dy = py[None, :] - p["uv"][part, 1:2]
        a, b, c = (p["conic"][part, k : k + 1] for k in range(3))
        power = a * dx * dx + 2 * b * dx * dy + c * dy * dy
        alpha = (p["opacity"][part, None] * torch.exp(-0.5 * power)).clamp(max=MAX_ALPHA)
        alpha = torch.where((power <= CUTOFF) & (alpha >= MIN_ALPHA), alpha, 0.0)
        through = torch.cumprod(1.0 - alpha, dim=0)
        before = torch.cat([torch.ones(1, len(px)), through[:-1]]) * transmit
        color += (alpha * before).T @ p["color"][part]
        transmit = transmit * through[-1]
    return color, transmit


def render_alpha(g: Gaussians, camera: Camera) -> np.ndarray:
    """Accumulated opacity (h, w) of the Gaussians."""
    return render(g, camera)[1]


def render_reference(g: Gaussians, camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """A slow, plain per-Gaussian renderer (numerical Jacobian, no tiles) to check `render`."""
    height, width = camera.height, camera.width
    py, px = np.mgrid[0:height, 0:width] + 0.5
    rgb = np.zeros((height, width, 3))
    transmit = np.ones((height, width))
    depth = camera.to_camera(g.means)[:, 2]
    for i in np.argsort(depth, kind="stable"):
        if depth[i] <= 1e-6:
            continue
        mean = g.means[i].astype(np.float64)
        (center,), _ = camera.project(mean[None])
        jac = np.zeros((2, 3))
        for k in range(3):
            step = np.zeros(3)
            step[k] = 1e-4 * max(1.0, float(np.abs(mean).max()))
            plus, _ = camera.project((mean + step)[None])
            minus, _ = camera.project((mean - step)[None])
            jac[:, k] = (plus[0] - minus[0]) / (2 * step[k])
        axes = quat_to_matrix(g.rotations[i : i + 1])[0] * g.scales[i].astype(np.float64)
        cov = jac @ axes @ axes.T @ jac.T + DILATION * np.eye(2)
        d = np.stack([px - center[0], py - center[1]], axis=-1)
        power = np.einsum("hwi,ij,hwj->hw", d, np.linalg.inv(cov), d)
        alpha = np.minimum(MAX_ALPHA, g.opacities[i] * np.exp(-0.5 * power))
        alpha[(power > CUTOFF) | (alpha < MIN_ALPHA)] = 0.0
        rgb += (transmit * alpha)[..., None] * g.colors[i]
        transmit *= 1.0 - alpha
    return rgb, 1.0 - transmit


def mesh_mask(parts: Sequence[PartMesh], camera: Camera) -> np.ndarray:
    """Boolean silhouette (h, w) of the parts' triangles: pixel centres inside any triangle."""
    mask = np.zeros((camera.height, camera.width), dtype=bool)
    for part in parts:
        uv, z = camera.project(part.vertices)
        tris = np.asarray(part.triangles, dtype=np.int64)
        tris = tris[(z[tris] > 1e-6).all(axis=1)]
        corners = uv[tris]
        low = np.floor(corners.min(axis=1) - 0.5).astype(int)
        high = np.ceil(corners.max(axis=1) - 0.5).astype(int)
        low = np.maximum(low, 0)
        high = np.minimum(high, [camera.width - 1, camera.height - 1])
        for (p0, p1, p2), (x0, y0), (x1, y1) in zip(corners, low, high, strict=True):
            if x1 < x0 or y1 < y0:
                continue
            area = (p1[0] - p0[0]) * (p2[1] - p0[1]) - (p1[1] - p0[1]) * (p2[0] - p0[0])
            if abs(area) < 1e-12:
                continue  # edge-on: its neighbours cover it
            ys, xs = np.mgrid[y0 : y1 + 1, x0 : x1 + 1] + 0.5
            inside = np.ones(xs.shape, dtype=bool)
            for a, b in ((p0, p1), (p1, p2), (p2, p0)):
                edge = (b[0] - a[0]) * (ys - a[1]) - (b[1] - a[1]) * (xs - a[0])
                inside &= edge * np.sign(area) >= 0
            mask[y0 : y1 + 1, x0 : x1 + 1] |= inside
    return mask


def bounding_sphere(parts: Sequence[PartMesh]) -> tuple[np.ndarray, float]:
    """Centre of the parts' bounding box and the radius that holds every vertex."""
    points = np.concatenate([np.asarray(p.vertices, dtype=np.float64) for p in parts])
    center = (points.min(axis=0) + points.max(axis=0)) / 2
    return center, float(np.linalg.norm(points - center, axis=1).max())


def silhouette_iou(
    gaussians: Gaussians, parts: Sequence[PartMesh], views: int = 6, size: int = 256
) -> list[float]:
    """IoU of splat coverage (alpha > 0.5) and mesh silhouette, one value per view."""
    center, radius = bounding_sphere(parts)
    scores = []
    for camera in look_at_cameras(center, radius, views, size):
        splat = render_alpha(gaussians, camera) > 0.5
        mesh = mesh_mask(parts, camera)
        union = np.count_nonzero(splat | mesh)
        scores.append(np.count_nonzero(splat & mesh) / union if union else 1.0)
    return scores
