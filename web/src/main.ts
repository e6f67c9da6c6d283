/**
 * The genservice editor's entry point: asks for the API key, builds the panels around one
 * Editor (state and actions), lays them out, wires the keyboard shortcuts and reopens the session
 * named in the page's address.
 */
import "./style.css";
import { Api } from "./api/client";
import { Editor } from "./editor";
import { h } from "./lib/dom";
import { ChecksPanel } from "./panels/checksPanel";
import { CodePanel } from "./panels/codePanel";
import { ExportPanel } from "./panels/exportPanel";
import { HistoryPanel } from "./panels/historyPanel";
import { KeyDialog, storedKey } from "./panels/keyDialog";
import { ParamsPanel } from "./panels/paramsPanel";
import { PromptPanel } from "./panels/promptPanel";
import { TestsPanel } from "./panels/testsPanel";
import { ViewportPanel } from "./panels/viewportPanel";
import { installShortcuts } from "./shortcuts";

declare global {
  interface Window {
    genserviceEditor?: { editor: Editor; api: Api; viewport: ViewportPanel };
  }
}

async function start(): Promise<void> {
  const dialog = new KeyDialog();
  const api = new Api(storedKey, () => void dialog.ask("The service refused this key: enter a valid one."));
  const editor = new Editor(api);

  const prompt = new PromptPanel(editor);
  const viewport = new ViewportPanel(api, editor);
  const tests = new TestsPanel(editor);
  const code = new CodePanel(editor);
  const params = new ParamsPanel(editor);
  const checks = new ChecksPanel(editor);
  const history = new HistoryPanel(editor);
  const exporter = new ExportPanel(api, editor);
  tests.element.hidden = true;

  const changeKey = h("button", { type: "button", className: "link", title: "Use another API key" }, "Change key");
  changeKey.addEventListener("click", () => void dialog.ask("Enter the API key to use."));
  const app = document.getElementById("app") ?? document.body;
  app.append(
    h("header", { className: "topbar" }, h("h1", {}, "genservice"), h("span", { className: "muted" }, "prompt → program → validated model"), changeKey),
    h(
      "main",
      { className: "layout" },
      h("div", { className: "col col-left" }, prompt.element, history.element),
      h("div", { className: "col col-view" }, viewport.element, tests.element),
      h("div", { className: "col col-code" }, code.element),
      h("div", { className: "col col-side" }, checks.element, params.element, exporter.element),
    ),
  );
  viewport.viewport.resize();

  const setDomain = (domain: string) => {
    document.body.dataset.domain = domain;
    const isCode = domain === "code";
    viewport.element.hidden = isCode;
    tests.element.hidden = !isCode;
    if (!isCode) viewport.viewport.resize();
  };
  editor.on("session", (session) => setDomain(session?.domain ?? editor.uiDomain));
  editor.on("current", ({ version }) => setDomain(version.domain));
  prompt.domain.addEventListener("change", () => {
    if (!editor.session) setDomain(prompt.domain.value);
  });

  installShortcuts({
    generate: () => void prompt.generate(),
    fit: () => viewport.viewport.fit(),
    undo: () => editor.undo(),
    redo: () => editor.redo(),
  });
  window.genserviceEditor = { editor, api, viewport };

  if (!storedKey()) await dialog.ask();
  const target = Editor.locationTarget();
  if (target) await editor.loadSession(target.session, target.version);
}

void start();
