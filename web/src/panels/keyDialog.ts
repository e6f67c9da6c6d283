/**
 * The API key dialog (<dialog id="key-dialog">): asked once, kept in localStorage under
 * `genservice.apiKey`, asked again if the service refuses the key.
 */
import { h } from "../lib/dom";

export const KEY_STORAGE = "genservice.apiKey";

export function storedKey(): string | null {
  try {
    return localStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

export class KeyDialog {
  readonly element: HTMLDialogElement;
  private readonly input = h("input", {
    type: "password",
    "aria-label": "API key",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "gs_…",
    required: true,
  });
  private readonly note = h("p", { className: "key-note" });
  private waiting: Array<() => void> = [];

  constructor() {
    const form = h(
      "form",
      { method: "dialog" },
      h("h2", { id: "key-dialog-title" }, "Connect to genservice"),
      this.note,
      h("label", {}, "Key ", this.input),
      h("div", { className: "row" }, h("button", { type: "submit", className: "primary" }, "Save key")),
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const key = this.input.value.trim();
      if (!key) return;
      localStorage.setItem(KEY_STORAGE, key);
      this.element.close();
      const waiting = this.waiting;
      this.waiting = [];
      waiting.forEach((resolve) => resolve());
    });
    this.element = h("dialog", { id: "key-dialog", "aria-labelledby": "key-dialog-title" }, form);
    // the editor cannot work without a key: Escape does not dismiss the dialog
    this.element.addEventListener("cancel", (e) => {
      if (!storedKey()) e.preventDefault();
    });
    document.body.append(this.element);
  }

  /** Show the dialog (once, however many callers) and resolve when a key was saved. */
  ask(note = "The editor talks to the service with an API key (genservice prints one on its first run and keeps it in var/genservice/local-api-key)."): Promise<void> {
    this.note.textContent = note;
    if (!this.element.open) {
      this.input.value = "";
      this.element.showModal();
      this.input.focus();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}
