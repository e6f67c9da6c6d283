/**
 * The History panel: the session's version tree (click a version to open it), Undo/Redo among
 * visited versions, and comparing two versions: their code diff in #diff, and the other model
 * drawn translucent over the current one.
 */
import { versionReport, type Session, type Version } from "../api/types";
import { previewUrl } from "../assets";
import type { Editor } from "../editor";
import { diffStats, lineDiff } from "../lib/diff";
import { clear, h } from "../lib/dom";
import { flattenTree } from "../lib/history";
import { verdictOf } from "../lib/verdict";

export class HistoryPanel {
  readonly element: HTMLElement;
  private readonly tree = h("ol", { className: "tree", "aria-label": "Versions" });
  private readonly undoButton = h("button", { type: "button", disabled: true, title: "Back to the previous version (Ctrl+Z)" }, "Undo");
  private readonly redoButton = h("button", { type: "button", disabled: true, title: "Forward again (Ctrl+Shift+Z)" }, "Redo");
  private readonly compareButton = h("button", { type: "button", disabled: true, title: "Compare the two ticked versions" }, "Compare");
  private readonly clearButton = h("button", { type: "button", hidden: true }, "Hide diff");
  private readonly diff = h("div", { id: "diff", "aria-live": "polite" });
  private readonly picked: string[] = [];

  constructor(private readonly editor: Editor) {
    this.undoButton.addEventListener("click", () => editor.undo());
    this.redoButton.addEventListener("click", () => editor.redo());
    this.compareButton.addEventListener("click", () => {
      if (this.picked.length === 2) editor.compare([this.picked[0], this.picked[1]]);
    });
    this.clearButton.addEventListener("click", () => editor.compare(null));
    this.element = h(
      "section",
      { "aria-label": "History", className: "panel history-panel" },
      h("header", {}, h("h2", {}, "History"), h("span", { className: "buttons" }, this.undoButton, this.redoButton)),
      this.tree,
      h("div", { className: "compare-row" }, this.compareButton, this.clearButton),
      this.diff,
    );
    editor.on("session", (session) => this.render(session));
    editor.on("current", () => this.render(editor.session));
    editor.on("nav", ({ canUndo, canRedo }) => {
      this.undoButton.disabled = !canUndo;
      this.redoButton.disabled = !canRedo;
    });
    editor.on("compare", (pair) => this.showDiff(pair));
  }

  private render(session: Session | null): void {
    clear(this.tree);
    if (!session) return;
    const byId = new Map(session.versions.map((v) => [v.id, v]));
    for (const stale of this.picked.filter((id) => !byId.has(id))) this.picked.splice(this.picked.indexOf(stale), 1);
    const rows = flattenTree(session.children, session.versions.map((v) => v.id));
    for (const { id, depth } of rows) {
      const version = byId.get(id);
      if (version) this.tree.append(this.row(version, depth));
    }
    this.compareButton.disabled = this.picked.length !== 2;
  }

  private row(version: Version, depth: number): HTMLElement {
    const current = this.editor.current?.id === version.id;
    const open = h(
      "button",
      { type: "button", className: "version", title: version.prompt || version.source },
      `v${version.number}`,
    );
    open.addEventListener("click", () => void this.editor.goTo(version.id));
    const box = h("input", {
      type: "checkbox",
      "aria-label": `Compare v${version.number}`,
      checked: this.picked.includes(version.id),
    });
    box.addEventListener("change", () => this.pick(version.id, box.checked));
    const what = version.source === "manual" ? version.prompt || "edited" : version.prompt || version.source;
    const thumb = h("img", { className: "thumb", alt: `v${version.number} preview`, hidden: true });
    previewUrl(this.editor.api, version)
      ?.then((url) => {
        thumb.src = url;
        thumb.hidden = false;
      })
      .catch(() => thumb.remove());
    return h(
      "li",
      {
        "data-version-id": version.id,
        "aria-current": current ? "true" : null,
        className: `row${version.valid ? "" : " invalid"}`,
        style: `--depth: ${depth}`,
      },
      thumb,
      open,
      h("span", { className: "what" }, `${version.source} · ${what}`),
      mark(version),
      box,
    );
  }

  /** Tick or untick a version for comparing (the oldest tick goes when a third is ticked). */
  private pick(id: string, on: boolean): void {
    const at = this.picked.indexOf(id);
    if (on && at < 0) this.picked.push(id);
    if (!on && at >= 0) this.picked.splice(at, 1);
    while (this.picked.length > 2) this.picked.shift();
    this.render(this.editor.session);
  }

  private showDiff(pair: { a: Version; b: Version } | null): void {
    clear(this.diff);
    this.clearButton.hidden = !pair;
    if (!pair) return;
    const lines = lineDiff(pair.a.program, pair.b.program);
    const { added, removed } = diffStats(lines);
    const params = JSON.stringify(pair.a.parameters) !== JSON.stringify(pair.b.parameters);
    this.diff.append(
      h(
        "p",
        { className: "diff-head" },
        `v${pair.a.number} → v${pair.b.number}: +${added} −${removed} lines` +
          (params ? ` · parameters ${JSON.stringify(pair.a.parameters)} → ${JSON.stringify(pair.b.parameters)}` : ""),
      ),
    );
    const pre = h("pre", { className: "diff-body" });
    for (const line of lines) {
      const sign = line.kind === "add" ? "+" : line.kind === "del" ? "-" : " ";
      pre.append(h("span", { className: `diff-${line.kind}` }, `${sign} ${line.text}`));
    }
    this.diff.append(pre);
  }
}

/** ✓ for a valid version, ≠ for sound geometry that is not what was asked, ✗ otherwise. */
function mark(version: Version): HTMLElement {
  const kind = verdictOf(versionReport(version)).kind;
  const title = { valid: "valid", "not as asked": "sound, but not as asked", invalid: "invalid" }[kind];
  const text = { valid: "✓", "not as asked": "≠", invalid: "✗" }[kind];
  return h("span", { className: kind === "valid" ? "ok" : "bad", title }, text);
}
