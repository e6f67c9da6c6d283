/**
 * The code diff between two versions' programs: numbered lines marked added, removed or the
 * same (from the `diff` package's line diff), for the History panel's comparison.
 */
import { diffLines } from "diff";

export type DiffKind = "add" | "del" | "same";

export interface DiffLine {
  kind: DiffKind;
  text: string;
  /** Line number in the old program (null for an added line). */
  oldNo: number | null;
  /** Line number in the new program (null for a removed line). */
  newNo: number | null;
}

function splitLines(value: string): string[] {
  const lines = value.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** Every line of both programs, in diff order. */
export function lineDiff(oldText: string, newText: string): DiffLine[] {
  const out: DiffLine[] = [];
  let oldNo = 1;
  let newNo = 1;
  for (const change of diffLines(oldText, newText)) {
    for (const text of splitLines(change.value)) {
      if (change.added) out.push({ kind: "add", text, oldNo: null, newNo: newNo++ });
      else if (change.removed) out.push({ kind: "del", text, oldNo: oldNo++, newNo: null });
      else out.push({ kind: "same", text, oldNo: oldNo++, newNo: newNo++ });
    }
  }
  return out;
}

/** How many lines were added and removed. */
export function diffStats(lines: DiffLine[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.kind === "add") added++;
    if (line.kind === "del") removed++;
  }
  return { added, removed };
}

/** The diff as unified-diff-like text ("+", "-" or " " before each line). */
export function diffText(lines: DiffLine[]): string {
  const sign = { add: "+", del: "-", same: " " } as const;
  return lines.map((l) => `${sign[l.kind]} ${l.text}`).join("\n");
}
