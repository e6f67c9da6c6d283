/**
 * The Prompt panel: domain, prompt, optional pictures of the part (one, or up to four taken
 * from different sides; chosen, pasted or dropped, and shown beside the results), number of
 * candidates and
 * Generate; an instruction and Refine for the current version; the job's live progress; and
 * the gallery of candidates with their rewards (and the repair round that wrote each), each of
 * which can be opened; what each repair round fed back and what came of it.
 */
import type { Candidate, Domain, Job, RepairRound } from "../api/types";
import type { Editor } from "../editor";
import { clear, h } from "../lib/dom";
import { fitLine, formatReward, jobStatusText, repairLines, toBase64 } from "../lib/format";

const MAX_PICTURES = 4; // pictures a request may carry (the service's max_images)

export class PromptPanel {
  readonly element: HTMLElement;
  readonly domain = h(
    "select",
    { "aria-label": "Domain", id: "domain" },
    h("option", { value: "cad" }, "CAD part"),
    h("option", { value: "scene" }, "Scene"),
    h("option", { value: "code" }, "Python function"),
  );
  readonly prompt = h("textarea", {
    "aria-label": "Prompt",
    id: "prompt",
    rows: 3,
    placeholder: "a 60 mm flange with six M5 bolt holes, 8 mm thick",
  });
  private readonly count = h("input", { type: "number", "aria-label": "Candidates", id: "candidates", min: 1, max: 16, value: 4 });
  private readonly image = h("input", { type: "file", "aria-label": "Reference image", id: "reference-image", accept: "image/png,image/jpeg", multiple: true });
  private readonly inputPictures = h("div", { className: "input-pictures" });
  private readonly dropPicture = h("button", { type: "button", hidden: true, title: "Generate from words only" }, "Remove picture");
  private picked: Blob[] = []; // the pictures to send: chosen, pasted or dropped
  private pictureUrls: string[] = [];
  private readonly tests = h("textarea", { "aria-label": "Test suite", rows: 4, placeholder: "def check(candidate):\n    assert candidate(2) == 4" });
  private readonly entryPoint = h("input", { type: "text", "aria-label": "Entry point", placeholder: "function name" });
  private readonly codeFields = h("div", { className: "code-fields", hidden: true });
  private readonly generateButton = h("button", { type: "submit", className: "primary", title: "Ctrl+Enter" }, "Generate");
  private readonly instruction = h("input", { type: "text", "aria-label": "Instruction", placeholder: "make it 10 mm thick" });
  private readonly refineButton = h("button", { type: "submit" }, "Refine");
  private readonly progress = h("progress", { "aria-label": "Job progress", max: 1, value: 0 });
  private readonly status = h("div", { id: "job-status", role: "status", "aria-live": "polite" });
  private readonly gallery = h("ol", { "aria-label": "Candidates", className: "gallery" });
  private readonly pictures: string[] = []; // object URLs of the gallery's pictures
  private readonly repairs = h("ul", { "aria-label": "Repair rounds", className: "repairs" });
  private readonly fit = h("p", { "aria-label": "Fit to the picture", className: "fit" });

