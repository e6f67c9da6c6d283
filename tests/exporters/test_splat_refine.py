"""Splat refinement: renders are differentiable, the fit gets closer to unseen views of the part,
and the GPU rasteriser (gsplat) agrees with the CPU renderer it is checked against."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import trimesh

from exporters.export import ExportOptions
from exporters.parts import PartMesh
from exporters.splat import gaussians_from_parts
from exporters.splat_refine import choose_backend, psnr, refine_splats, ssim
from exporters.splat_render import (
    SplatTensors,
    bounding_sphere,
    look_at_cameras,
    mesh_image,
    mesh_mask,
    render,
    render_tensors,
)

RED, BLUE = (0.8, 0.1, 0.1, 1.0), (0.1, 0.2, 0.9, 1.0)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _part(mesh: trimesh.Trimesh, color: tuple[float, ...] = RED, name: str = "p") -> PartMesh:
    return PartMesh(name, np.asarray(mesh.vertices), np.asarray(mesh.faces), None, color)


def _block_with_peg() -> PartMesh:
    peg = trimesh.creation.cylinder(radius=4, height=14, sections=24)
    return _part(trimesh.util.concatenate([trimesh.creation.box((30, 20, 6)), peg]))


def test_render_tensors_matches_render_and_carries_gradients() -> None:
    part = _block_with_peg()
    g = gaussians_from_parts([part], count=400)
    camera = look_at_cameras(*bounding_sphere([part]), n_views=3, size=32)[2]
    plain_rgb, plain_alpha = render(g, camera)
    tensors = SplatTensors.of(g)
    means = tensors.means.clone().requires_grad_(True)
    rgb, alpha = render_tensors(
        SplatTensors(means, tensors.scales, tensors.rotations, tensors.opacities, tensors.colors),
        camera,
    )
    np.testing.assert_allclose(rgb.detach().numpy(), plain_rgb, atol=1e-5)
    np.testing.assert_allclose(alpha.detach().numpy(), plain_alpha, atol=1e-5)
    alpha.sum().backward()
    assert means.grad is not None and torch.isfinite(means.grad).all()
    assert means.grad.abs().sum() > 0  # moving a Gaussian changes the coverage


def test_mesh_image_keeps_the_nearer_part_and_its_colour() -> None:
    back = _part(trimesh.creation.box((20, 20, 2)), BLUE, "back")
    front = _part(trimesh.creation.box((6, 6, 2)).apply_translation((0, 0, 10)), RED, "front")
    (camera,) = look_at_cameras(*bounding_sphere([back, front]), n_views=1, size=48)  # above
    rgb, mask = mesh_image([back, front], camera)
    assert mask.sum() > 0 and np.array_equal(mask, mesh_mask([back, front], camera))
    middle = rgb[24, 24]
    np.testing.assert_allclose(middle, RED[:3])  # the small box is nearer the camera
    assert (np.abs(rgb[mask] - BLUE[:3]).sum(axis=1) < 1e-9).mean() > 0.5  # the rest is blue
    assert not rgb[~mask].any()  # black where there is no part


def test_refinement_gets_closer_to_views_it_never_saw() -> None:
    part = _block_with_peg()
    g = gaussians_from_parts([part], count=600)
    seen: list[tuple[int, int]] = []
    result = refine_splats(
        g, [part], steps=16, views=4, size=40, progress=lambda d, t: seen.append((d, t))
    )
    assert result.backend == "torch" and result.device == "cpu" and result.steps == 16
    assert seen[-1] == (16, 16)
    assert result.gaussians.count == g.count
    assert not np.allclose(result.gaussians.means, g.means)
    assert result.after["psnr"] > result.before["psnr"]
    assert result.after["silhouette_iou"] >= result.before["silhouette_iou"]
    for key in ("psnr", "ssim", "silhouette_iou"):
        assert np.isfinite(result.after[key])
    assert result.gaussians.opacities.min() > 0 and result.gaussians.opacities.max() < 1
    summary = result.to_dict()
    assert summary["before"] == result.before and summary["count"] == 600


def test_zero_steps_change_nothing_and_bad_requests_say_why() -> None:
    part = _block_with_peg()
    g = gaussians_from_parts([part], count=200)
    same = refine_splats(g, [part], steps=0, views=3, size=24)
    np.testing.assert_allclose(same.gaussians.means, g.means, atol=1e-5)
    assert same.before == same.after
    with pytest.raises(ValueError, match="between 0 and"):
        refine_splats(g, [part], steps=-1)
    with pytest.raises(ValueError, match="CUDA only"):
        choose_backend("gsplat", "cpu")
    with pytest.raises(ValueError, match="unknown splat backend"):
        choose_backend("vulkan", "cpu")
    assert choose_backend("auto", "cpu") == "torch"
    with pytest.raises(ValueError, match="between 0 and 10,000"):
        ExportOptions(formats=("ply",), splat_refine=20_000)


def test_image_metrics() -> None:
    image = torch.rand(32, 32, 3, generator=torch.Generator().manual_seed(0))
    assert psnr(image, image) == 100.0 and ssim(image, image) == pytest.approx(1.0, abs=1e-5)
    noisy = (image + 0.1).clamp(0, 1)
    assert 15 < psnr(noisy, image) < 30 and ssim(noisy, image) < 0.99


@pytest.mark.gpu
@needs_cuda
def test_gsplat_agrees_with_the_cpu_renderer_and_refines_on_cuda() -> None:
    from exporters.splat_refine import gsplat_rasterizer

    part = _block_with_peg()
    g = gaussians_from_parts([part], count=2000)
    cameras = look_at_cameras(*bounding_sphere([part]), n_views=4, size=64)
    gpu = gsplat_rasterizer("cuda")
    tensors = SplatTensors.of(g)
    on_gpu = SplatTensors(*(t.float().cuda() for t in vars(tensors).values()))
    for camera in cameras:
        cpu_rgb, cpu_alpha = render(g, camera)
        rgb, alpha = gpu(on_gpu, camera)
        assert psnr(rgb.cpu().clamp(0, 1), torch.from_numpy(cpu_rgb).float()) > 35
        assert np.abs(alpha.cpu().numpy() - cpu_alpha).mean() < 0.01
    result = refine_splats(g, [part], steps=100, device="cuda", views=6, size=64)
    assert result.backend == "gsplat"
    assert result.after["psnr"] > result.before["psnr"]
