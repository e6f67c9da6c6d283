"""The physics checks of one part or scene, as the validator asks for them."""

from __future__ import annotations

import trimesh

from validators.physics.options import PhysicsOptions
from validators.physics.scene import floating_parts, interference, support
from validators.physics.stability import stability
from validators.report import Check


def physics_checks(
    parts: list[tuple[str, trimesh.Trimesh]],
    *,
    scene: bool,
    options: PhysicsOptions | None = None,
) -> dict[str, Check]:
    """`stability` always; for a scene also `interference`, `floating_parts` and `support`."""
    checks = {"stability": stability(parts, options)}
    if scene:
        checks["interference"] = interference(parts, options)
        checks["floating_parts"] = floating_parts(parts, options)
        checks["support"] = support(parts, options)
    return checks
