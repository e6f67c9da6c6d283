/**
 * The verdict of a Report in two halves: is the geometry sound, and does the part match what its
 * request asked (the `request` check: sizes and counts the request's own words leave no doubt
 * about, and for a request with a picture the `image_match` check: does it look like the
 * picture). A sound part that ignores the request is NOT AS ASKED, never VALID, and says which
 * number is off ("height 4 mm, asked 40 mm") or that it does not look like the picture.
 */
import type { Report } from "../api/types";

/** The three verdicts, as the API's job results name them. */
export type VerdictKind = "valid" | "not as asked" | "invalid";

export interface Verdict {
  kind: VerdictKind;
  /** VALID, NOT AS ASKED or INVALID. */
  label: string;
  /** Sound geometry (every check passed but those that judge against what was asked); null when unknown. */
  sound: boolean | null;
  /** The request's checks (words and picture): passed, and what is off (none when they passed); null when nothing was asked. */
  asked: { passed: boolean; missed: string[] } | null;
}

const JUDGED = ["spec", "request", "similarity", "image_match"];
const ASKED = ["request", "image_match"];

/** The verdict of a Report (see the module comment). */
export function verdictOf(report: Report): Verdict {
  const checks = report.checks ?? {};
  const request = checks.request;
  const picture = checks.image_match;
  const asked =
    request || picture
      ? {
          passed: [request, picture].every((check) => !check || Boolean(check.passed)),
          missed: [...(request ? missedItems(request.detail) : []), ...(picture && !picture.passed ? [pictureNote(picture)] : [])],
        }
      : null;
  const measured = report.metrics?.geometry_sound;
  const broken = report.error && report.error.kind !== "check_failed"; // it did not run, or built no solid
  const sound = typeof measured === "boolean" ? measured : report.valid ? true : broken ? false : null;
  const othersMet = JUDGED.filter((name) => !ASKED.includes(name) && checks[name]).every((name) => checks[name].passed);
  let kind: VerdictKind = report.valid ? "valid" : "invalid";
  if (!report.valid && sound === true && asked !== null && !asked.passed && othersMet) kind = "not as asked";
  const label = { valid: "VALID", "not as asked": "NOT AS ASKED", invalid: "INVALID" }[kind];
  return { kind, label, sound, asked };
}

/** The notes of the request check's items that were not met ("height 4 mm, asked 40 mm"). */
function missedItems(detail: unknown): string[] {
  const items = (detail as { items?: unknown } | null | undefined)?.items;
  if (!Array.isArray(items)) return [];
  return items
    .filter((item) => item && typeof item === "object" && (item as { ok?: unknown }).ok === false)
    .map((item) => String((item as { note?: unknown }).note ?? ""))
    .filter((note) => note !== "");
}

/** The `image_match` check in words, as the service says it. */
function pictureNote(check: { score?: number; detail?: unknown }): string {
  const detail = (check.detail ?? {}) as { pass?: unknown; reason?: unknown; rivals?: unknown };
  if (typeof detail.reason === "string" && detail.reason) return `it cannot be compared with the picture (${detail.reason})`;
  if (Array.isArray(detail.rivals) && detail.rivals.length > 0) {
    // The picture fits a different part as well: it does not settle which part it shows.
    const rival = detail.rivals[0] as { candidate?: unknown; match?: unknown; shared?: unknown };
    const which = typeof rival.candidate === "number" ? `candidate ${rival.candidate}` : "another candidate";
    const shared = `${Math.round(Number(rival.shared ?? 0) * 100)}%`;
    return (
      `the picture fits a different part as well (${which} matches ${Number(rival.match ?? 0).toFixed(2)}, ` +
      `this one ${(check.score ?? 0).toFixed(2)}; the two share ${shared} of their volume): ` +
      "a picture from another side, or the sizes in words, would settle which"
    );
  }
  const passes = typeof detail.pass === "number" ? `, passes at ${detail.pass.toFixed(2)}` : "";
  return `it does not look like the picture (match ${(check.score ?? 0).toFixed(2)}${passes})`;
}
