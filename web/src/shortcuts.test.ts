// Unit tests of the keyboard shortcut mapping.
import { describe, expect, it } from "vitest";
import { shortcutFor } from "./shortcuts";

const key = (k: string, mods: Partial<{ ctrlKey: boolean; metaKey: boolean; shiftKey: boolean; altKey: boolean }> = {}) => ({
  key: k,
  ctrlKey: false,
  metaKey: false,
  shiftKey: false,
  altKey: false,
  ...mods,
});
const free = { typing: false, inCodeEditor: false };

describe("shortcutFor", () => {
  it("maps the shortcuts", () => {
    expect(shortcutFor(key("Enter", { ctrlKey: true }), free)).toBe("generate");
    expect(shortcutFor(key("f"), free)).toBe("fit");
    expect(shortcutFor(key("F"), free)).toBe("fit");
    expect(shortcutFor(key("z", { ctrlKey: true }), free)).toBe("undo");
    expect(shortcutFor(key("Z", { ctrlKey: true, shiftKey: true }), free)).toBe("redo");
    expect(shortcutFor(key("y", { metaKey: true }), free)).toBe("redo");
    expect(shortcutFor(key("a"), free)).toBeNull();
  });

  it("leaves typing alone, except Ctrl+Enter to generate", () => {
    const typing = { typing: true, inCodeEditor: false };
    expect(shortcutFor(key("f"), typing)).toBeNull();
    expect(shortcutFor(key("z", { ctrlKey: true }), typing)).toBeNull();
    expect(shortcutFor(key("Enter", { ctrlKey: true }), typing)).toBe("generate");
  });

  it("never takes keys from the code editor", () => {
    const code = { typing: true, inCodeEditor: true };
    expect(shortcutFor(key("z", { ctrlKey: true }), code)).toBeNull();
    expect(shortcutFor(key("Enter", { ctrlKey: true }), code)).toBeNull();
  });
});
