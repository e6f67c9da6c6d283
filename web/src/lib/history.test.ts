// Unit tests of undo/redo navigation and of the version-tree layout.
import { describe, expect, it } from "vitest";
import { flattenTree, NavHistory } from "./history";

describe("NavHistory", () => {
  it("undoes and redoes visits", () => {
    const h = new NavHistory();
    expect(h.current).toBeNull();
    expect(h.undo()).toBeNull();
    h.visit("a");
    h.visit("b");
    h.visit("c");
    expect(h.undo()).toBe("b");
    expect(h.undo()).toBe("a");
    expect(h.undo()).toBeNull();
    expect(h.current).toBe("a");
    expect(h.redo()).toBe("b");
    expect(h.redo()).toBe("c");
    expect(h.redo()).toBeNull();
  });

  it("drops forward history on a new visit", () => {
    const h = new NavHistory();
    ["a", "b", "c"].forEach((id) => h.visit(id));
    h.undo();
    h.visit("d");
    expect(h.canRedo).toBe(false);
    expect(h.undo()).toBe("b");
  });

  it("ignores visiting the current version", () => {
    const h = new NavHistory();
    h.visit("a");
    h.visit("a");
    expect(h.canUndo).toBe(false);
  });

  it("keeps at most `limit` entries", () => {
    const h = new NavHistory(3);
    ["a", "b", "c", "d"].forEach((id) => h.visit(id));
    expect(h.undo()).toBe("c");
    expect(h.undo()).toBe("b");
    expect(h.undo()).toBeNull();
  });

  it("resets", () => {
    const h = new NavHistory();
    h.visit("a");
    h.reset();
    expect(h.current).toBeNull();
    expect(h.canRedo).toBe(false);
  });
});

describe("flattenTree", () => {
  it("lays out depth-first with depths", () => {
    const rows = flattenTree({ root: ["v1"], v1: ["v2", "v4"], v2: ["v3"] });
    expect(rows).toEqual([
      { id: "v1", depth: 0 },
      { id: "v2", depth: 1 },
      { id: "v3", depth: 2 },
      { id: "v4", depth: 1 },
    ]);
  });

  it("appends unreached versions and survives cycles", () => {
    const rows = flattenTree({ root: ["a"], a: ["a"] }, ["a", "z"]);
    expect(rows.map((r) => r.id)).toEqual(["a", "z"]);
  });
});
