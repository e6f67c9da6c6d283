// Unit tests of parameter range inference and of building controls from a Report.
import { describe, expect, it } from "vitest";
import { inferRange, niceStep, paramSpecs, parseNumber, sameShape, widenRange } from "./params";

describe("inferRange", () => {
  it("spans 0..max(2×value, value+10)", () => {
    expect(inferRange(60, "float")).toMatchObject({ min: 0, max: 120 });
    expect(inferRange(3, "float")).toMatchObject({ min: 0, max: 13 });
    expect(inferRange(0, "float")).toMatchObject({ min: 0, max: 10 });
  });

  it("uses an integer step for ints", () => {
    expect(inferRange(8, "int")).toEqual({ min: 0, max: 18, step: 1 });
  });

  it("uses a nice fractional step for floats", () => {
    expect(inferRange(60, "float").step).toBe(0.5);
    expect(inferRange(5.5, "float").step).toBe(0.1);
  });

  it("mirrors for negative values", () => {
    const r = inferRange(-4, "float");
    expect(r.min).toBe(-14);
    expect(r.max).toBe(6);
  });
});

describe("niceStep", () => {
  it("picks 1, 2 or 5 times a power of ten", () => {
    expect(niceStep(100)).toBe(0.5);
    expect(niceStep(1000)).toBe(5);
    expect(niceStep(300)).toBe(2);
    expect(niceStep(0)).toBe(0.1);
  });
});

describe("widenRange", () => {
  it("keeps a range that still holds the value", () => {
    const r = inferRange(10, "float");
    expect(widenRange(r, 19, "float")).toBe(r);
  });

  it("widens when the value leaves it", () => {
    const r = widenRange(inferRange(10, "float"), 50, "float");
    expect(r.min).toBe(0);
    expect(r.max).toBe(100);
  });
});

describe("paramSpecs", () => {
  const report = {
    bolt_count: { value: 6, type: "int", line: 7 },
    outer_d: { value: 60.0, type: "float", line: 3 },
    chamfer: { value: true, type: "bool", line: 9 },
  };

  it("orders by line and applies overrides", () => {
    const specs = paramSpecs(report, { bolt_count: 8 });
    expect(specs.map((s) => [s.name, s.value])).toEqual([
      ["outer_d", 60],
      ["bolt_count", 8],
      ["chamfer", true],
    ]);
  });

  it("infers missing types from values", () => {
    expect(paramSpecs({ a: { value: 2 }, b: { value: 2.5 }, c: { value: false } }, null).map((s) => s.type))
      .toEqual(["int", "float", "bool"]);
  });

  it("compares shapes", () => {
    expect(sameShape(paramSpecs(report, null), paramSpecs(report, { outer_d: 1 }))).toBe(true);
    expect(sameShape(paramSpecs(report, null), paramSpecs({}, null))).toBe(false);
  });
});

describe("parseNumber", () => {
  it("rounds ints and refuses non-numbers", () => {
    expect(parseNumber("7.6", "int")).toBe(8);
    expect(parseNumber("7.6", "float")).toBe(7.6);
    expect(parseNumber("", "float")).toBeNull();
    expect(parseNumber("abc", "float")).toBeNull();
  });
});
