/**
 * Small pure formatting helpers shared by the panels: rewards, error lines, job status text,
 * download file names, check details.
 */

import type { FitSummary, RepairRound } from "../api/types";
/** A reward with 3 decimals ("—" when absent). */
export function formatReward(reward: unknown): string {
  return typeof reward === "number" && Number.isFinite(reward) ? reward.toFixed(3) : "—";
}

export interface ReportError {
  kind?: string;
  message?: string;
  line?: number | null;
}

/** "line N: message" for a Report error with a line, else the message alone. */
export function errorText(error: ReportError | null | undefined): string {
  if (!error) return "";
  const message = error.message || error.kind || "error";
  return typeof error.line === "number" ? `line ${error.line}: ${message}` : message;
}

/** Download formats: the API's `format` → the file extension. */
export const FORMAT_EXT: Record<string, string> = {
  glb: "glb",
  step: "step",
  stl: "stl",
  "3mf": "3mf",
  ply: "ply",
  spz: "spz",
  "splat-glb": "splat.glb",
  png: "png",
  manifest: "manifest.json",
};

/** The file name a download gets: `<version id>.<ext>`. */
export function downloadName(versionId: string, format: string): string {
  return `${versionId}.${FORMAT_EXT[format] ?? format}`;
}

export interface JobLike {
  status: string;
  error?: string | null;
  progress?: { message?: string; done?: number; total?: number } | null;
}

/** The job status line: "<status>: <message> (d/t)" while it runs; "done" or "failed: why" at the end. */
export function jobStatusText(job: JobLike): string {
  if (job.status === "done") return "done";
  if (job.status === "failed") return `failed: ${job.error || "unknown error"}`;
  if (job.status === "cancelled") return "cancelled";
  const p = job.progress;
  let text = job.status;
  if (p?.message) text += `: ${p.message}`;
  if (p && p.total) text += ` (${p.done ?? 0}/${p.total})`;
  return text;
}

/** What the repair rounds of a generation did, one line each ("repair 1: fed back #0
 * (syntax, line 4) → 2 of 4 valid"); empty when none ran. */
export function repairLines(repairs: RepairRound[] | undefined): string[] {
  return (repairs ?? []).map((r) => {
    const where = r.error.line ? `, line ${r.error.line}` : "";
    const outcome = r.candidates === undefined ? "running" : `${r.valid ?? 0} of ${r.candidates} valid`;
    return `repair ${r.round}: fed back #${r.repaired} (${r.error.kind}${where}) → ${outcome}`;
  });
}

/** What fitting to the request did, in one line ("fitted to the stated sizes: request 0.70 →
 * 1.00 (thickness 9 → 90)", "fitted to the picture: match 0.62 → 0.81 (bore_d 20 → 28)");
 * empty when no fit ran. */
export function fitLine(fit: FitSummary | null | undefined): string {
  if (!fit) return "";
  const lines: string[] = [];
  const sizes = fit.sizes;
  if (sizes && (sizes.improved || fit.picture === false)) {
    lines.push(
      sizes.improved
        ? `fitted to the stated sizes: request ${sizes.score_before.toFixed(2)} → ${sizes.score_after.toFixed(2)}${changed(sizes)}`
        : `fitted to the stated sizes: no change met more of them (${sizes.trials} tries)`,
    );
  }
  if (fit.picture !== false) {
    lines.push(
      fit.improved
        ? `fitted to the picture: match ${fit.score_before.toFixed(2)} → ${fit.score_after.toFixed(2)}${changed(fit)}`
        : `fitted to the picture: no change looked more like it (${fit.trials} tries)`,
    );
  }
  return lines.join("; ");
}

/** " (name before → after, ...)", or "" when nothing changed. */
function changed(fit: FitSummary): string {
  const changes = Object.entries(fit.changed).map(([name, [before, after]]) => `${name} ${before} → ${after}`);
  return changes.length ? ` (${changes.join(", ")})` : "";
}

/** A check's detail as short "key: value" lines for a tooltip. */
export function detailText(detail: unknown): string {
  if (detail === null || detail === undefined) return "";
  if (typeof detail !== "object") return String(detail);
  return Object.entries(detail as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${typeof v === "number" ? round(v) : JSON.stringify(v)}`)
    .join("\n");
}

function round(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(4)));
}

/** Base64 of bytes (for reference images), in chunks so big files do not overflow the stack. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
