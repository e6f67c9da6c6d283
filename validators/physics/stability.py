"""Will it stand? A MuJoCo drop test, and a fast analytic reference that must agree with it.

Drop test: the scene (each part a free body) is lifted so its lowest point is GAP_MM above a
ground plane and let go. After it lands, gravity is tilted by `perturb_deg` and its direction
turned once round (a tilt table: quasi-static, so a resting object is nudged in every
direction), then set upright again and the scene settles. A part fails if it ends tilted more
than `max_tilt_deg` from its modelled orientation or moved horizontally more than
max(max_slide_mm, max_slide_fraction × its size). Without the nudge, a cone balanced on its tip
could stand in an exactly symmetric simulation. The scene is simulated scaled to SIM_SIZE_MM
across: rigid bodies with Coulomb friction stand or fall the same at any scale, and this way the
1 ms step, the contact stiffness and the nudge's timing suit a 1 mm clip and a 5 m shelf alike
(unscaled, a 10 m column topples too slowly to notice and a 0.1 mm pin sinks into the ground);
sim_time_s in the detail is time in that scaled scene, slide_mm is back in real millimetres.

Analytic: the centre of mass of the whole scene, projected onto the ground, must lie inside the
support polygon (convex hull of the points within a hair of the lowest point) by at least
com_height × tan(perturb_deg): exactly the condition for surviving the same tilt.

Score: 1 when stable; otherwise below 0.5, falling with how far past the limits it went.
"""

from __future__ import annotations

import logging
import math
import time

import mujoco
import numpy as np
import trimesh

from validators.physics.decompose import collision_shapes
from validators.physics.meshes import InputError, Part, hull_margin, never_raises, vet_scene
from validators.physics.mjcf import GRAVITY_MM_S2, Body, scene_xml
from validators.physics.options import PhysicsOptions
from validators.report import Check

GAP_MM = 0.1  # the drop: small enough to land without bouncing
DROP_S = 0.1  # fall the gap and come to rest
RAMP_S = 0.2  # tilt gravity in smoothly: a sudden tilt would rock the part past the angle
TURN_S = 0.8  # one full turn of the tilt direction
PERTURB_END_S = DROP_S + RAMP_S + TURN_S + RAMP_S
REST_S = 0.1  # everything slower than the rest speeds this long: stop early
REST_MM_S = 1.0
REST_RAD_S = 0.02
REACH_FRACTION = 0.1  # parts within this fraction of a part's size may touch it in the test
SIM_SIZE_MM = 100.0  # the simulated scene's largest extent

logger = logging.getLogger(__name__)


def _log_mujoco_warning(message: str) -> None:
    """Send MuJoCo's warnings to the log; its default handler writes MUJOCO_LOG.TXT to the cwd."""
    logger.debug("MuJoCo: %s", message)


# An unstable candidate is a finding, counted in MjData.warning and judged by _simulate; without
# this, every `genservice generate` that met one would leave a log file in the user's folder.
mujoco.set_mju_user_warning(_log_mujoco_warning)


@never_raises
def stability(
    parts: list[tuple[str, trimesh.Trimesh]], options: PhysicsOptions | None = None
) -> Check:
    """Drop the parts on the ground in MuJoCo, nudge them, and see whether they stay put."""
    options = options or PhysicsOptions()
    vetted = vet_scene(parts, options)
    reach = REACH_FRACTION * max(part.size for part in vetted)
    shapes = collision_shapes(
        vetted,
        mode=options.decompose,
        max_pieces=options.max_pieces,
        timeout_s=options.decompose_timeout_s,
        reach_mm=reach,
    )
    size = float(np.ptp([part.mesh.bounds for part in vetted], axis=(0, 1)).max())
    scale = SIM_SIZE_MM / size
    density = options.density_kg_m3 * 1e-6  # g/mm³
    lift = np.array([0.0, 0.0, GAP_MM])
    bodies = [
        Body(
            position=np.asarray(part.mesh.center_mass) * scale + lift,
            mass=part.volume * density * scale**3,
            # trimesh: about the centre of mass, per unit density, from the real volume
            inertia=np.asarray(part.mesh.moment_inertia) * density * scale**5,
            pieces=[piece * scale + lift for piece in shape.pieces],
        )
        for part, shape in zip(vetted, shapes, strict=True)
    ]
    xml = scene_xml(bodies, timestep_s=options.timestep_s, friction=options.friction)
    try:
        model = mujoco.MjModel.from_xml_string(xml)
    except ValueError as exc:
        raise InputError(f"MuJoCo cannot build the scene (a part too small?): {exc}") from exc
    start, end, sim_time, problem = _simulate(model, options)

    x, y = end[:, 4], end[:, 5]  # quaternion w, x, y, z at 3..6: R[2, 2] = 1 - 2(x² + y²)
    tilts = np.degrees(np.arccos(np.clip(1 - 2 * (x**2 + y**2), -1.0, 1.0)))
    slides = np.linalg.norm(end[:, :2] - start[:, :2], axis=1) / scale  # back to real mm
    limits = np.array(
        [max(options.max_slide_mm, options.max_slide_fraction * part.size) for part in vetted]
    )
    badness = np.maximum(tilts / options.max_tilt_deg, slides / limits)
    unstable = [
        {
            "name": part.name,
            "tilt_deg": float(tilt),
            "slide_mm": float(slide),
            "slide_limit_mm": float(limit),
        }
        for part, tilt, slide, limit, bad in zip(
            vetted, tilts, slides, limits, badness, strict=True
        )
        if not bad <= 1
    ]
    passed = problem is None and not unstable
    worst = float(np.max(badness))
    score = 0.0 if problem or not math.isfinite(worst) else (1.0 if passed else 0.5 / worst)
    detail = {
        "tilt_deg": float(np.max(tilts)),
        "slide_mm": float(np.max(slides)),
        "sim_time_s": round(sim_time, 4),
        "mass_g": sum(part.volume for part in vetted) * density,
        "pieces": {
            part.name: len(shape.pieces) for part, shape in zip(vetted, shapes, strict=True)
        },
        "collision": {part.name: shape.method for part, shape in zip(vetted, shapes, strict=True)},
        "unstable_parts": unstable[:20],
        "max_tilt_deg": options.max_tilt_deg,
        "max_slide_mm": options.max_slide_mm,
        "max_slide_fraction": options.max_slide_fraction,
        "perturb_deg": options.perturb_deg,
        "sim_scale": scale,
    }
    if problem:
        detail["reason"] = problem
    return Check(score, passed, detail)


