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
from exporters.splat import DEFAULT_COLOR, Gaussians, quat_to_matrix

TILE = 8
DILATION = 0.3  # px^2 added to every projected covariance, as in 3DGS
CUTOFF = 9.0  # squared Mahalanobis distance: the kernel's 3-sigma cut-off
MAX_ALPHA = 0.99
MIN_ALPHA = 1.0 / 255.0
CHUNK = 32  # depth slots composited at once in every tile


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
    center: np.ndarray,
    radius: float,
    n_views: int = 6,
    size: int = 128,
    fov_deg: float = 40.0,
    azimuth_offset: float = 0.0,
) -> list[Camera]:
    """Cameras around a bounding sphere: one from above, one from below, the rest in a ring
    (turned by `azimuth_offset` radians: another ring of views of the same part)."""
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
    cos, sin = math.cos(azimuth_offset), math.sin(azimuth_offset)
    turn = np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])
    center = np.asarray(center, dtype=np.float64)
    return [
        look_at(center + distance * turn @ d / np.linalg.norm(d), center, focal, size)
        for d in directions[:n_views]
    ]


@dataclass(frozen=True)
class SplatTensors:
    """Gaussians as torch tensors (float64 geometry), so a render can be differentiated.

    `rotations` are (w, x, y, z) quaternions, normalised where they are used.
    """

    means: torch.Tensor
    scales: torch.Tensor
    rotations: torch.Tensor
    opacities: torch.Tensor
    colors: torch.Tensor

    @classmethod
    def of(cls, g: Gaussians) -> SplatTensors:
        """The Gaussians' arrays as tensors."""
        return cls(
            *(
                torch.from_numpy(np.asarray(a, dtype=np.float64))
                for a in (g.means, g.scales, g.rotations, g.opacities, g.colors)
            )
        )

    def to_gaussians(self) -> Gaussians:
        """Back to plain arrays (detached)."""
        arrays = (self.means, self.scales, self.rotations, self.opacities, self.colors)
        return Gaussians(*(t.detach().cpu().double().numpy() for t in arrays))


