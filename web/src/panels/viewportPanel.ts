/**
 * The Viewport panel: the toolbar (fit, view presets, ortho/perspective, grid, axes, section,
 * measure, splats), the canvas, the parts list, and loading the current version's GLB into the
 * view (the camera is fitted on a session's first model and on "Fit view" only). Sets
 * document.body.dataset.renderedVersion once a version's model is drawn.
 */
import type { Api } from "../api/client";
import type { Version } from "../api/types";
import { assetBytes } from "../assets";
import type { Editor } from "../editor";
import { clear, h, setPressed, toggleButton } from "../lib/dom";
import { Measure } from "../viewport/measure";
import { ghost, parseGlb, type LoadedModel } from "../viewport/model";
import { Section, type Axis } from "../viewport/section";
import { SplatLayer } from "../viewport/splats";
import { Viewport } from "../viewport/viewport";

export class ViewportPanel {
  readonly element: HTMLElement;
  readonly viewport: Viewport;
  private readonly section: Section;
  private readonly measure: Measure;
  private readonly splats: SplatLayer;
  private readonly parts = h("ul", { "aria-label": "Parts", className: "parts" });
  private readonly status = h("div", { id: "viewport-status", role: "status", "aria-live": "polite" });
  private readonly hidden = new Set<string>();
  private splatsButton!: HTMLButtonElement;
  private loadTicket = 0;
  private splatTicket = 0;
  private fittedSession: string | null = null;
  private shown: Version | null = null;

  constructor(
    private readonly api: Api,
    private readonly editor: Editor,
  ) {
    const canvas = h("canvas", { id: "viewport", "aria-label": "3D view of the current version", tabindex: 0 });
    const measureOut = h("output", { id: "measure-output", "aria-live": "polite" });
    const wrap = h("div", { className: "canvas-wrap" }, canvas, measureOut, this.status);
    this.element = h("section", { "aria-label": "Viewport", className: "panel viewport-panel" });
    this.element.append(this.toolbar(), wrap, h("div", { className: "parts-box" }, h("h3", {}, "Parts"), this.parts));
    this.viewport = new Viewport(canvas);
    this.section = new Section(this.viewport);
    this.measure = new Measure(this.viewport, this.section, (text) => (measureOut.textContent = text));
    this.splats = new SplatLayer(this.viewport);
    editor.on("current", ({ version }) => void this.show(version));
    editor.on("compare", (pair) => void this.compare(pair));
  }

  private toolbar(): HTMLElement {
    const v = () => this.viewport;
    const button = (label: string, title: string, action: () => void) =>
      h("button", { type: "button", title, onclick: action }, label);
    const slider = h("input", {
      type: "range",
      min: 0,
      max: 100,
      step: 1,
      value: 50,
      "aria-label": "Section position",
      disabled: true,
    });
    slider.addEventListener("input", () => this.section.set({ fraction: Number(slider.value) / 100 }));
    const axis = h(
      "select",
      { "aria-label": "Section axis", disabled: true },
      h("option", { value: "x" }, "X"),
      h("option", { value: "y" }, "Y"),
      h("option", { value: "z" }, "Z"),
    );
    axis.addEventListener("change", () => this.section.set({ axis: axis.value as Axis }));
    const section = toggleButton("Section", false, (on) => {
      slider.disabled = !on;
      axis.disabled = !on;
      this.section.set({ enabled: on });
    }, "Cut the model with a plane");
    this.splatsButton = toggleButton("Splats", false, (on) => void this.setSplats(on), "Show the Gaussian splats instead of the mesh");
    return h(
      "div",
      { className: "toolbar", role: "toolbar", "aria-label": "View" },
      button("Fit view", "Frame the model (F)", () => v().fit()),
      button("Front", "Look from the front", () => v().view("front")),
      button("Top", "Look from above", () => v().view("top")),
      button("Right", "Look from the right", () => v().view("right")),
      button("Iso", "Isometric view", () => v().view("iso")),
      toggleButton("Orthographic", false, (on) => v().setOrthographic(on), "Orthographic projection"),
      toggleButton("Grid", true, (on) => v().setGrid(on), "Show the ground grid"),
      toggleButton("Axes", false, (on) => v().setAxes(on), "Show the axes (X red, Y green, Z blue)"),
      h("span", { className: "group" }, section, axis, slider),
      toggleButton("Measure", false, (on) => this.measure.setActive(on), "Click two points to measure"),
      this.splatsButton,
    );
  }

