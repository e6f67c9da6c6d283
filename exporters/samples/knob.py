import cadquery as cq

diameter = 30.0
height = 16.0
grip_count = 12

knob = cq.Workplane("XY").circle(diameter / 2).extrude(height)
grips = cq.Workplane("XY").polarArray(diameter / 2, 0, 360, grip_count).circle(2).extrude(height)
knob = knob.cut(grips).edges(">Z").chamfer(1.0)
knob = knob.faces("<Z").workplane().hole(6, 10)
result = knob