def quat_to_matrix_torch(q: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (n, 3, 3) of (w, x, y, z) quaternions, normalised first."""
    w, x, y, z = (q / q.norm(dim=-1, keepdim=True)).unbind(-1)
    return torch.stack(
        [
            torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            torch.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        dim=-2,
    )


def _projected(g: SplatTensors, camera: Camera) -> dict[str, torch.Tensor]:
    """Screen-space Gaussians: centres, conics (a, b, c), 3-sigma radii, depth, colour."""
    rotation = torch.from_numpy(camera.rotation).to(g.means)
    position = torch.from_numpy(camera.position).to(g.means)
    cam = (g.means - position) @ rotation.T
    z = cam[:, 2]
    front = z > 1e-6
    cam, z = cam[front], z[front]
    m = quat_to_matrix_torch(g.rotations[front]) * g.scales[front][:, None, :]
    sigma = rotation @ (m @ m.transpose(1, 2)) @ rotation.T
    f = camera.focal
    zero = torch.zeros_like(z)
    jac = torch.stack(
        [
            torch.stack([f / z, zero, -f * cam[:, 0] / z**2], -1),
            torch.stack([zero, f / z, -f * cam[:, 1] / z**2], -1),
        ],
        dim=-2,
    )
    cov = jac @ sigma @ jac.transpose(1, 2) + DILATION * torch.eye(2).to(z)
    a, b, c = cov[:, 0, 0], cov[:, 0, 1], cov[:, 1, 1]
    det = a * c - b * b
    mid = (a + c) / 2
    largest = mid + torch.sqrt(torch.clamp(mid * mid - det, min=0.0))
    centre = torch.tensor([camera.width / 2, camera.height / 2]).to(z)
    uv = f * cam[:, :2] / z[:, None] + centre
    arrays = {
        "uv": uv,
        "conic": torch.stack([c / det, -b / det, a / det], dim=1),
        "radius": 3.0 * torch.sqrt(largest),
        "depth": z,
        "opacity": g.opacities[front],
        "color": g.colors[front],
    }
    # Geometry is worked out in float64; float32 is plenty for the per-pixel compositing.
    return {k: v.float() for k, v in arrays.items()}


def _tile_pairs(p: dict[str, torch.Tensor], width: int, height: int) -> tuple[torch.Tensor, ...]:
    """(tile id, Gaussian index) pairs sorted by tile, then front to back within each tile."""
    tiles_x, tiles_y = -(-width // TILE), -(-height // TILE)
    uv, r = p["uv"].detach(), p["radius"].detach()
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
    order = torch.argsort(p["depth"].detach(), stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))
    key = tile * len(uv) + rank[index]
    sort = torch.argsort(key)
    return tile[sort], index[sort]


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one thread: a picture is a few mid-sized tensor operations, and on a busy
    machine torch's thread pool turned a 0.2 s render into 10 s."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def render(g: Gaussians, camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """RGB (h, w, 3) and alpha (h, w) images of the Gaussians, composited front to back."""
    with single_thread(), torch.no_grad():
        rgb, alpha = render_tensors(SplatTensors.of(g), camera)
    return rgb.double().numpy(), alpha.double().numpy()


def render_tensors(g: SplatTensors, camera: Camera) -> tuple[torch.Tensor, torch.Tensor]:
    """RGB (h, w, 3) and alpha (h, w) as float32 tensors, differentiable in every input.

    Every tile is composited at once: each tile's depth-sorted Gaussians are laid out in a
    (tiles, slots) table, CHUNK slots at a time and only for the tiles that still have some,
    so the work is a few large tensor operations rather than a Python loop over tiles.
    """
    width, height = camera.width, camera.height
    if not len(g.means):
        return torch.zeros(height, width, 3), torch.zeros(height, width)
    p = _projected(g, camera)
    tiles, index = _tile_pairs(p, width, height)
    tiles_x, tiles_y = -(-width // TILE), -(-height // TILE)
    n_tiles = tiles_x * tiles_y
    counts = torch.bincount(tiles, minlength=n_tiles)
    slot = torch.arange(len(tiles)) - (torch.cumsum(counts, 0) - counts)[tiles]
    # Pixel centres of every tile, row-major inside the tile: (tiles, TILE * TILE).
    ty, tx = torch.arange(n_tiles) // tiles_x, torch.arange(n_tiles) % tiles_x
    local = torch.arange(TILE * TILE)
    py = (ty[:, None] * TILE + local // TILE).float() + 0.5
    px = (tx[:, None] * TILE + local % TILE).float() + 0.5
    color = torch.zeros(n_tiles, TILE * TILE, 3)
    transmit = torch.ones(n_tiles, TILE * TILE)
    row_of_tile = torch.full((n_tiles,), -1, dtype=torch.long)
    for first in range(0, int(counts.max()), CHUNK):
        active = (counts > first).nonzero()[:, 0]  # tiles with Gaussians left at this depth
        row_of_tile[active] = torch.arange(len(active))
        chosen = (slot >= first) & (slot < first + CHUNK)
        table = torch.full((len(active), CHUNK), -1, dtype=torch.long)
        table[row_of_tile[tiles[chosen]], slot[chosen] - first] = index[chosen]
        which = table.clamp(min=0)
        dx = px[active][:, None, :] - p["uv"][which, 0][:, :, None]
        dy = py[active][:, None, :] - p["uv"][which, 1][:, :, None]
        a, b, c = (p["conic"][which, k][:, :, None] for k in range(3))
        power = a * dx * dx + 2 * b * dx * dy + c * dy * dy
        alpha = (p["opacity"][which][:, :, None] * torch.exp(-0.5 * power)).clamp(max=MAX_ALPHA)
        keep = (table >= 0)[:, :, None] & (power <= CUTOFF) & (alpha >= MIN_ALPHA)
        alpha = torch.where(keep, alpha, 0.0)
        through = torch.cumprod(1.0 - alpha, dim=1)
        before = torch.cat([torch.ones(len(active), 1, TILE * TILE), through[:, :-1]], 1)
        weight = alpha * before * transmit[active][:, None, :]
        color = color.index_add(0, active, torch.einsum("tsp,tsk->tpk", weight, p["color"][which]))
        transmit = transmit.index_copy(0, active, transmit[active] * through[:, -1])

    def image(per_tile: torch.Tensor) -> torch.Tensor:
        grid = per_tile.reshape(tiles_y, tiles_x, TILE, TILE, *per_tile.shape[2:])
        whole = grid.transpose(1, 2).reshape(tiles_y * TILE, tiles_x * TILE, *per_tile.shape[2:])
        return whole[:height, :width]

    return image(color), image(1.0 - transmit)


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
    return mesh_image(parts, camera)[1]


def mesh_image(parts: Sequence[PartMesh], camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Flat-coloured picture of the parts (h, w, 3; black where empty) and their silhouette.

    Each pixel takes the linear RGB colour of the nearest triangle over its centre (a depth
    buffer), which is what splats of that colour, composited over black, should reproduce.
    """
    rgb = np.zeros((camera.height, camera.width, 3))
    depth = np.full((camera.height, camera.width), np.inf)
    for part in parts:
        color = np.asarray(part.color[:3] if part.color is not None else DEFAULT_COLOR, float)
        uv, z = camera.project(part.vertices)
        tris = np.asarray(part.triangles, dtype=np.int64)
        tris = tris[(z[tris] > 1e-6).all(axis=1)]
        corners, depths = uv[tris], z[tris]
        low = np.floor(corners.min(axis=1) - 0.5).astype(int)
        high = np.ceil(corners.max(axis=1) - 0.5).astype(int)
        low = np.maximum(low, 0)
        high = np.minimum(high, [camera.width - 1, camera.height - 1])
        for (p0, p1, p2), zs, (x0, y0), (x1, y1) in zip(corners, depths, low, high, strict=True):
            if x1 < x0 or y1 < y0:
                continue
            area = (p1[0] - p0[0]) * (p2[1] - p0[1]) - (p1[1] - p0[1]) * (p2[0] - p0[0])
            if abs(area) < 1e-12:
                continue  # edge-on: its neighbours cover it
            ys, xs = np.mgrid[y0 : y1 + 1, x0 : x1 + 1] + 0.5
            # Barycentric weights of each pixel centre (w_k is the weight of corner k).
            w = [
                ((b[0] - a[0]) * (ys - a[1]) - (b[1] - a[1]) * (xs - a[0])) / area
                for a, b in ((p1, p2), (p2, p0), (p0, p1))
            ]
            inside = (w[0] >= 0) & (w[1] >= 0) & (w[2] >= 0)
            # Perspective-correct depth: 1/z interpolates linearly on screen.
            z_here = 1.0 / (w[0] / zs[0] + w[1] / zs[1] + w[2] / zs[2])
            window = (slice(y0, y1 + 1), slice(x0, x1 + 1))
            nearer = inside & (z_here < depth[window])
            depth[window] = np.where(nearer, z_here, depth[window])
            rgb[window][nearer] = color
    return rgb, np.isfinite(depth)


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
