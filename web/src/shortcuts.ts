/**
 * Keyboard shortcuts: Ctrl/⌘+Enter generate, F fit the view, Ctrl/⌘+Z undo and
 * Ctrl/⌘+Shift+Z (or Ctrl+Y) redo — the last three not while typing, and undo/redo never in
 * the code editor (which has its own).
 */

export interface ShortcutActions {
  generate(): void;
  fit(): void;
  undo(): void;
  redo(): void;
}

/** What a key press means here, or null (pure, for tests). */
export function shortcutFor(
  e: Pick<KeyboardEvent, "key" | "ctrlKey" | "metaKey" | "shiftKey" | "altKey">,
  where: { typing: boolean; inCodeEditor: boolean },
): keyof ShortcutActions | null {
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.toLowerCase();
  if (mod && key === "enter" && !where.inCodeEditor) return "generate";
  if (where.typing || where.inCodeEditor || e.altKey) return null;
  if (mod && key === "z") return e.shiftKey ? "redo" : "undo";
  if (mod && key === "y") return "redo";
  if (!mod && !e.shiftKey && key === "f") return "fit";
  return null;
}

function typingIn(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["checkbox", "radio", "button", "submit", "range", "file"].includes(target.type);
  }
  return false;
}

export function installShortcuts(actions: ShortcutActions): void {
  window.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || document.querySelector("dialog[open]")) return;
    const target = e.target instanceof Element ? e.target : null;
    const action = shortcutFor(e, {
      typing: typingIn(e.target),
      inCodeEditor: Boolean(target?.closest(".cm-editor")),
    });
    if (!action) return;
    e.preventDefault();
    actions[action]();
  });
}
