"""Physical plausibility on the host, on trusted meshes (mm, Z up): will it stand, do the parts
fit together, can it be printed. Every check returns a `Check`, never raises, in bounded time.
"""

from validators.physics.checks import physics_checks
from validators.physics.options import PhysicsOptions, PrintOptions
from validators.physics.printability import (
    build_volume,
    overhang,
    printability_checks,
    wall_thickness,
)
from validators.physics.scene import floating_parts, interference, support
from validators.physics.stability import stability, stability_analytic

__all__ = [
    "PhysicsOptions",
    "PrintOptions",
    "build_volume",
    "floating_parts",
    "interference",
    "overhang",
    "physics_checks",
    "printability_checks",
    "stability",
    "stability_analytic",
    "support",
    "wall_thickness",
]
