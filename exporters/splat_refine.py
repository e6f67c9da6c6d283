"""Splat refinement: fit the Gaussians sampled from a part's surface to pictures of that part.

Splats written straight from geometry (`exporters.splat.gaussians_from_parts`) are flat discs
of a fixed size: they leave gaps and fuzz at silhouettes and thin features. Refinement treats
them as a starting point and optimises every Gaussian's position, scale, rotation, opacity and
colour with Adam so that their renders match flat-coloured renders of the mesh
(`splat_render.mesh_image`) from a ring of cameras around the part: an L1 photometric loss plus
an L1 silhouette loss (splat alpha against mesh coverage).

Two rasterisers, one camera model (OpenCV pinhole, pixel centres at +0.5, the 3DGS EWA kernel
with 0.3 px² dilation):
- `gsplat` (CUDA only; its kernels JIT-compile on first use) on a GPU worker;
- the project's pure-torch tile renderer (`splat_render.render_tensors`) on the CPU, which is
  also the reference the gsplat path is checked against. It is slow: about a second per
  128 x 128 view and step for a few thousand Gaussians on one core, so refinement is off by
  default and meant for GPU workers (`genservice export --splat-refine N`).

Quality is measured on views the optimisation never saw (the same ring, turned half a step):
PSNR and SSIM of the colour picture, and silhouette IoU, before and after.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from exporters.parts import PartMesh
from exporters.splat import Gaussians
from exporters.splat_render import (
    DILATION,
    Camera,
    SplatTensors,
    bounding_sphere,
    look_at_cameras,
    mesh_image,
    render_tensors,
    single_thread,
)

MAX_STEPS = 10_000
BACKENDS = ("auto", "gsplat", "torch")
SILHOUETTE_WEIGHT = 1.0
# Adam step sizes, as in 3DGS: positions scale with the part's size, the rest are unitless.
LR_MEANS = 2e-4  # x the bounding-sphere radius
LR_LOG_SCALES = 5e-3
LR_QUATS = 1e-3
LR_OPACITY = 5e-2
LR_COLOR = 5e-3
PROBABILITY_EPS = 1e-4


@dataclass(frozen=True)
class Refinement:
    """The refined Gaussians with the quality before and after on held-out views."""

    gaussians: Gaussians
    before: dict[str, float]
    after: dict[str, float]
    steps: int
    seconds: float
    backend: str
    device: str
    losses: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the Gaussians)."""
        return {
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "backend": self.backend,
            "device": self.device,
            "count": self.gaussians.count,
            "before": self.before,
            "after": self.after,
            "first_loss": self.losses[0] if self.losses else None,
            "last_loss": self.losses[-1] if self.losses else None,
        }


