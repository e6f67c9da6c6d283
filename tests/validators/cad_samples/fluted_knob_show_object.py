# expect: {"volume_mm3": 10375.805, "solids": 1, "bbox_mm": [29.583, 29.583, 18.0], "kind": "part"}
# Fluted control knob with a blind D-shaft bore, displayed via show_object.
# analytic volume = (pi*R^2 - n*lens(R, r_flute, d=R))*knob_h - (pi*r_s^2 - segment(r_s, r_s - shaft_flat))*bore_depth
knob_d = 30.0
knob_h = 18.0
flute_count = 12
flute_d = 5.0
shaft_d = 6.0
shaft_flat = 1.0
bore_depth = 12.0

import math

import cadquery as cq

knob = cq.Workplane("XY").circle(knob_d / 2).extrude(knob_h)

flutes = (
    cq.Workplane("XY")
    .polarArray(knob_d / 2, 0, 360, flute_count)
    .circle(flute_d / 2)
    .extrude(knob_h)
)

# D profile: circle with one flat, flat_x from the axis
r = shaft_d / 2
flat_x = r - shaft_flat
flat_y = math.sqrt(r**2 - flat_x**2)
d_bore = (
    cq.Workplane("XY")
    .moveTo(flat_x, -flat_y)
    .threePointArc((-r, 0), (flat_x, flat_y))
    .close()
    .extrude(bore_depth)
)

knob = knob.cut(flutes).cut(d_bore)

show_object(knob, name="knob", options={"color": "gray"})
