import cadquery as cq

length = 80.0
width = 50.0
height = 30.0
wall = 2.0

box = cq.Workplane("XY").box(length, width, height).edges("|Z").fillet(4)
box = box.faces(">Z").shell(-wall)
box = box.faces("<X").workplane(centerOption="CenterOfBoundBox").rect(20, 8).cutBlind(-wall)
bosses = (
    cq.Workplane("XY")
    .workplane(offset=-height / 2 + wall)
    .rect(length - 14, width - 14, forConstruction=True)
    .vertices()
    .circle(3.5)
    .circle(1.25)
    .extrude(8)
)
result = box.union(bosses)
