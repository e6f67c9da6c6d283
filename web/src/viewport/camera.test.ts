// Unit tests of the camera arithmetic (fit distance, ortho frustum, presets, grid).
import { describe, expect, it } from "vitest";
import { fitDistance, gridFor, normalize, orthoFrustum, PRESETS, viewHeight } from "./camera";

describe("camera", () => {
  it("fits a sphere in the narrower field of view", () => {
    const d = fitDistance(1, 90, 1, 1);
    expect(d).toBeCloseTo(Math.SQRT2, 6);
    expect(fitDistance(1, 90, 0.5, 1)).toBeGreaterThan(d);
    expect(fitDistance(1, 90, 2, 1)).toBeCloseTo(d, 6);
  });

  it("matches an ortho view to the perspective one", () => {
    expect(viewHeight(1, 90)).toBeCloseTo(2, 6);
    expect(orthoFrustum(2, 1.5)).toEqual({ left: -1.5, right: 1.5, top: 1, bottom: -1 });
  });

  it("has unit preset directions after normalising", () => {
    for (const dir of Object.values(PRESETS)) expect(Math.hypot(...normalize(dir))).toBeCloseTo(1, 9);
    expect(normalize([0, 0, 0])).toEqual([0, 0, 1]);
  });

  it("picks grid cells of 1, 2 or 5 × 10^k", () => {
    expect(gridFor(0.042)).toEqual({ cell: 0.005, cells: 34 });
    expect(gridFor(1).cell).toBe(0.2);
    expect(gridFor(30).cell).toBe(5);
  });
});
