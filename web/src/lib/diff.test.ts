// Unit tests of the line diff shown when two versions are compared.
import { describe, expect, it } from "vitest";
import { diffStats, diffText, lineDiff } from "./diff";

describe("lineDiff", () => {
  it("numbers same, removed and added lines", () => {
    const lines = lineDiff("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 5\nc = 3\nd = 4\n");
    expect(lines).toEqual([
      { kind: "same", text: "a = 1", oldNo: 1, newNo: 1 },
      { kind: "del", text: "b = 2", oldNo: 2, newNo: null },
      { kind: "add", text: "b = 5", oldNo: null, newNo: 2 },
      { kind: "same", text: "c = 3", oldNo: 3, newNo: 3 },
      { kind: "add", text: "d = 4", oldNo: null, newNo: 4 },
    ]);
    expect(diffStats(lines)).toEqual({ added: 2, removed: 1 });
  });

  it("is all-same for identical programs, missing final newline or not", () => {
    const lines = lineDiff("x\ny", "x\ny");
    expect(lines.every((l) => l.kind === "same")).toBe(true);
    expect(lines).toHaveLength(2);
  });

  it("handles empty programs", () => {
    expect(lineDiff("", "")).toEqual([]);
    expect(diffStats(lineDiff("", "a\nb\n"))).toEqual({ added: 2, removed: 0 });
  });

  it("renders text with signs", () => {
    expect(diffText(lineDiff("a\n", "b\n"))).toBe("- a\n+ b");
  });
});