  constructor(private readonly editor: Editor) {
    this.codeFields.append(
      h("label", {}, "Test suite ", this.tests),
      h("label", {}, "Entry point ", this.entryPoint),
    );
    const generate = h(
      "form",
      { className: "generate" },
      h("label", {}, "Domain ", this.domain),
      h("label", { className: "stack" }, "Prompt", this.prompt),
      h("label", {}, "Reference image ", this.image),
      h("div", { className: "picture-row" }, this.inputPictures, this.dropPicture),
      this.codeFields,
      h("div", { className: "row" }, h("label", {}, "Candidates ", this.count), this.generateButton),
    );
    generate.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.generate();
    });
    const refine = h("form", { className: "refine" }, h("div", { className: "row" }, this.instruction, this.refineButton));
    refine.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.refine();
    });
    this.domain.addEventListener("change", () => this.domainChanged());
    this.image.addEventListener("change", () => this.pick([...(this.image.files ?? [])]));
    this.dropPicture.addEventListener("click", () => {
      this.image.value = "";
      this.pick([]);
    });
    // Pictures can also be pasted (a screenshot) or dropped anywhere on the panel: each one
    // joins those already there (another side of the same part).
    generate.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        e.preventDefault();
        this.pick([...this.picked, ...files]);
      }
    });
    generate.addEventListener("dragover", (e) => e.preventDefault());
    generate.addEventListener("drop", (e) => {
      const files = [...(e.dataTransfer?.files ?? [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        e.preventDefault();
        this.pick([...this.picked, ...files]);
      }
    });
    this.element = h(
      "section",
      { "aria-label": "Generation", className: "panel prompt-panel" },
      h("h2", {}, "Prompt"),
      generate,
      refine,
      h("div", { className: "job" }, this.progress, this.status),
      h("h3", {}, "Candidates"),
      this.repairs,
      this.fit,
      this.gallery,
    );
    editor.on("job", (job) => this.showJob(job));
    editor.on("candidates", (candidates) => this.showCandidates(candidates));
    editor.on("repairs", (rounds) => this.showRepairs(rounds));
    editor.on("fit", (fit) => {
      this.fit.textContent = fitLine(fit);
    });
    editor.on("session", (session) => {
      if (session && session.domain !== this.domain.value) {
        this.domain.value = session.domain;
        this.domainChanged();
      }
    });
  }

  private domainChanged(): void {
    const domain = this.domain.value as Domain;
    this.editor.uiDomain = domain;
    this.codeFields.hidden = domain !== "code";
  }

  /** Use these pictures of the part with the next request (none: words only; the first
   * MAX_PICTURES), and show them. */
  pick(pictures: Blob[]): void {
    for (const url of this.pictureUrls.splice(0)) URL.revokeObjectURL(url);
    this.picked = pictures.slice(0, MAX_PICTURES);
    this.pictureUrls = this.picked.map((picture) => URL.createObjectURL(picture));
    clear(this.inputPictures);
    this.inputPictures.append(
      ...this.pictureUrls.map((url, i) =>
        h("img", { className: "input-picture", src: url, alt: i ? `Input picture ${i + 1}` : "Input picture" }),
      ),
    );
    this.dropPicture.hidden = !this.picked.length;
    this.dropPicture.textContent = this.picked.length > 1 ? "Remove pictures" : "Remove picture";
  }

  async generate(): Promise<void> {
    const images: string[] = [];
    for (const picture of this.picked) images.push(toBase64(new Uint8Array(await picture.arrayBuffer())));
    this.setBusy();
    await this.editor.generate({
      domain: this.domain.value as Domain,
      prompt: this.prompt.value,
      n: this.candidates(),
      images,
      tests: this.tests.value,
      entryPoint: this.entryPoint.value.trim(),
    });
  }

  private async refine(): Promise<void> {
    this.setBusy();
    await this.editor.refine(this.instruction.value, this.candidates());
  }

  private candidates(): number {
    const n = Math.round(Number(this.count.value));
    return Number.isFinite(n) && n >= 1 ? n : 4;
  }

  private setBusy(): void {
    this.progress.value = 0;
    this.status.textContent = "submitting…";
  }

  private showJob(job: Job): void {
    const fraction = job.progress?.fraction ?? 0;
    if (job.status === "done") this.progress.value = 1;
    else if (job.status === "failed" || job.status === "cancelled") this.progress.value = 0;
    else this.progress.value = Math.max(0, Math.min(1, fraction));
    this.status.textContent = jobStatusText(job);
    this.status.dataset.status = job.status;
  }

  private showRepairs(rounds: RepairRound[]): void {
    clear(this.repairs);
    for (const line of repairLines(rounds)) this.repairs.append(h("li", {}, line));
  }

  private showCandidates(candidates: Candidate[]): void {
    clear(this.gallery);
    for (const url of this.pictures.splice(0)) URL.revokeObjectURL(url);
    const jobId = this.editor.candidatesJob;
    for (const candidate of candidates) {
      const open = h("button", { type: "button", title: "Put this program in the code panel and render it" }, "Open");
      open.addEventListener("click", () => void this.editor.openProgram(candidate.program));
      const preview = candidate.program.split("\n").filter((l) => l.trim() && !l.startsWith("import")).slice(0, 3).join("\n");
      this.gallery.append(
        h(
          "li",
          { className: candidate.valid ? "valid" : "invalid", title: candidate.program },
          h("span", { className: "index" }, `#${candidate.index}`),
          h("span", { className: "reward" }, formatReward(candidate.reward)),
          candidate.round ? h("span", { className: "round", title: "written in this repair round" }, `repair ${candidate.round}`) : null,
          candidate.fitted_from != null
            ? h("span", { className: "fitted", title: "its parameters fitted to the picture" }, `fitted from #${candidate.fitted_from}`)
            : null,
          candidate.retrieved_from
            ? h("span", { className: "retrieved", title: `the gallery's part ${candidate.retrieved_from}: it looks like the picture` }, "from the gallery")
            : null,
          h("span", { className: candidate.valid ? "ok" : "bad" }, candidate.verdict ?? (candidate.valid ? "valid" : "invalid")),
          open,
          this.picture(jobId, candidate),
          h("pre", { className: "preview" }, preview),
        ),
      );
    }
  }

  /** The candidate's picture (fetched with the key), or nothing when it has none. */
  private picture(jobId: string | null, candidate: Candidate): HTMLElement | null {
    if (!jobId || !candidate.preview_url) return null;
    const img = h("img", { className: "shot", alt: `candidate #${candidate.index}`, hidden: true });
    this.editor.api
      .candidatePreview(jobId, candidate.index)
      .then((blob) => {
        const url = URL.createObjectURL(blob);
        this.pictures.push(url);
        img.src = url;
        img.hidden = false;
      })
      .catch(() => img.remove());
    return img;
  }
}
