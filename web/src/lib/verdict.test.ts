// Unit tests of the two-part verdict: sound geometry, and matching the request.
import { describe, expect, it } from "vitest";
import type { Report } from "../api/types";
import { verdictOf } from "./verdict";

function report(valid: boolean, checks: Report["checks"], metrics: Record<string, unknown> = {}): Report {
  return { valid, reward: 0.5, checks, error: null, metrics, parameters: {} };
}

const ok = { score: 1, passed: true };
const height = {
  score: 0.1,
  passed: false,
  detail: {
    items: [
      { what: "height", ok: false, note: "height 4 mm, asked 40 mm" },
      { what: "holes", ok: true, note: "6 holes, asked 6" },
    ],
    summary: "height 4 mm, asked 40 mm",
  },
};

describe("verdictOf", () => {
  it("calls a sound part that ignores the request NOT AS ASKED, with the number that is off", () => {
    const v = verdictOf(report(false, { executes: ok, solid: ok, request: height }, { geometry_sound: true }));
    expect(v.kind).toBe("not as asked");
    expect(v.label).toBe("NOT AS ASKED");
    expect(v.sound).toBe(true);
    expect(v.asked).toEqual({ passed: false, missed: ["height 4 mm, asked 40 mm"] });
  });

  it("is VALID only when the geometry is sound and the request is met", () => {
    const v = verdictOf(report(true, { executes: ok, request: { ...ok, detail: { items: [] } } }, { geometry_sound: true }));
    expect(v).toEqual({ kind: "valid", label: "VALID", sound: true, asked: { passed: true, missed: [] } });
  });

  it("is INVALID when the geometry is not sound, whatever was asked", () => {
    const broken = report(false, { executes: ok, watertight: { score: 0, passed: false }, request: height }, { geometry_sound: false });
    expect(verdictOf(broken).kind).toBe("invalid");
    const missedSpec = report(false, { spec: { score: 0.2, passed: false }, request: height }, { geometry_sound: true });
    expect(verdictOf(missedSpec).kind).toBe("invalid");
  });

  it("calls a sound part that does not look like the request's picture NOT AS ASKED, and says so", () => {
    const unlike = { score: 0.52, passed: false, detail: { view: "iso", pass: 0.75 } };
    const v = verdictOf(report(false, { executes: ok, solid: ok, image_match: unlike }, { geometry_sound: true }));
    expect(v.label).toBe("NOT AS ASKED");
    expect(v.asked).toEqual({ passed: false, missed: ["it does not look like the picture (match 0.52, passes at 0.75)"] });
    const both = verdictOf(report(false, { executes: ok, request: height, image_match: unlike }, { geometry_sound: true }));
    expect(both.asked?.missed).toEqual(["height 4 mm, asked 40 mm", "it does not look like the picture (match 0.52, passes at 0.75)"]);
    const alike = verdictOf(report(true, { executes: ok, image_match: { score: 0.9, passed: true, detail: { pass: 0.75 } } }, { geometry_sound: true }));
    expect(alike).toEqual({ kind: "valid", label: "VALID", sound: true, asked: { passed: true, missed: [] } });
  });

  it("calls a part NOT AS ASKED when its picture fits a different part as well, and says what would settle it", () => {
    const rivals = [{ candidate: 5, match: 0.962, shared: 0.31 }];
    const unsettled = { score: 0.967, passed: false, detail: { pass: 0.75, rivals, settled: false } };
    const v = verdictOf(report(false, { executes: ok, solid: ok, image_match: unsettled }, { geometry_sound: true }));
    expect(v.label).toBe("NOT AS ASKED");
    expect(v.asked?.missed).toEqual([
      "the picture fits a different part as well (candidate 5 matches 0.96, this one 0.97; the two share 31% of their volume): " +
        "a picture from another side, or the sizes in words, would settle which",
    ]);
  });

  it("says nothing about the request when nothing was asked, and reads old Reports", () => {
    const v = verdictOf(report(true, { executes: ok }));
    expect(v.asked).toBeNull();
    expect(v.sound).toBe(true);
    expect(verdictOf(report(false, { spec: { score: 0, passed: false } })).sound).toBeNull();
    const crashed = { ...report(false, { executes: { score: 0, passed: false } }), error: { kind: "exception", message: "boom", line: 3 } };
    expect(verdictOf(crashed).sound).toBe(false);
  });
});
