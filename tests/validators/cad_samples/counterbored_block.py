# expect: {"volume_mm3": 75079.325, "solids": 1, "bbox_mm": [80.0, 50.0, 20.0], "kind": "part"}
# Clamp block: four counterbored M6 holes on a rectangle plus one central countersunk hole.
# analytic volume = box - 4*(pi*r_h^2*(H - cbore_depth) + pi*r_cb^2*cbore_depth) - (pi*r_csk^2*H + frustum(R_csk->r_csk, (R-r)/tan(angle/2)) - pi*r_csk^2*h_frustum)
block_l = 80.0
block_w = 50.0
block_h = 20.0
hole_d = 6.6
cbore_d = 11.0
cbore_depth = 6.5
hole_spacing_x = 56.0
hole_spacing_y = 30.0
csk_hole_d = 5.5
csk_d = 12.0
csk_angle = 90.0

import cadquery as cq

result = (
    cq.Workplane("XY")
    .box(block_l, block_w, block_h)
    .faces(">Z")
    .workplane()
    .rect(hole_spacing_x, hole_spacing_y, forConstruction=True)
    .vertices()
    .cboreHole(hole_d, cbore_d, cbore_depth)
    .faces(">Z")
    .workplane()
    .cskHole(csk_hole_d, csk_d, csk_angle)
)
