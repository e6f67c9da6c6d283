# expect: {"volume_mm3": 18614.941, "solids": 1, "bbox_mm": [52.0, 47.822, 10.0], "kind": "part", "volume_source": "occt"}
# Plate cam: closed periodic spline through lobe points, with a keyed shaft bore.
base_r = 20.0
lift = 12.0
cam_t = 10.0
shaft_d = 10.0
key_w = 3.0
key_depth = 1.5

import math

import cadquery as cq

# radius as a function of angle: a smooth single-lobe cam law
pts = []
for i in range(12):
    a = 2 * math.pi * i / 12
    r = base_r + lift * (0.5 - 0.5 * math.cos(a)) ** 2
    pts.append((r * math.cos(a), r * math.sin(a)))

cam = cq.Workplane("XY").spline(pts, periodic=True).close().extrude(cam_t)

keyed_bore = (
    cq.Workplane("XY")
    .circle(shaft_d / 2)
    .extrude(cam_t)
    .union(
        cq.Workplane("XY")
        .center(shaft_d / 2, 0)
        .rect(2 * key_depth, key_w)
        .extrude(cam_t)
    )
)

result = cam.cut(keyed_bore)
