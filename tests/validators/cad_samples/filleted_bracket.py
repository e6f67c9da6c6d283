# expect: {"volume_mm3": 22057.128, "solids": 1, "bbox_mm": [60.0, 40.0, 45.0], "kind": "part"}
# Bent-sheet angle bracket: concentric bend radii, rounded leg corners, two holes per leg.
# analytic volume = (leg_a*t + (leg_b-t)*t + (1-pi/4)*(bend_r^2 - (bend_r+t)^2))*width - 4*(1-pi/4)*corner_r^2*t - 4*pi*(hole_d/2)^2*t
leg_a = 60.0
leg_b = 45.0
width = 40.0
thickness = 6.0
bend_r = 5.0
corner_r = 4.0
hole_d = 6.5
hole_pitch = 20.0

import cadquery as cq

# L-profile in the XZ plane (local x -> X, local y -> Z), extruded along +Y
profile = [
    (0.0, 0.0),
    (leg_a, 0.0),
    (leg_a, thickness),
    (thickness, thickness),
    (thickness, leg_b),
    (0.0, leg_b),
]
bracket = cq.Workplane("XZ").polyline(profile).close().extrude(-width)

# inside bend gets bend_r, outside bend gets bend_r + thickness (constant wall)
bracket = bracket.edges(cq.selectors.NearestToPointSelector((thickness, width / 2, thickness)))
bracket = bracket.fillet(bend_r)
bracket = bracket.edges(cq.selectors.NearestToPointSelector((0, width / 2, 0)))
bracket = bracket.fillet(bend_r + thickness)

# round the free corners of both legs
bracket = bracket.edges("|Z and >X").fillet(corner_r)
bracket = bracket.edges("|X and >Z").fillet(corner_r)

y0 = width / 2 - hole_pitch / 2
floor_holes = (
    cq.Workplane("XY")
    .pushPoints([(leg_a * 0.6, y0), (leg_a * 0.6, y0 + hole_pitch)])
    .circle(hole_d / 2)
    .extrude(thickness)
)
wall_holes = (
    cq.Workplane("YZ")
    .pushPoints([(y0, leg_b * 0.6), (y0 + hole_pitch, leg_b * 0.6)])
    .circle(hole_d / 2)
    .extrude(thickness)
)

result = bracket.cut(floor_holes).cut(wall_holes)