def choose_backend(backend: str, device: str) -> str:
    """'gsplat' on a CUDA device when gsplat imports, else 'torch' (ValueError if impossible)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown splat backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    cuda = torch.device(device).type == "cuda"
    if backend == "torch":
        if cuda:
            raise ValueError("the torch splat renderer runs on the CPU only; use device cpu")
        return "torch"
    if backend == "gsplat" and not cuda:
        raise ValueError("gsplat rasterises on CUDA only (gsplat has no CPU rasteriser)")
    if cuda:
        try:
            import gsplat  # noqa: F401
        except ImportError as exc:
            raise ValueError(f"refining on {device} needs gsplat: {exc}") from exc
        return "gsplat"
    return "torch"


def refine_splats(
    gaussians: Gaussians,
    parts: Sequence[PartMesh],
    steps: int,
    device: str = "cpu",
    views: int = 8,
    size: int = 128,
    backend: str = "auto",
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Refinement:
    """Optimise the Gaussians against `views` flat-coloured renders of the parts for `steps`."""
    if not 0 <= steps <= MAX_STEPS:
        raise ValueError(f"splat refinement steps must be between 0 and {MAX_STEPS}, not {steps}")
    if gaussians.count < 1:
        raise ValueError("there are no Gaussians to refine")
    backend = choose_backend(backend, device)
    # The CPU renderer's tensors are mid-sized: torch's thread pool only adds contention there.
    with single_thread() if backend == "torch" else contextlib.nullcontext():
        return _refine(gaussians, parts, steps, device, views, size, backend, seed, progress)


def _refine(
    gaussians: Gaussians,
    parts: Sequence[PartMesh],
    steps: int,
    device: str,
    views: int,
    size: int,
    backend: str,
    seed: int,
    progress: Callable[[int, int], None] | None,
) -> Refinement:
    started = time.perf_counter()
    center, radius = bounding_sphere(parts)
    train = look_at_cameras(center, radius, views, size)
    held_out = look_at_cameras(center, radius, views, size, azimuth_offset=math.pi / views)
    rasterize = gsplat_rasterizer(device) if backend == "gsplat" else _torch_rasterizer()
    targets = [_target(parts, camera, device) for camera in train]
    held_out_targets = [_target(parts, camera, device) for camera in held_out]

    params = _Parameters.of(gaussians, device)
    before = _quality(rasterize, params.splats(), held_out, held_out_targets)
    optimizer = torch.optim.Adam(
        [
            {"params": [params.means], "lr": LR_MEANS * radius},
            {"params": [params.log_scales], "lr": LR_LOG_SCALES},
            {"params": [params.quats], "lr": LR_QUATS},
            {"params": [params.opacity_logits], "lr": LR_OPACITY},
            {"params": [params.color_logits], "lr": LR_COLOR},
        ],
        eps=1e-15,
    )
    order = np.random.default_rng(seed).permutation(max(steps, 1)) % len(train)
    losses: list[float] = []
    for step in range(steps):
        view = int(order[step])
        rgb, alpha = rasterize(params.splats(), train[view])
        want_rgb, want_mask = targets[view]
        loss = (rgb - want_rgb).abs().mean()
        loss = loss + SILHOUETTE_WEIGHT * (alpha - want_mask).abs().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step + 1, steps)
    after = _quality(rasterize, params.splats(), held_out, held_out_targets)
    return Refinement(
        gaussians=params.splats().to_gaussians(),
        before=before,
        after=after,
        steps=steps,
        seconds=time.perf_counter() - started,
        backend=backend,
        device=device,
        losses=losses,
    )


# --- parameters ---------------------------------------------------------------------------


@dataclass
class _Parameters:
    """Unconstrained leaves: log scales, and logits for opacity and colour (kept in (0, 1))."""

    means: torch.Tensor
    log_scales: torch.Tensor
    quats: torch.Tensor
    opacity_logits: torch.Tensor
    color_logits: torch.Tensor

    @classmethod
    def of(cls, g: Gaussians, device: str) -> _Parameters:
        def leaf(array: np.ndarray) -> torch.Tensor:
            tensor = torch.tensor(np.asarray(array, dtype=np.float32), device=device)
            return tensor.requires_grad_(True)

        def logit(p: np.ndarray) -> np.ndarray:
            p = np.clip(np.asarray(p, dtype=np.float64), PROBABILITY_EPS, 1 - PROBABILITY_EPS)
            return np.log(p / (1 - p))

        return cls(
            means=leaf(g.means),
            log_scales=leaf(np.log(np.maximum(g.scales, 1e-12))),
            quats=leaf(g.rotations),
            opacity_logits=leaf(logit(g.opacities)),
            color_logits=leaf(logit(g.colors)),
        )

    def splats(self) -> SplatTensors:
        """The Gaussians these parameters describe (differentiable)."""
        return SplatTensors(
            means=self.means,
            scales=self.log_scales.exp(),
            rotations=self.quats,
            opacities=torch.sigmoid(self.opacity_logits),
            colors=torch.sigmoid(self.color_logits),
        )


# --- rasterisers --------------------------------------------------------------------------

Rasterizer = Callable[[SplatTensors, Camera], tuple[torch.Tensor, torch.Tensor]]


def _torch_rasterizer() -> Rasterizer:
    """The CPU tile renderer (float32 compositing, autograd through every input)."""
    return render_tensors


def gsplat_rasterizer(device: str) -> Rasterizer:
    """gsplat's CUDA rasteriser with the same camera model and kernel as the CPU renderer."""
    from gsplat import rasterization

    def rasterize(g: SplatTensors, camera: Camera) -> tuple[torch.Tensor, torch.Tensor]:
        viewmat = torch.eye(4, device=device)
        rotation = torch.tensor(camera.rotation, dtype=torch.float32, device=device)
        position = torch.tensor(camera.position, dtype=torch.float32, device=device)
        viewmat[:3, :3] = rotation
        viewmat[:3, 3] = -rotation @ position
        k = torch.tensor(
            [
                [camera.focal, 0.0, camera.width / 2],
                [0.0, camera.focal, camera.height / 2],
                [0.0, 0.0, 1.0],
            ],
            dtype=torch.float32,
            device=device,
        )
        colors, alphas, _ = rasterization(
            means=g.means.float(),
            quats=g.rotations.float(),
            scales=g.scales.float(),
            opacities=g.opacities.float(),
            colors=g.colors.float(),
            viewmats=viewmat[None],
            Ks=k[None],
            width=camera.width,
            height=camera.height,
            near_plane=1e-6,
            eps2d=DILATION,
            rasterize_mode="classic",
        )
        return colors[0], alphas[0, ..., 0]

    return rasterize


