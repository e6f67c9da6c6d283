/**
 * The Checks panel: the verdict (a big VALID or INVALID) and reward of the Report shown — the
 * current version's, or the last validation of edited code — and a badge per check with its
 * score, and its detail on hover or when expanded.
 */
import type { Report } from "../api/types";
import type { Editor, ReportSource } from "../editor";
import { clear, h } from "../lib/dom";
import { detailText, errorText, formatReward } from "../lib/format";

export class ChecksPanel {
  readonly element: HTMLElement;
  private readonly verdict = h("span", { id: "verdict", className: "verdict" }, "—");
  private readonly reward = h("span", { className: "reward" });
  private readonly source = h("p", { className: "muted" });
  private readonly error = h("p", { className: "check-error" });
  private readonly list = h("ul", { className: "checks", "aria-label": "Check results" });

  constructor(editor: Editor) {
    this.element = h(
      "section",
      { "aria-label": "Checks", className: "panel checks-panel" },
      h("h2", {}, "Checks"),
      h("div", { className: "verdict-row" }, this.verdict, this.reward),
      this.source,
      this.error,
      this.list,
    );
    editor.on("report", ({ report, source }) => this.show(report, source));
  }

  private show(report: Report, source: ReportSource): void {
    const valid = Boolean(report.valid);
    this.verdict.textContent = valid ? "VALID" : "INVALID";
    this.verdict.dataset.valid = String(valid);
    this.element.dataset.valid = String(valid);
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
