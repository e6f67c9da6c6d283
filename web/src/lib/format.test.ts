// Unit tests of the formatting helpers.
import { describe, expect, it } from "vitest";
import { detailText, downloadName, errorText, fitLine, formatReward, jobStatusText, repairLines, toBase64 } from "./format";

describe("format", () => {
  it("formats rewards with 3 decimals", () => {
    expect(formatReward(1)).toBe("1.000");
    expect(formatReward(0.12345)).toBe("0.123");
    expect(formatReward(null)).toBe("—");
  });

  it("writes errors with their line", () => {
    expect(errorText({ kind: "syntax", message: "SyntaxError: bad", line: 2 })).toBe("line 2: SyntaxError: bad");
    expect(errorText({ kind: "timeout", message: "too slow", line: null })).toBe("too slow");
    expect(errorText(null)).toBe("");
  });

  it("names downloads after the version", () => {
    expect(downloadName("ver_1", "step")).toBe("ver_1.step");
    expect(downloadName("ver_1", "manifest")).toBe("ver_1.manifest.json");
    expect(downloadName("ver_1", "3mf")).toBe("ver_1.3mf");
  });

  it("writes job status lines", () => {
    expect(jobStatusText({ status: "generating", progress: { message: "sampling", done: 1, total: 4 } })).toBe(
      "generating: sampling (1/4)",
    );
    expect(jobStatusText({ status: "done" })).toBe("done");
    expect(jobStatusText({ status: "failed", error: "no valid candidate" })).toBe("failed: no valid candidate");
  });

  it("writes check details", () => {
    expect(detailText({ volume_mm3: 16219.1269, parts: ["a"] })).toBe('volume_mm3: 16220\nparts: ["a"]');
    expect(detailText(undefined)).toBe("");
  });

  it("encodes base64", () => {
    expect(toBase64(new Uint8Array([104, 105]))).toBe("aGk=");
  });
});

describe("repairLines", () => {
  it("says what each repair round fed back and what came of it", () => {
    expect(repairLines(undefined)).toEqual([]);
    expect(
      repairLines([
        { round: 1, repaired: 0, error: { kind: "syntax", message: "x", line: 4 }, candidates: 4, valid: 0 },
        { round: 2, repaired: 5, error: { kind: "check_failed", message: "y" } },
      ]),
    ).toEqual(["repair 1: fed back #0 (syntax, line 4) → 0 of 4 valid", "repair 2: fed back #5 (check_failed) → running"]);
  });
});

describe("fitLine", () => {
  it("says what fitting to the picture changed, or that nothing looked more like it", () => {
    expect(fitLine(null)).toBe("");
    const base = { rounds: 3, trials: 40, seconds: 9.5, score_before: 0.62, score_after: 0.62 };
    expect(fitLine({ ...base, improved: false, changed: {} })).toBe(
      "fitted to the picture: no change looked more like it (40 tries)",
    );
    expect(fitLine({ ...base, improved: true, score_after: 0.814, changed: { bore_d: [20, 28] } })).toBe(
      "fitted to the picture: match 0.62 → 0.81 (bore_d 20 → 28)",
    );
  });

  it("says what fitting to the stated sizes changed, before the picture's", () => {
    const base = { rounds: 1, trials: 6, seconds: 1.2, score_before: 0.7, score_after: 1 };
    const sizes = { ...base, improved: true, changed: { thickness: [9, 90] as [number, number] } };
    expect(fitLine({ ...sizes, sizes, picture: false })).toBe(
      "fitted to the stated sizes: request 0.70 → 1.00 (thickness 9 → 90)",
    );
    const none = { ...base, improved: false, score_after: 0.7, changed: {} };
    expect(fitLine({ ...none, sizes: none, picture: false })).toBe(
      "fitted to the stated sizes: no change met more of them (6 tries)",
    );
    const picture = { ...base, score_before: 0.6, score_after: 0.8, improved: true, changed: {} };
    expect(fitLine({ ...picture, sizes, picture: true })).toBe(
      "fitted to the stated sizes: request 0.70 → 1.00 (thickness 9 → 90); fitted to the picture: match 0.60 → 0.80",
    );
  });
});