def _target(
    parts: Sequence[PartMesh], camera: Camera, device: str
) -> tuple[torch.Tensor, torch.Tensor]:
    rgb, mask = mesh_image(parts, camera)
    return (
        torch.tensor(rgb, dtype=torch.float32, device=device),
        torch.tensor(mask, dtype=torch.float32, device=device),
    )


# --- quality ------------------------------------------------------------------------------


def _quality(
    rasterize: Rasterizer,
    splats: SplatTensors,
    cameras: Sequence[Camera],
    targets: Sequence[tuple[torch.Tensor, torch.Tensor]],
) -> dict[str, float]:
    """Mean PSNR (dB), SSIM and silhouette IoU over the views."""
    psnrs, ssims, ious = [], [], []
    with torch.no_grad():
        for camera, (want_rgb, want_mask) in zip(cameras, targets, strict=True):
            rgb, alpha = rasterize(splats, camera)
            rgb = rgb.clamp(0, 1).float().cpu()
            want = want_rgb.float().cpu()
            psnrs.append(psnr(rgb, want))
            ssims.append(ssim(rgb, want))
            covered, mesh = alpha.cpu() > 0.5, want_mask.cpu() > 0.5
            union = int((covered | mesh).sum())
            ious.append(int((covered & mesh).sum()) / union if union else 1.0)
    return {
        "psnr": round(float(np.mean(psnrs)), 3),
        "ssim": round(float(np.mean(ssims)), 4),
        "silhouette_iou": round(float(np.mean(ious)), 4),
    }


def psnr(image: torch.Tensor, reference: torch.Tensor) -> float:
    """Peak signal-to-noise ratio (dB) of two images in [0, 1]."""
    mse = float(((image - reference) ** 2).mean())
    return 100.0 if mse <= 1e-10 else 10.0 * math.log10(1.0 / mse)


def ssim(image: torch.Tensor, reference: torch.Tensor) -> float:
    """Structural similarity of two (h, w, 3) images in [0, 1]: 11 x 11 Gaussian window,
    sigma 1.5, averaged over pixels and channels (Wang et al. 2004)."""
    import torch.nn.functional as F

    c1, c2 = 0.01**2, 0.03**2
    offsets = torch.arange(11, dtype=torch.float32) - 5
    g = torch.exp(-(offsets**2) / (2 * 1.5**2))
    g = g / g.sum()
    window = (g[:, None] * g[None, :]).expand(3, 1, 11, 11).contiguous()

    def blur(x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, window, padding=5, groups=3)

    x = image.permute(2, 0, 1)[None].float()
    y = reference.permute(2, 0, 1)[None].float()
    mx, my = blur(x), blur(y)
    vx, vy, cov = blur(x * x) - mx**2, blur(y * y) - my**2, blur(x * y) - mx * my
    value = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
    return float(value.mean())
