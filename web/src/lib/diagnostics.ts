/** The CodeMirror lint diagnostic for a Report's error: at its line (clamped to the document). */
import type { Diagnostic } from "@codemirror/lint";
import type { Text } from "@codemirror/state";
import type { Report } from "../api/types";
import { verdictOf } from "./verdict";

export function diagnosticsFor(report: Report, doc: Text): Diagnostic[] {
  const error = report.error;
  // A sound part that is not what was asked has nothing wrong in a line of its code.
  if (report.valid || !error || verdictOf(report).kind === "not as asked") return [];
  const lineNo = Math.min(Math.max(error.line ?? 1, 1), doc.lines);
  const line = doc.line(lineNo);
  return [
    {
      from: line.from,
      to: Math.max(line.to, line.from),
      severity: "error",
      source: error.kind,
      message: error.message || error.kind,
    },
  ];
}
