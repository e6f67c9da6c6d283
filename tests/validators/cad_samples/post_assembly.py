# expect: {"volume_mm3": 46695.086, "solids": 3, "bbox_mm": [80.0, 60.0, 58.0], "kind": "assembly"}
# Three-part assembly: drilled base plate, round post, and a cross arm rotated 90 degrees.
# analytic volume = plate_l*plate_w*plate_t - 2*pi*r_h^2*plate_t + pi*r_post^2*post_h + arm_l*arm_w*arm_t
plate_l = 80.0
plate_w = 50.0
plate_t = 8.0
plate_hole_d = 6.6
plate_hole_spacing = 60.0
post_d = 16.0
post_h = 40.0
arm_l = 60.0
arm_w = 12.0
arm_t = 10.0

import cadquery as cq

plate = (
    cq.Workplane("XY")
    .box(plate_l, plate_w, plate_t)
    .faces(">Z")
    .workplane()
    .pushPoints([(-plate_hole_spacing / 2, 0), (plate_hole_spacing / 2, 0)])
    .hole(plate_hole_d)
)
post = cq.Workplane("XY").circle(post_d / 2).extrude(post_h)
arm = cq.Workplane("XY").box(arm_l, arm_w, arm_t)

assy = (
    cq.Assembly(name="post_stand")
    .add(plate, name="plate", loc=cq.Location((0, 0, plate_t / 2)), color=cq.Color("gray"))
    .add(post, name="post", loc=cq.Location((0, 0, plate_t)), color=cq.Color("red"))
    .add(
        arm,
        name="arm",
        loc=cq.Location(cq.Vector(0, 0, plate_t + post_h + arm_t / 2), cq.Vector(0, 0, 1), 90),
        color=cq.Color("blue"),
    )
)

result = assy
