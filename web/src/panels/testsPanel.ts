/**
 * The Tests panel of the code domain (it takes the viewport's place): the generated function
 * and the result of each test check of its Report.
 */
import { jobResult, type Report, type Version } from "../api/types";
import type { Editor } from "../editor";
import { clear, h } from "../lib/dom";
import { detailText, errorText, formatReward } from "../lib/format";

export class TestsPanel {
  readonly element: HTMLElement;
  private readonly program = h("pre", { className: "function", "aria-label": "Generated function" });
  private readonly summary = h("p", { className: "tests-summary" });
  private readonly list = h("ul", { className: "tests", "aria-label": "Test results" });

  constructor(editor: Editor) {
    this.element = h(
      "section",
      { "aria-label": "Tests", className: "panel tests-panel" },
      h("h2", {}, "Function and tests"),
      this.program,
      this.summary,
      this.list,
    );
    editor.on("current", ({ version }) => this.showVersion(version));
    editor.on("report", ({ report, source }) => {
      if (source !== "job" && editor.domain === "code") this.showReport(report);
    });
    editor.on("job", (job) => {
      // a failed generation made no version: show its best candidate and why it failed
      const result = jobResult(job);
      if (job.domain !== "code" || job.status !== "failed" || !result) return;
      if (result.program) this.program.textContent = result.program;
      if (result.report) this.showReport(result.report);
    });
  }

  private showVersion(version: Version): void {
    if (version.domain !== "code") return;
    this.program.textContent = version.program;
  }

  private showReport(report: Report): void {
    const checks = Object.entries(report.checks ?? {});
    const passed = checks.filter(([, c]) => c.passed).length;
    this.summary.textContent =
      `${passed}/${checks.length} checks passed · reward ${formatReward(report.reward)}` +
      (report.error ? ` · ${errorText(report.error)}` : "");
    clear(this.list);
    for (const [name, check] of checks) {
      this.list.append(
        h(
          "li",
          { "data-test": name, "data-passed": String(Boolean(check.passed)), className: "check" },
          h("span", { className: "badge" }, `${check.passed ? "✓" : "✗"} ${name}`),
          h("span", { className: "score" }, formatReward(check.score)),
          h("pre", {}, detailText(check.detail)),
        ),
      );
    }
  }
}
