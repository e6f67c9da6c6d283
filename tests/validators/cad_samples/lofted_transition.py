# expect: {"volume_mm3": 113875.592, "solids": 1, "bbox_mm": [70.0, 70.0, 65.0], "kind": "part", "volume_source": "occt"}
# Duct transition: square base flange lofted into a round outlet.
flange_side = 70.0
flange_t = 5.0
inlet_w = 50.0
inlet_h = 40.0
outlet_d = 36.0
transition_len = 60.0

import cadquery as cq

flange = cq.Workplane("XY").rect(flange_side, flange_side).extrude(flange_t)

transition = (
    cq.Workplane("XY")
    .workplane(offset=flange_t)
    .rect(inlet_w, inlet_h)
    .workplane(offset=transition_len)
    .circle(outlet_d / 2)
    .loft(combine=True)
)

result = flange.union(transition)
