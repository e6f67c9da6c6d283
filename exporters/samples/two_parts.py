import cadquery as cq

size = 10.0

cube = cq.Workplane("XY").box(size, size, size)
peg = cq.Workplane("XY").circle(size / 4).extrude(size).translate((size * 2, 0, -size / 2))
show_object(cube, name="cube")
show_object(peg, name="peg")
