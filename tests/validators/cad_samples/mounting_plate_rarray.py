# expect: {"volume_mm3": 73515.653, "solids": 1, "bbox_mm": [120.0, 80.0, 8.0], "kind": "part"}
# Mounting plate with a rectangular grid of clearance holes.
# analytic volume = (length*width - cols*rows*pi*(hole_d/2)^2) * thickness
length = 120.0
width = 80.0
thickness = 8.0
hole_d = 6.6
cols = 4
rows = 3
pitch_x = 25.0
pitch_y = 22.0

import cadquery as cq

result = (
    cq.Workplane("XY")
    .box(length, width, thickness)
    .faces(">Z")
    .workplane()
    .rarray(pitch_x, pitch_y, cols, rows)
    .hole(hole_d)
)
