"""The drop-test scene as MJCF text, built in memory (no files).

Units are millimetres, grams and seconds: gravity is 9810 mm/s². With SI units a small part's
inertia (kg·m²) falls below MuJoCo's 1e-15 floor; in g·mm² a 0.01 mm part still compiles.
Each part is a free body whose mass and inertia come from its real volume (set explicitly, so
the hull's volume never counts) and whose geoms are its convex pieces, for collision only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GRAVITY_MM_S2 = 9810.0
MAX_HULL_VERTICES = 256  # per piece: MuJoCo's own hull of a finely tessellated part stays cheap


@dataclass(frozen=True)
class Body:
    """One free body: centre of mass (scene frame), mass, inertia about it, collision pieces."""

    position: np.ndarray  # mm, (3,)
    mass: float  # g
    inertia: np.ndarray  # g·mm², (3, 3), about the centre of mass, scene axes
    pieces: list[np.ndarray]  # convex pieces' vertices, mm, scene frame


def scene_xml(bodies: list[Body], *, timestep_s: float, friction: float) -> str:
    """MJCF for the bodies resting over a ground plane at z = 0."""
    assets, worldbody = [], []
    for b, body in enumerate(bodies):
        geoms = []
        for p, vertices in enumerate(body.pieces):
            # Vertices only: MuJoCo takes their convex hull, in the body frame (centre of mass).
            local = np.asarray(vertices, dtype=np.float64) - body.position
            assets.append(
                f'<mesh name="b{b}p{p}" vertex="{_numbers(local.ravel())}" '
                f'maxhullvert="{MAX_HULL_VERTICES}"/>'
            )
            geoms.append(f'<geom type="mesh" mesh="b{b}p{p}"/>')
        i = body.inertia
        full = _numbers([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]])
        worldbody.append(
            f'<body name="b{b}" pos="{_numbers(body.position)}"><freejoint/>'
            f'<inertial pos="0 0 0" mass="{body.mass:.12g}" fullinertia="{full}"/>'
            f"{''.join(geoms)}</body>"
        )
    # Stiff contacts (5 ms time constant, impedance 0.99..0.999): a part sinks microns, not the
    # ~0.2 mm of MuJoCo's defaults, which would matter for small parts.
    return f"""<mujoco model="genservice-drop-test">
  <compiler inertiafromgeom="false" balanceinertia="true"/>
  <option timestep="{timestep_s:.6g}" gravity="0 0 -{GRAVITY_MM_S2}" integrator="implicitfast"/>
  <default>
    <geom condim="3" friction="{friction:.6g} 0.005 0.0001" solref="0.005 1"
          solimp="0.99 0.999 0.001"/>
  </default>
  <asset>
    {"".join(assets)}
  </asset>
  <worldbody>
    <geom name="ground" type="plane" size="0 0 1"/>
    {"".join(worldbody)}
  </worldbody>
</mujoco>
"""


def _numbers(values: np.ndarray | list[float]) -> str:
    return " ".join(f"{float(v):.12g}" for v in np.asarray(values).ravel())
