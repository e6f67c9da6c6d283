import cadquery as cq

base_w = 50.0
top_d = 20.0
height = 40.0

result = (
    cq.Workplane("XY")
    .rect(base_w, base_w)
    .workplane(offset=height)
    .circle(top_d / 2)
    .loft(combine=True)
    .faces(">Z")
    .workplane()
    .hole(8)
)
