/**
 * The Code panel: CodeMirror 6 (Python) with the current version's program. Typing is
 * validated after a 600 ms pause (POST /v1/validate); a valid program is saved as a new manual
 * version and rendered, an invalid one gets a lint diagnostic at its error line and a line in
 * #code-error, while the viewport keeps the last good model.
 */
import { setDiagnostics } from "@codemirror/lint";
import { Annotation, EditorState, Transaction } from "@codemirror/state";
import { EditorView, keymap } from "@codemirror/view";
import type { Report } from "../api/types";
import type { Editor } from "../editor";
import { debounce } from "../lib/debounce";
import { diagnosticsFor } from "../lib/diagnostics";
import { h } from "../lib/dom";
import { errorText } from "../lib/format";
import { verdictOf } from "../lib/verdict";
import { codeSetup } from "./codeSetup";

/** Marks changes made by the program (a version loaded), which are not user edits. */
const external = Annotation.define<boolean>();

export class CodePanel {
  readonly element: HTMLElement;
  readonly view: EditorView;
  private readonly error = h("div", { id: "code-error", role: "alert", hidden: true });
  private readonly state = h("span", { className: "code-state", "aria-live": "polite" });
  private readonly validate = debounce(() => void this.check(), 600);

  constructor(private readonly editor: Editor) {
    this.view = new EditorView({
      state: EditorState.create({
        doc: "",
        extensions: [
          codeSetup(),
          keymap.of([{ key: "Mod-s", run: () => (this.validate.flush(), true) }]),
          EditorView.contentAttributes.of({ "aria-label": "Program" }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged && !update.transactions.some((t) => t.annotation(external))) {
              this.state.textContent = "edited…";
              this.validate();
            }
          }),
        ],
      }),
    });
    this.element = h(
      "section",
      { "aria-label": "Code", className: "panel code-panel" },
      h("header", {}, h("h2", {}, "Code"), this.state),
      this.view.dom,
      this.error,
    );
    editor.on("current", ({ version, origin }) => {
      // our own save: the text is already there (and the user may have typed on)
      if (origin === "edit") {
        if (!this.validate.pending) this.state.textContent = `saved as v${version.number}`;
        return;
      }
      if (origin === "params" && this.validate.pending) return;
      this.setProgram(version.program);
    });
    editor.on("program", (program) => this.setProgram(program));
    editor.on("report", ({ report, source }) => {
      if (source === "job" || (source === "version" && this.validate.pending)) return;
      this.showReport(report);
      if (source === "edit") {
        this.state.textContent = !report.valid ? "invalid" : editor.domain === "code" ? "valid" : "valid: saving as a new version…";
      }
    });
    editor.on("message", (message) => {
      this.state.textContent = message;
    });
  }

  /** The editor's text. */
  get text(): string {
    return this.view.state.doc.toString();
  }

  /** Replace the text (a version was opened): no validation, pending edits dropped. */
  setProgram(program: string): void {
    this.validate.cancel();
    if (program === this.text) return;
    this.view.dispatch({
      changes: { from: 0, to: this.view.state.doc.length, insert: program },
      annotations: [external.of(true), Transaction.addToHistory.of(false)],
    });
    this.state.textContent = "";
  }

  private async check(): Promise<void> {
    if (!this.text.trim()) {
      this.state.textContent = "the program is empty";
      return;
    }
    this.state.textContent = "validating…";
    await this.editor.editProgram(this.text);
  }

  private showReport(report: Report): void {
    this.view.dispatch(setDiagnostics(this.view.state, diagnosticsFor(report, this.view.state.doc)));
    const fine = report.valid || verdictOf(report).kind === "not as asked"; // the Checks panel says what is off
    const text = fine ? "" : errorText(report.error) || "invalid";
    this.error.textContent = text;
    this.error.hidden = !text;
  }
}