def _simulate(
    model: mujoco.MjModel, options: PhysicsOptions
) -> tuple[np.ndarray, np.ndarray, float, str | None]:
    """Free-joint states (n, 7) at the start and end, simulated time, and what went wrong."""
    data = mujoco.MjData(model)
    start = data.qpos.reshape(-1, 7).copy()
    steps = round(options.settle_s / options.timestep_s)
    need_rest = max(1, round(REST_S / options.timestep_s))
    at_rest = 0
    deadline = time.monotonic() + options.time_limit_s
    tilt = math.radians(options.perturb_deg)
    for step in range(steps):
        model.opt.gravity[:] = gravity_at(data.time, tilt)
        mujoco.mj_step(model, data)
        # MuJoCo resets a diverged state to the start, so a blow-up would look perfectly stable.
        if (
            data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number
            or not np.isfinite(data.qpos).all()
        ):
            return start, start, data.time, "the simulation diverged (parts interpenetrate?)"
        if step % 100 == 0 and time.monotonic() > deadline:
            problem = f"the simulation ran past time_limit_s={options.time_limit_s:g}"
            return start, data.qpos.reshape(-1, 7).copy(), data.time, problem
        if data.time > PERTURB_END_S:
            speeds = data.qvel.reshape(-1, 6)
            calm = (
                np.abs(speeds[:, :3]).max() < REST_MM_S and np.abs(speeds[:, 3:]).max() < REST_RAD_S
            )
            at_rest = at_rest + 1 if calm else 0
            if at_rest >= need_rest:
                break
    return start, data.qpos.reshape(-1, 7).copy(), data.time, None


def gravity_at(t: float, tilt_rad: float) -> np.ndarray:
    """Gravity (mm/s²) at time t: upright, then tilted by tilt_rad and turned once, upright."""
    s = t - DROP_S
    phase, angle = 0.0, 0.0
    if 0 < s < RAMP_S:
        angle = tilt_rad * _smoothstep(s / RAMP_S)
    elif RAMP_S <= s < RAMP_S + TURN_S:
        angle, phase = tilt_rad, 2 * math.pi * (s - RAMP_S) / TURN_S
    elif RAMP_S + TURN_S <= s < 2 * RAMP_S + TURN_S:
        angle = tilt_rad * _smoothstep((2 * RAMP_S + TURN_S - s) / RAMP_S)
    return GRAVITY_MM_S2 * np.array(
        [math.sin(angle) * math.cos(phase), math.sin(angle) * math.sin(phase), -math.cos(angle)]
    )


def _smoothstep(x: float) -> float:
    return x * x * (3 - 2 * x)


@never_raises
def stability_analytic(
    parts: list[tuple[str, trimesh.Trimesh]], options: PhysicsOptions | None = None
) -> Check:
    """Fast reference: the scene's centre of mass lies over its support polygon, with a margin."""
    options = options or PhysicsOptions()
    vetted = vet_scene(parts, options)
    com = _centre_of_mass(vetted)
    points = np.concatenate([np.asarray(part.mesh.vertices) for part in vetted])
    size = float(np.ptp(points, axis=0).max())
    # A hair above the lowest point (scene starts at z = 0): float noise of a flat face, no more,
    # so a cylinder resting on one edge of its tessellation has a line, not a strip, of support.
    band = max(1e-3, 1e-4 * size)
    support = points[points[:, 2] <= band][:, :2]
    margin = float(com[2]) * math.tan(math.radians(options.perturb_deg))
    inside = hull_margin(support, com[:2])
    passed = inside >= margin
    half_width = max(float(np.ptp(points[:, :2], axis=0).max()) / 2, 1e-9)
    score = 1.0 if passed else 0.5 * float(np.clip(1 + min(inside, 0.0) / half_width, 0, 1))
    return Check(
        score,
        passed,
        {
            "com_mm": [float(v) for v in com],
            "support_margin_mm": inside,
            "required_margin_mm": margin,
            "support_points": len(support),
            "band_mm": band,
            "perturb_deg": options.perturb_deg,
        },
    )


def _centre_of_mass(parts: list[Part]) -> np.ndarray:
    volumes = np.array([part.volume for part in parts])
    centres = np.array([part.mesh.center_mass for part in parts])
    return np.asarray((volumes[:, None] * centres).sum(axis=0) / volumes.sum())
