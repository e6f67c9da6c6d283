# expect: {"volume_mm3": 47081.34, "solids": 1, "bbox_mm": [80.0, 80.0, 24.0], "kind": "part"}
# Cross fitting from a boolean union of two equal cylinders, then a through bore cut along X.
# analytic volume = 2*pi*r^2*L - 16*r^3/3 (Steinmetz overlap) - pi*r_bore^2*L
pipe_r = 12.0
arm_len = 80.0
bore_r = 8.0

import cadquery as cq

run_x = cq.Workplane("YZ").circle(pipe_r).extrude(arm_len / 2, both=True)
run_y = cq.Workplane("XZ").circle(pipe_r).extrude(arm_len / 2, both=True)
bore_x = cq.Workplane("YZ").circle(bore_r).extrude(arm_len / 2, both=True)

result = run_x.union(run_y).cut(bore_x)
