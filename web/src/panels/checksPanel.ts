/**
 * The Checks panel: the verdict (a big VALID, NOT AS ASKED or INVALID) and reward of the Report
 * shown — the current version's, or the last validation of edited code — then its two halves as
 * badges, "sound geometry" and "matches the request" (with each number that is off: "height 4 mm,
 * asked 40 mm"), and a badge per check with its score, and its detail on hover or when expanded.
 */
import type { Report } from "../api/types";
import type { Editor, ReportSource } from "../editor";
import { clear, h } from "../lib/dom";
import { detailText, errorText, formatReward } from "../lib/format";
import { verdictOf } from "../lib/verdict";

export class ChecksPanel {
  readonly element: HTMLElement;
  private readonly verdict = h("span", { id: "verdict", className: "verdict" }, "—");
  private readonly reward = h("span", { className: "reward" });
  private readonly source = h("p", { className: "muted" });
  private readonly error = h("p", { className: "check-error" });
  private readonly halves = h("ul", { className: "verdict-halves", "aria-label": "Verdict" });
  private readonly list = h("ul", { className: "checks", "aria-label": "Check results" });

  constructor(editor: Editor) {
    this.element = h(
      "section",
      { "aria-label": "Checks", className: "panel checks-panel" },
      h("h2", {}, "Checks"),
      h("div", { className: "verdict-row" }, this.verdict, this.reward),
      this.source,
      this.halves,
      this.error,
      this.list,
    );
    editor.on("report", ({ report, source }) => this.show(report, source));
  }

  private show(report: Report, source: ReportSource): void {
    const valid = Boolean(report.valid);
    const verdict = verdictOf(report);
    this.verdict.textContent = verdict.label;
    this.verdict.dataset.valid = String(valid);
    this.verdict.dataset.verdict = verdict.kind;
    this.element.dataset.valid = String(valid);
    clear(this.halves);
    if (verdict.sound !== null) {
      this.halves.append(half("sound", verdict.sound, "sound geometry", []));
    }
    if (verdict.asked !== null) {
      this.halves.append(half("asked", verdict.asked.passed, "matches the request", verdict.asked.missed));
    }
    this.reward.textContent = `reward ${formatReward(report.reward)}`;
    this.source.textContent = {
      version: "of the current version",
      edit: "of the code being edited",
      job: "of the failed job's best candidate",
    }[source];
    this.error.textContent = errorText(report.error);
    this.error.hidden = !report.error;
    clear(this.list);
    for (const [name, check] of Object.entries(report.checks ?? {})) {
      const detail = detailText(check.detail);
      const title = `${name}: ${check.passed ? "passed" : "failed"}, score ${formatReward(check.score)}${detail ? `\n${detail}` : ""}`;
      this.list.append(
        h(
          "li",
          { "data-check": name, "data-passed": String(Boolean(check.passed)), className: "check", title },
          h(
            "details",
            {},
            h(
              "summary",
              {},
              h("span", { className: "badge" }, `${check.passed ? "✓" : "✗"} ${name}`),
              h("span", { className: "score" }, formatReward(check.score)),
            ),
            h("pre", {}, detail || "no detail"),
          ),
        ),
      );
    }
  }
}

/** One half of the verdict: a badge, and what is off under it. */
function half(name: string, passed: boolean, label: string, missed: string[]): HTMLElement {
  return h(
    "li",
    { "data-half": name, "data-passed": String(passed), className: "check" },
    h("span", { className: "badge" }, `${passed ? "✓" : "✗"} ${label}`),
    ...missed.map((note) => h("span", { className: "missed" }, note)),
  );
}
