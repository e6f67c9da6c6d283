/**
 * Parameter controls' pure logic: which controls a version gets (from its Report's
 * `parameters` and the version's overrides) and the slider ranges inferred from the values.
 */

export type ParamType = "float" | "int" | "bool" | "str";
export type ParamValue = number | boolean | string;

export interface ParamSpec {
  name: string;
  type: ParamType;
  value: ParamValue;
  line: number | null;
}

export interface Range {
  min: number;
  max: number;
  step: number;
}

/** A "nice" step: 1, 2 or 5 times a power of ten, near span/200. */
export function niceStep(span: number): number {
  if (!(span > 0) || !Number.isFinite(span)) return 0.1;
  const raw = span / 200;
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  const factor = scaled < 1.5 ? 1 : scaled < 3.5 ? 2 : scaled < 7.5 ? 5 : 10;
  return Number((factor * power).toPrecision(6));
}

/** The slider range for a value: 0..max(2×value, value+10) (mirrored for negatives). */
export function inferRange(value: number, type: ParamType): Range {
  const v = Number.isFinite(value) ? value : 0;
  const max = v >= 0 ? Math.max(2 * v, v + 10) : Math.max(0, v + 10);
  const min = v >= 0 ? 0 : Math.min(2 * v, v - 10);
  if (type === "int") return { min: Math.floor(min), max: Math.ceil(max), step: 1 };
  return { min, max, step: niceStep(max - min) };
}

/** Keep a range the user already has, widened (re-inferred) only when the value leaves it. */
export function widenRange(range: Range | undefined, value: number, type: ParamType): Range {
  if (range && value >= range.min && value <= range.max) return range;
  const fresh = inferRange(value, type);
  if (!range) return fresh;
  return { min: Math.min(range.min, fresh.min), max: Math.max(range.max, fresh.max), step: fresh.step };
}

function asType(type: unknown, value: unknown): ParamType {
  if (type === "int" || type === "float" || type === "bool" || type === "str") return type;
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  return "str";
}

/**
 * The controls of a version: every parameter its Report found, valued by the version's own
 * overrides when it has them, in the order of the program's lines.
 */
export function paramSpecs(
  reportParams: Record<string, unknown> | null | undefined,
  overrides: Record<string, unknown> | null | undefined,
): ParamSpec[] {
  const specs: ParamSpec[] = [];
  for (const [name, raw] of Object.entries(reportParams ?? {})) {
    const info = (raw ?? {}) as { value?: unknown; type?: unknown; line?: unknown };
    const type = asType(info.type, info.value);
    let value = (overrides && name in overrides ? overrides[name] : info.value) as ParamValue;
    if (type === "int" || type === "float") value = Number(value);
    if (type === "bool") value = Boolean(value);
    if (type === "str") value = String(value ?? "");
    specs.push({ name, type, value, line: typeof info.line === "number" ? info.line : null });
  }
  return specs.sort((a, b) => (a.line ?? 1e9) - (b.line ?? 1e9));
}

/** Parse what a number input holds into a parameter value (ints rounded); null if not a number. */
export function parseNumber(text: string, type: ParamType): number | null {
  if (text.trim() === "") return null;
  const n = Number(text);
  if (!Number.isFinite(n)) return null;
  return type === "int" ? Math.round(n) : n;
}

/** The same names and types (the controls can stay; only their values change). */
export function sameShape(a: ParamSpec[], b: ParamSpec[]): boolean {
  return a.length === b.length && a.every((s, i) => s.name === b[i].name && s.type === b[i].type);
}