  /** Load and draw a version's model; a newer request wins over one still loading. */
  private async show(version: Version): Promise<void> {
    if (version.domain === "code") return;
    const ticket = ++this.loadTicket;
    if (!version.assets.some((a) => a.format === "glb")) {
      this.status.textContent = `v${version.number} has no model (invalid): showing the last good one`;
      return;
    }
    this.status.textContent = `loading v${version.number}…`;
    let model: LoadedModel;
    try {
      const bytes = await assetBytes(this.api, version, "glb");
      if (ticket !== this.loadTicket) return;
      model = await parseGlb(bytes);
    } catch (err) {
      if (ticket === this.loadTicket) this.status.textContent = `could not load v${version.number}: ${String(err)}`;
      return;
    }
    if (ticket !== this.loadTicket) return;
    for (const part of model.parts) part.object.visible = !this.hidden.has(part.name);
    const fit = this.fittedSession !== version.session_id;
    this.viewport.setModel(model, fit);
    this.fittedSession = version.session_id;
    this.shown = version;
    this.measure.clear();
    this.listParts(model);
    this.status.textContent = "";
    document.body.dataset.renderedVersion = version.id;
    if (this.splats.shown || this.splatsButton.getAttribute("aria-pressed") === "true") void this.setSplats(true);
  }

  private listParts(model: LoadedModel): void {
    clear(this.parts);
    for (const part of model.parts) {
      const box = h("input", { type: "checkbox", checked: part.object.visible });
      box.addEventListener("change", () => {
        part.object.visible = box.checked;
        if (box.checked) this.hidden.delete(part.name);
        else this.hidden.add(part.name);
        this.viewport.requestRender();
      });
      this.parts.append(h("li", {}, h("label", {}, box, ` ${part.name}`)));
    }
  }

  private async setSplats(on: boolean): Promise<void> {
    const ticket = ++this.splatTicket;
    const version = this.shown;
    if (!on || !version) {
      this.splats.hide();
      this.viewport.content.visible = true;
      this.viewport.requestRender();
      if (on) setPressed(this.splatsButton, false);
      return;
    }
    this.status.textContent = `loading splats of v${version.number}…`;
    try {
      let format: "spz" | "ply" = "spz";
      let bytes: ArrayBuffer;
      try {
        bytes = await assetBytes(this.api, version, "spz");
      } catch {
        format = "ply";
        bytes = await assetBytes(this.api, version, "ply");
      }
      if (ticket !== this.splatTicket) return;
      await this.splats.show(new Uint8Array(bytes.slice(0)), format);
      if (ticket !== this.splatTicket) return;
      this.viewport.content.visible = false;
      this.status.textContent = "";
    } catch (err) {
      if (ticket !== this.splatTicket) return;
      this.status.textContent = `no splats: ${err instanceof Error ? err.message : String(err)}`;
      setPressed(this.splatsButton, false);
      this.splats.hide();
      this.viewport.content.visible = true;
    }
    this.viewport.requestRender();
  }

  /** Draw the other version of a comparison translucent over the current model. */
  private async compare(pair: { a: Version; b: Version } | null): Promise<void> {
    if (!pair) {
      this.viewport.setOverlay(null);
      return;
    }
    const other = this.editor.current?.id === pair.b.id ? pair.a : pair.b;
    if (!other.assets.length || other.domain === "code") return;
    try {
      const model = await parseGlb(await assetBytes(this.api, other, "glb"));
      this.viewport.setOverlay(ghost(model));
      this.status.textContent = `comparing: v${other.number} in orange`;
    } catch (err) {
      this.status.textContent = `could not load v${other.number}: ${String(err)}`;
    }
  }
}
