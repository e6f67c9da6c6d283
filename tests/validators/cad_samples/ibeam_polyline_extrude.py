# expect: {"volume_mm3": 192000.0, "solids": 1, "bbox_mm": [60.0, 80.0, 150.0], "kind": "part"}
# I-beam section: half profile as a polyline, mirrored about Y, extruded to length.
# analytic volume = (2*flange_w*flange_t + (depth - 2*flange_t)*web_t)*length
flange_w = 60.0
depth = 80.0
flange_t = 8.0
web_t = 5.0
length = 150.0

import cadquery as cq

half = [
    (0.0, -depth / 2),
    (flange_w / 2, -depth / 2),
    (flange_w / 2, -depth / 2 + flange_t),
    (web_t / 2, -depth / 2 + flange_t),
    (web_t / 2, depth / 2 - flange_t),
    (flange_w / 2, depth / 2 - flange_t),
    (flange_w / 2, depth / 2),
    (0.0, depth / 2),
]

result = cq.Workplane("XY").polyline(half).mirrorY().extrude(length)
