import cadquery as cq

top_w = 120.0
top_d = 70.0
leg_h = 70.0
leg_s = 6.0

top = cq.Workplane("XY").box(top_w, top_d, 5).edges("|Z").fillet(3)
leg = cq.Workplane("XY").box(leg_s, leg_s, leg_h)
legs = cq.Assembly(name="legs")
for i, (x, y) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
    position = (x * (top_w / 2 - 8), y * (top_d / 2 - 8), leg_h / 2)
    legs.add(leg, name=f"leg_{i}", loc=cq.Location(position), color=cq.Color(0.35, 0.2, 0.1, 1))
mug = cq.Workplane("XY").circle(8).extrude(18).faces(">Z").shell(-1.5)
result = (
    cq.Assembly(name="table")
    .add(legs)
    .add(top, name="top", loc=cq.Location((0, 0, leg_h + 2.5)), color=cq.Color(0.8, 0.6, 0.4, 1))
    .add(mug, name="mug", loc=cq.Location((20, 5, leg_h + 5)), color=cq.Color("red"))
)
