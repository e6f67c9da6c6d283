// Unit tests of the event emitter.
import { describe, expect, it, vi } from "vitest";
import { Emitter } from "./emitter";

describe("Emitter", () => {
  it("delivers to subscribers until they unsubscribe", () => {
    const e = new Emitter<{ n: number }>();
    const seen: number[] = [];
    const off = e.on("n", (v) => seen.push(v));
    e.emit("n", 1);
    off();
    e.emit("n", 2);
    expect(seen).toEqual([1]);
  });

  it("keeps going when a handler throws", () => {
    const e = new Emitter<{ n: number }>();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const after = vi.fn();
    e.on("n", () => {
      throw new Error("boom");
    });
    e.on("n", after);
    e.emit("n", 1);
    expect(after).toHaveBeenCalledWith(1);
    warn.mockRestore();
  });
});
