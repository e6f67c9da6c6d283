# expect: {"volume_mm3": 86651.409, "solids": 1, "bbox_mm": [100.0, 100.0, 22.0], "kind": "part"}
# Pipe flange: disc with a raised hub, centre bore and a polar bolt-hole pattern.
# analytic volume = pi*(R^2 - r_bore^2)*flange_t + pi*(r_hub^2 - r_bore^2)*hub_h - bolt_count*pi*r_bolt^2*flange_t
outer_d = 100.0
flange_t = 12.0
hub_d = 56.0
hub_h = 10.0
bore_d = 40.0
bolt_circle_d = 78.0
bolt_count = 6
bolt_hole_d = 9.0

import cadquery as cq

flange = (
    cq.Workplane("XY")
    .circle(outer_d / 2)
    .extrude(flange_t)
    .faces(">Z")
    .workplane()
    .polarArray(bolt_circle_d / 2, 0, 360, bolt_count)
    .hole(bolt_hole_d)
)

result = (
    flange.faces(">Z")
    .workplane()
    .circle(hub_d / 2)
    .extrude(hub_h)
    .faces(">Z")
    .workplane()
    .hole(bore_d)
)
