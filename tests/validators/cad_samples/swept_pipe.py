# expect: {"volume_mm3": 11182.401, "solids": 1, "bbox_mm": [78.0, 16.0, 78.0], "kind": "part"}
# Bent tube: annular section swept along a straight-bend-straight path.
# analytic volume = pi*(r_o^2 - r_i^2)*(rise + pi*bend_r/2 + run)   (Pappus: section area x path length)
tube_od = 16.0
tube_id = 12.0
rise = 40.0
bend_r = 30.0
run = 40.0

import cadquery as cq

path = (
    cq.Workplane("XZ")
    .vLine(rise)
    .tangentArcPoint((bend_r, bend_r))
    .hLine(run)
)

result = (
    cq.Workplane("XY")
    .circle(tube_od / 2)
    .circle(tube_id / 2)
    .sweep(path, transition="round")
)
