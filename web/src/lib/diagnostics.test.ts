// Unit tests of Report errors → CodeMirror diagnostics.
import { Text } from "@codemirror/state";
import { describe, expect, it } from "vitest";
import type { Report } from "../api/types";
import { diagnosticsFor } from "./diagnostics";

const doc = Text.of(["import cadquery as cq", "x = (", "result = 1"]);
const report = (error: Report["error"], valid = false): Report => ({
  valid,
  reward: 0,
  checks: {},
  error,
  metrics: {},
  parameters: {},
});

describe("diagnosticsFor", () => {
  it("marks the error's line", () => {
    const [d] = diagnosticsFor(report({ kind: "syntax", message: "'(' was never closed", line: 2 }), doc);
    expect(doc.sliceString(d.from, d.to)).toBe("x = (");
    expect(d.severity).toBe("error");
    expect(d.message).toBe("'(' was never closed");
  });

  it("clamps lines outside the document and defaults to line 1", () => {
    expect(diagnosticsFor(report({ kind: "exit", message: "m", line: 99 }), doc)[0].from).toBe(doc.line(3).from);
    expect(diagnosticsFor(report({ kind: "timeout", message: "m", line: null }), doc)[0].from).toBe(0);
  });

  it("marks nothing when the part is sound but not what was asked", () => {
    const notAsked: Report = {
      ...report({ kind: "check_failed", message: "failed checks: request; not as asked: height 4 mm, asked 40 mm", line: null }),
      checks: { executes: { score: 1, passed: true }, request: { score: 0.1, passed: false } },
      metrics: { geometry_sound: true },
    };
    expect(diagnosticsFor(notAsked, doc)).toEqual([]);
  });

  it("has nothing for a valid report or one without an error", () => {
    expect(diagnosticsFor(report(null, true), doc)).toEqual([]);
    expect(diagnosticsFor(report(null), doc)).toEqual([]);
  });
});
