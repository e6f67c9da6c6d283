/**
 * The Export panel: download the current version as GLB, STEP, STL, 3MF, PLY or SPZ splats, or
 * its provenance manifest, fetched with the API key and saved as `<version id>.<ext>`.
 */
import type { Api, AssetFormat } from "../api/client";
import { download } from "../assets";
import type { Editor } from "../editor";
import { h } from "../lib/dom";

const FORMATS: Array<[AssetFormat, string]> = [
  ["glb", "GLB"],
  ["step", "STEP"],
  ["stl", "STL"],
  ["3mf", "3MF"],
  ["ply", "PLY"],
  ["spz", "SPZ"],
  ["png", "PNG preview"],
  ["manifest", "manifest"],
];

export class ExportPanel {
  readonly element: HTMLElement;
  private readonly buttons: HTMLButtonElement[] = [];
  private readonly status = h("p", { className: "muted", role: "status", "aria-live": "polite" });

  constructor(
    private readonly api: Api,
    private readonly editor: Editor,
  ) {
    const row = h("div", { className: "downloads" });
    for (const [format, label] of FORMATS) {
      const button = h("button", { type: "button", disabled: true }, `Download ${label}`);
      button.dataset.format = format;
      button.addEventListener("click", () => void this.save(format));
      this.buttons.push(button);
      row.append(button);
    }
    this.element = h("section", { "aria-label": "Export", className: "panel export-panel" }, h("h2", {}, "Export"), row, this.status);
    editor.on("current", ({ version }) => {
      const mesh = version.domain !== "code" && version.assets.length > 0;
      for (const button of this.buttons) {
        button.disabled = button.dataset.format === "manifest" ? version.assets.length === 0 : !mesh;
      }
    });
  }

  private async save(format: AssetFormat): Promise<void> {
    const version = this.editor.current;
    if (!version) return;
    this.status.textContent = `preparing ${format.toUpperCase()} of v${version.number}…`;
    try {
      const name = await download(this.api, version, format);
      this.status.textContent = `saved ${name}`;
    } catch (err) {
      this.status.textContent = `${format}: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
}
