"""Thresholds of the physics and printability checks, checked when they are made."""

from __future__ import annotations

import math
from dataclasses import dataclass

DECOMPOSE_MODES = ("auto", "always", "never")
MIN_SETTLE_S = 1.5  # the drop test's nudge ends at 1.3 s (stability.PERTURB_END_S)


@dataclass(frozen=True)
class PhysicsOptions:
    """Drop-test, contact and input limits for `stability`, `interference`, `support`, ...

    Lengths are millimetres, times seconds. The drop test tilts gravity by `perturb_deg` for a
    moment (a gentle nudge), so an object that a 2° tilt of its table topples is unstable; the
    analytic check uses the same angle as its margin.
    """

    max_tilt_deg: float = 20.0  # final tilt of any part beyond this: unstable
    max_slide_mm: float = 5.0  # horizontal drift allowed whatever the size...
    max_slide_fraction: float = 0.25  # ...or this fraction of the part's largest extent
    settle_s: float = 3.0  # simulated time at most (the run stops early once all is at rest)
    timestep_s: float = 0.001
    density_kg_m3: float = 1240.0  # PLA
    friction: float = 0.5  # PLA on PLA or on a table
    perturb_deg: float = 2.0
    touch_tolerance_mm: float = 0.05  # closer than this counts as touching
    max_interference: float = 0.01  # overlap volume / the smaller part's volume
    max_parts: int = 200
    max_triangles: int = 200_000  # all parts together
    max_size_mm: float = 10_000.0  # larger scenes are a units mistake, not furniture
    decompose: str = "auto"  # auto: concave parts another part may touch; always; never
    max_pieces: int = 16  # convex pieces per concave part
    decompose_timeout_s: float = 10.0  # for all decompositions of one call together
    time_limit_s: float = 30.0  # wall-clock limit of one simulation

    def __post_init__(self) -> None:
        _positive(self, "max_tilt_deg", "max_slide_mm", "max_slide_fraction", "settle_s")
        _positive(self, "timestep_s", "density_kg_m3", "friction", "touch_tolerance_mm")
        _positive(self, "max_size_mm", "decompose_timeout_s", "time_limit_s")
        if self.max_tilt_deg >= 180:
            raise ValueError("PhysicsOptions.max_tilt_deg must be below 180, e.g. 20")
        if not 0 <= self.perturb_deg < 45:
            raise ValueError("PhysicsOptions.perturb_deg must be in [0, 45), e.g. 2")
        if self.timestep_s > 0.005:
            raise ValueError("PhysicsOptions.timestep_s must be at most 0.005 s, e.g. 0.001")
        if self.settle_s < MIN_SETTLE_S:
            raise ValueError(
                f"PhysicsOptions.settle_s must be at least {MIN_SETTLE_S} s, to outlast the "
                "drop test's nudge; 3 is the default"
            )
        if not 0 <= self.max_interference < 1:
            raise ValueError("PhysicsOptions.max_interference is a fraction in [0, 1), e.g. 0.01")
        _whole(self, "max_parts", "max_triangles", "max_pieces")
        if self.decompose not in DECOMPOSE_MODES:
            raise ValueError(f"PhysicsOptions.decompose must be one of {DECOMPOSE_MODES}")


@dataclass(frozen=True)
class PrintOptions:
    """FDM printability limits for `overhang`, `wall_thickness` and `build_volume`.

    `max_overhang_fraction` tolerates 5% of the surface: small horizontal holes (arches),
    bottom fillets and chamfers and the facets of curved undersides each add a few percent
    and print without supports; a part that needs supports has far more (a mushroom cap ~35%).
    """

    max_overhang_deg: float = 45.0  # from vertical: a vertical wall is 0°, a ceiling 90°
    min_wall_mm: float = 0.8  # two 0.4 mm nozzle widths
    build_volume_mm: tuple[float, float, float] = (220.0, 220.0, 250.0)
    max_overhang_fraction: float = 0.05
    max_triangles: int = 200_000

    def __post_init__(self) -> None:
        if not 0 < self.max_overhang_deg < 90:
            raise ValueError("PrintOptions.max_overhang_deg must be in (0, 90), e.g. 45")
        _positive(self, "min_wall_mm")
        volume = tuple(self.build_volume_mm)
        if len(volume) != 3 or not all(_finite_positive(v) for v in volume):
            raise ValueError("PrintOptions.build_volume_mm must be three positive sizes (x, y, z)")
        if not 0 <= self.max_overhang_fraction <= 1:
            raise ValueError("PrintOptions.max_overhang_fraction is a fraction in [0, 1]")
        _whole(self, "max_triangles")


def _finite_positive(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _positive(options: object, *names: str) -> None:
    for name in names:
        if not _finite_positive(getattr(options, name)):
            kind = type(options).__name__
            raise ValueError(f"{kind}.{name} must be a finite number > 0")


def _whole(options: object, *names: str) -> None:
    for name in names:
        value = getattr(options, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{type(options).__name__}.{name} must be a whole number >= 1")
