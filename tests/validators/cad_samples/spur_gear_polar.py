# expect: {"volume_mm3": 39071.517, "solids": 1, "bbox_mm": [80.0, 80.0, 10.0], "kind": "part"}
# Gear-like wheel: rectangular teeth placed with polarArray, unioned to a root disc, bored.
# analytic volume = (pi*R^2 + n*(w*r_tip - (a*sqrt(R^2-a^2) + R^2*asin(a/R))) - pi*r_bore^2)*t, a = w/2
root_d = 64.0
tooth_count = 20
tooth_w = 5.0
tooth_h = 8.0
tooth_embed = 2.0
gear_t = 10.0
bore_d = 12.0

import cadquery as cq

root_r = root_d / 2
radial_len = tooth_h + tooth_embed
tooth_centre_r = root_r - tooth_embed + radial_len / 2

disc = cq.Workplane("XY").circle(root_r).extrude(gear_t)
teeth = (
    cq.Workplane("XY")
    .polarArray(tooth_centre_r, 0, 360, tooth_count)
    .rect(radial_len, tooth_w)
    .extrude(gear_t)
)

result = disc.union(teeth).faces(">Z").workplane().hole(bore_d)
