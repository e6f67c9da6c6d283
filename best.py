import cadquery as cq
import math

depth = 105.0
width = 50.0
thickness = 5.0
set_back = 70.0
rise = 60.0
lean_angle = 70.0
lip = 6.0

result = cq.Workplane("XY").box(depth, width, thickness, centered=(False, True, False))
plate = cq.Workplane("XY").box(rise, width, thickness, centered=(False, True, False))
plate = plate.rotate((0, 0, 0), (0, 1, 0), -lean_angle).translate((set_back, 0, 0))
result = result.union(plate)
result = result.union(cq.Workplane("XY").box(thickness, width, lip, centered=(False, True, False)))
