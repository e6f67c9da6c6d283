import cadquery as cq

outer_d = 60.0
thickness = 8.0
bore_d = 20.0
bolt_count = 6
bolt_d = 5.5

flange = cq.Workplane("XY").circle(outer_d / 2).extrude(thickness)
flange = flange.faces(">Z").workplane().hole(bore_d)
flange = flange.faces(">Z").workplane().polarArray(outer_d / 2 - 7, 0, 360, bolt_count).hole(bolt_d)
result = flange.edges(">Z").fillet(1.0)
