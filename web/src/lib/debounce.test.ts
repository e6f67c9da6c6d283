// Unit tests of the debounce helper (fake timers).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { debounce } from "./debounce";

describe("debounce", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("calls once with the last arguments after the quiet period", () => {
    const fn = vi.fn();
    const d = debounce(fn, 600);
    d(1);
    vi.advanceTimersByTime(300);
    d(2);
    vi.advanceTimersByTime(599);
    expect(fn).not.toHaveBeenCalled();
    expect(d.pending).toBe(true);
    vi.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(fn).toHaveBeenCalledWith(2);
    expect(d.pending).toBe(false);
  });

  it("cancels and flushes", () => {
    const fn = vi.fn();
    const d = debounce(fn, 100);
    d("a");
    d.cancel();
    vi.advanceTimersByTime(200);
    expect(fn).not.toHaveBeenCalled();
    d("b");
    d.flush();
    expect(fn).toHaveBeenCalledWith("b");
    d.flush();
    expect(fn).toHaveBeenCalledTimes(1);
  });
});
