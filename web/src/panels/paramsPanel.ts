/**
 * The Parameters panel: a control per parameter of the current version's Report (numbers: a
 * range slider and a number input, ranges inferred from the value; bools: a checkbox; strings: a
 * text field). Changes, debounced, make a new version with every parameter's value.
 */
import { versionReport, type Version } from "../api/types";
import type { Editor } from "../editor";
import { debounce } from "../lib/debounce";
import { clear, h } from "../lib/dom";
import {
  paramSpecs,
  parseNumber,
  sameShape,
  widenRange,
  type ParamSpec,
  type ParamValue,
  type Range,
} from "../lib/params";

interface Control {
  spec: ParamSpec;
  read(): ParamValue | null;
  write(value: ParamValue): void;
  inputs: HTMLInputElement[];
}

export class ParamsPanel {
  readonly element: HTMLElement;
  private readonly list = h("div", { className: "params" });
  private readonly note = h("p", { className: "muted" }, "No parameters yet.");
  private controls: Control[] = [];
  private readonly ranges = new Map<string, Range>();
  private readonly submit = debounce(() => void this.apply(), 500);

  constructor(private readonly editor: Editor) {
    this.element = h(
      "section",
      { "aria-label": "Parameters", className: "panel params-panel" },
      h("h2", {}, "Parameters"),
      this.note,
      this.list,
    );
    editor.on("current", ({ version }) => this.show(version));
    editor.on("session", () => this.ranges.clear());
  }

  private show(version: Version): void {
    const specs = paramSpecs(versionReport(version).parameters, version.parameters);
    if (this.submit.pending) return; // the user is still changing values: keep theirs
    if (sameShape(specs, this.controls.map((c) => c.spec))) {
      specs.forEach((spec, i) => {
        const control = this.controls[i];
        control.spec = spec;
        if (!control.inputs.some((input) => input === document.activeElement)) control.write(spec.value);
      });
      return;
    }
    clear(this.list);
    this.controls = specs.map((spec) => this.control(spec));
    this.note.hidden = specs.length > 0;
    this.note.textContent = version.domain === "code" ? "Functions have no parameters." : "No parameters.";
  }

  private control(spec: ParamSpec): Control {
    const id = `param-${spec.name}`;
    const label = h("label", { for: id }, spec.name);
    if (spec.type === "bool") {
      const box = h("input", { type: "checkbox", id, "aria-label": spec.name, checked: Boolean(spec.value) });
      box.addEventListener("change", () => this.submit());
      this.list.append(h("div", { className: "param bool" }, box, label));
      return { spec, inputs: [box], read: () => box.checked, write: (v) => (box.checked = Boolean(v)) };
    }
    if (spec.type === "str") {
      const text = h("input", { type: "text", id, "aria-label": spec.name, value: String(spec.value) });
      text.addEventListener("change", () => this.submit());
      this.list.append(h("div", { className: "param" }, label, text));
      return { spec, inputs: [text], read: () => text.value, write: (v) => (text.value = String(v)) };
    }
    const value = Number(spec.value);
    const range = widenRange(this.ranges.get(spec.name), value, spec.type);
    this.ranges.set(spec.name, range);
    const slider = h("input", {
      type: "range",
      "aria-label": `${spec.name} slider`,
      min: range.min,
      max: range.max,
      step: range.step,
      value,
    });
    const number = h("input", {
      type: "number",
      id,
      "aria-label": spec.name,
      step: spec.type === "int" ? 1 : "any",
      value,
    });
    const setRange = (v: number) => {
      const r = widenRange(this.ranges.get(spec.name), v, spec.type);
      this.ranges.set(spec.name, r);
      Object.assign(slider, { min: String(r.min), max: String(r.max), step: String(r.step) });
    };
    slider.addEventListener("input", () => {
      number.value = slider.value;
      this.submit();
    });
    number.addEventListener("input", () => {
      const v = parseNumber(number.value, spec.type);
      if (v === null) return;
      setRange(v);
      slider.value = String(v);
      this.submit();
    });
    this.list.append(
      h("div", { className: "param number" }, label, h("div", { className: "param-inputs" }, slider, number)),
    );
    return {
      spec,
      inputs: [slider, number],
      read: () => parseNumber(number.value, spec.type),
      write: (v) => {
        setRange(Number(v));
        slider.value = String(v);
        number.value = String(v);
      },
    };
  }

  /** Every parameter's value (what the next version gets), or null if one is not a number. */
  values(): Record<string, ParamValue> | null {
    const out: Record<string, ParamValue> = {};
    for (const control of this.controls) {
      const value = control.read();
      if (value === null) return null;
      out[control.spec.name] = value;
    }
    return out;
  }

  private async apply(): Promise<void> {
    const values = this.values();
    if (!values) return;
    const changed = this.controls.some((c) => c.read() !== c.spec.value);
    if (changed) await this.editor.setParameters(values);
  }
}
