# expect: {"volume_mm3": 35530.4, "solids": 2, "bbox_mm": [80.0, 50.0, 43.0], "kind": "assembly"}
# Two separate parts shown with show_object: a shelled box and its lid, exploded above it.
# analytic volume = [L*W*H - (L-2w)(W-2w)(H-w)] + L*W*lid_t + (l*w_ - (l-2*lip_t)*(w_-2*lip_t))*lip_h
box_l = 80.0
box_w = 50.0
box_h = 30.0
wall = 2.0
lid_t = 3.0
lip_h = 4.0
lip_t = 1.5
clearance = 0.2
explode_gap = 10.0

import cadquery as cq

base = (
    cq.Workplane("XY")
    .box(box_l, box_w, box_h, centered=(True, True, False))
    .faces(">Z")
    .shell(-wall)
)

lip_l = box_l - 2 * wall - 2 * clearance
lip_w = box_w - 2 * wall - 2 * clearance
lid = (
    cq.Workplane("XY")
    .box(box_l, box_w, lid_t, centered=(True, True, False))
    .faces("<Z")
    .workplane()
    .rect(lip_l, lip_w)
    .rect(lip_l - 2 * lip_t, lip_w - 2 * lip_t)
    .extrude(lip_h)
    .translate((0, 0, box_h + explode_gap))
)

show_object(base, name="base", options={"color": "steelblue"})
show_object(lid, name="lid", options={"color": "orange", "alpha": 0.3})
