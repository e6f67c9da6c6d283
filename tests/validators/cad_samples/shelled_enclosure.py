# expect: {"volume_mm3": 37062.5, "solids": 1, "bbox_mm": [90.0, 60.0, 35.0], "kind": "part"}
# Open-top electronics enclosure made by shelling a solid box inward.
# analytic volume = L*W*H - (L - 2*wall)*(W - 2*wall)*(H - wall)
box_l = 90.0
box_w = 60.0
box_h = 35.0
wall = 2.5

import cadquery as cq

result = cq.Workplane("XY").box(box_l, box_w, box_h).faces(">Z").shell(-wall)
