import cadquery as cq

pipe_od = 12.0
pipe_id = 8.0
rise = 40.0

path = cq.Workplane("XZ").spline([(0, 0), (5, rise / 2), (30, rise), (60, rise)])
result = cq.Workplane("XY").circle(pipe_od / 2).circle(pipe_id / 2).sweep(path)
