# expect: {"volume_mm3": 22713.715, "solids": 1, "bbox_mm": [50.0, 50.0, 30.0], "kind": "part"}
# Flanged bushing: half cross-section revolved 360 degrees about the Z axis.
# analytic volume = pi*((flange_d/2)^2 - (bore_d/2)^2)*flange_t + pi*((body_d/2)^2 - (bore_d/2)^2)*body_len
flange_d = 50.0
flange_t = 6.0
body_d = 30.0
body_len = 24.0
bore_d = 16.0

import cadquery as cq

r_flange = flange_d / 2
r_body = body_d / 2
r_bore = bore_d / 2
total_h = flange_t + body_len

# profile drawn on XZ: local x = radius, local y = height (global Z)
profile = [
    (r_bore, 0.0),
    (r_flange, 0.0),
    (r_flange, flange_t),
    (r_body, flange_t),
    (r_body, total_h),
    (r_bore, total_h),
]

result = (
    cq.Workplane("XZ")
    .polyline(profile)
    .close()
    .revolve(360.0, (0, 0, 0), (0, 1, 0))
)
