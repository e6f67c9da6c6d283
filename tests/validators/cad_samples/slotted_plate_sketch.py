# expect: {"volume_mm3": 31860.159, "solids": 1, "bbox_mm": [100.0, 60.0, 6.0], "kind": "part"}
# Adjustment plate from a cq.Sketch: rounded rectangle with two slots and four holes.
# analytic volume = (L*W - 4*(1-pi/4)*r_c^2 - 2*(slot_len*slot_w + pi*(slot_w/2)^2) - 4*pi*(hole_d/2)^2)*t
plate_l = 100.0
plate_w = 60.0
plate_t = 6.0
corner_r = 6.0
slot_len = 30.0
slot_w = 8.0
slot_offset_y = 15.0
hole_d = 5.0
hole_inset = 10.0

import cadquery as cq

hx = plate_l / 2 - hole_inset
hy = plate_w / 2 - hole_inset

sketch = (
    cq.Sketch()
    .rect(plate_l, plate_w)
    .vertices()
    .fillet(corner_r)
    .reset()
    .push([(0, slot_offset_y), (0, -slot_offset_y)])
    .slot(slot_len, slot_w, mode="s")
    .reset()
    .push([(hx, hy), (-hx, hy), (-hx, -hy), (hx, -hy)])
    .circle(hole_d / 2, mode="s")
)

result = cq.Workplane("XY").placeSketch(sketch).extrude(plate_t)
