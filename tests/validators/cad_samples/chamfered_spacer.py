# expect: {"volume_mm3": 21157.915, "solids": 1, "bbox_mm": [40.0, 40.0, 15.0], "kind": "part"}
# Square spacer with chamfered vertical edges and a chamfered lead-in on the bore.
# analytic volume = side^2*h - 4*(c^2/2)*h - pi*r^2*h - 2*pi*(r + cb/3)*cb^2/2   (Pappus for the bore chamfer)
side = 40.0
height = 15.0
corner_chamfer = 4.0
bore_d = 14.0
bore_chamfer = 1.5

import cadquery as cq

result = (
    cq.Workplane("XY")
    .box(side, side, height)
    .edges("|Z")
    .chamfer(corner_chamfer)
    .faces(">Z")
    .workplane()
    .hole(bore_d)
    .faces(">Z")
    .edges("%CIRCLE")
    .chamfer(bore_chamfer)
)
