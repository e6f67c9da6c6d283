import cadquery as cq

height = 80.0
wall = 2.5

profile = (
    cq.Workplane("XZ")
    .moveTo(0, 0)
    .lineTo(25, 0)
    .spline([(32, 25), (20, 55), (18, height)], includeCurrent=True)
    .lineTo(0, height)
    .close()
)
body = profile.revolve(360, (0, 0, 0), (0, 1, 0))
result = body.faces(">Z").shell(-wall)
