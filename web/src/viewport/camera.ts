/**
 * Camera arithmetic without a scene: view presets, the distance that fits a bounding sphere in
 * a perspective view, the frustum of an orthographic view of the same size, and grid spacing.
 */

export type Preset = "front" | "top" | "right" | "iso";
export type Vec3 = [number, number, number];

/**
 * Directions from the target to the camera, in the GLB's frame (+Y up; the CAD model's +Z):
 * front looks along -Z, top straight down (a hair off vertical so orbiting stays stable),
 * right along -X, iso from the (+X, +Y, +Z) octant.
 */
export const PRESETS: Record<Preset, Vec3> = {
  front: [0, 0, 1],
  top: [0, 1, 1e-4],
  right: [1, 0, 0],
  iso: [1, 1, 1],
};

export function normalize(v: Vec3): Vec3 {
  const len = Math.hypot(v[0], v[1], v[2]);
  return len > 0 ? [v[0] / len, v[1] / len, v[2] / len] : [0, 0, 1];
}

/** Distance from a sphere's centre at which a perspective camera sees all of it. */
export function fitDistance(radius: number, fovDeg: number, aspect: number, margin = 1.15): number {
  const vfov = (fovDeg * Math.PI) / 180;
  const hfov = 2 * Math.atan(Math.tan(vfov / 2) * aspect);
  const half = Math.min(vfov, hfov) / 2;
  return (Math.max(radius, 1e-9) * margin) / Math.sin(half);
}

/** Height of the view at `distance` for a perspective camera (what an ortho view must show). */
export function viewHeight(distance: number, fovDeg: number): number {
  return 2 * distance * Math.tan((fovDeg * Math.PI) / 360);
}

/** Left/right/top/bottom of an orthographic frustum `height` tall with this aspect. */
export function orthoFrustum(height: number, aspect: number) {
  const h = height / 2;
  const w = h * aspect;
  return { left: -w, right: w, top: h, bottom: -h };
}

/** Grid cell size (1, 2 or 5 × 10^k metres) and cell count for a model of this radius. */
export function gridFor(radius: number): { cell: number; cells: number } {
  const r = Math.max(radius, 1e-6);
  const raw = r / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  const cell = (scaled < 2 ? 1 : scaled < 5 ? 2 : 5) * power;
  const cells = 2 * Math.ceil((r * 2) / cell);
  return { cell: Number(cell.toPrecision(6)), cells };
}
