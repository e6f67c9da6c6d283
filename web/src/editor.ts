/**
 * The editor's state and actions, independent of the DOM: the session and its versions, the
 * current version with undo/redo among visited ones, jobs (generate, refine, manual edits of code
 * or parameters) followed to their end, validation of edited code, and comparisons. Panels call
 * the actions and listen to the events.
 */
import { ApiError, type Api } from "./api/client";
import { watchJob } from "./api/jobs";
import {
  jobResult,
  versionReport,
  type Candidate,
  type Domain,
  type Job,
  type JobAccepted,
  type Report,
  type RepairRound,
  type FitSummary,
  type Session,
  type Version,
} from "./api/types";
import { Emitter } from "./lib/emitter";
import { NavHistory } from "./lib/history";
import type { ParamValue } from "./lib/params";
import { verdictOf } from "./lib/verdict";

/** Whose Report is shown: the current version's, edited code's, or a failed job's best candidate's. */
export type ReportSource = "version" | "edit" | "job";

/** Why the current version changed: panels treat their own edits differently. */
export type Origin = "navigate" | "generate" | "refine" | "edit" | "params" | "load";

export interface EditorEvents extends Record<string, unknown> {
  session: Session | null;
  current: { version: Version; origin: Origin };
  report: { report: Report; source: ReportSource };
  job: Job;
  candidates: Candidate[];
  /** The repair rounds of the generation whose candidates are shown (none: none ran). */
  repairs: RepairRound[];
  /** What fitting the best part to the request's picture did (null: no fit ran). */
  fit: FitSummary | null;
  nav: { canUndo: boolean; canRedo: boolean };
  program: string;
  compare: { a: Version; b: Version } | null;
  message: string;
}

export interface GenerateRequest {
  domain: Domain;
  prompt: string;
  n: number;
  images?: string[];
  tests?: string;
  entryPoint?: string;
}

/** A stand-in job for a request the API refused before any job existed. */
function refusedJob(error: string): Job {
  return {
    id: "",
    kind: "request",
    status: "failed",
    domain: "",
    progress: { stage: "failed", done: 0, total: 0, fraction: 0, message: "" },
    error,
    session_id: null,
    parent_version_id: null,
    version_id: null,
    attempts: 0,
    created_at: 0,
    updated_at: 0,
    finished_at: null,
    result: null,
    url: "",
    events_url: "",
  };
}

export class Editor extends Emitter<EditorEvents> {
  session: Session | null = null;
  current: Version | null = null;
  /** The domain chosen in the prompt panel (a session's own domain wins once there is one). */
  uiDomain: Domain = "cad";
  /** Tests and entry point of the code domain (validation of edited code needs them). */
  codeTests: { tests: string; entryPoint: string } = { tests: "", entryPoint: "" };
  readonly versions = new Map<string, Version>();
  private readonly nav = new NavHistory();
  private statusJob = "";
  private navTicket = 0;
  private validateTicket = 0;
  /** The generation whose candidates the gallery shows (an opened one is judged against its request). */
  private galleryJob: string | null = null;

  /** The generation whose candidates the gallery shows (null before the first). */
  get candidatesJob(): string | null {
    return this.galleryJob;
  }

  constructor(readonly api: Api) {
    super();
  }

  get domain(): Domain {
    return (this.session?.domain as Domain | undefined) ?? this.uiDomain;
  }

  // ---- jobs -------------------------------------------------------------------------------

  /** POST something that starts a job; a refusal shows as a failed job and returns null. */
  private async start(request: () => Promise<JobAccepted>): Promise<JobAccepted | null> {
    try {
      const accepted = await request();
      this.statusJob = accepted.id;
      return accepted;
    } catch (err) {
      this.statusJob = "";
      this.emit("job", refusedJob(err instanceof Error ? err.message : String(err)));
      return null;
    }
  }

  /** Follow a job; when it made a version, show it (unless a later job superseded this one). */
  private async follow(accepted: JobAccepted, origin: Origin, gallery: boolean): Promise<Job | null> {
    const ticket = ++this.navTicket;
    let job: Job;
    try {
      job = await watchJob(this.api, accepted.id, (update) => {
        if (update.id === this.statusJob) this.emit("job", update);
      });
    } catch (err) {
      this.emit("job", refusedJob(err instanceof Error ? err.message : String(err)));
      return null;
    }
    const result = jobResult(job);
    if (gallery) {
      this.galleryJob = job.id;
      this.emit("candidates", result?.candidates ?? []);
      this.emit("repairs", result?.repairs ?? []);
      this.emit("fit", result?.fit ?? null);
    }
    if (job.status === "failed" && result?.report && ticket === this.navTicket) {
      this.emit("report", { report: result.report, source: "job" });
    }
    if (job.status === "done" && job.version_id && job.session_id) {
      await this.refreshSession(job.session_id);
      if (ticket === this.navTicket) await this.goTo(job.version_id, origin);
    }
    return job;
  }

  async generate(req: GenerationRequestLike): Promise<Job | null> {
    this.uiDomain = req.domain;
    if (req.domain === "code") this.codeTests = { tests: req.tests ?? "", entryPoint: req.entryPoint ?? "" };
    const accepted = await this.start(() =>
      this.api.generate({
        domain: req.domain,
        prompt: req.prompt,
        n: req.n,
        images: req.images ?? [],
        ...(req.domain === "code" ? { tests: req.tests || null, entry_point: req.entryPoint || null } : {}),
      }),
    );
    return accepted ? this.follow(accepted, "generate", true) : null;
  }

  /** Apply an instruction to the current version (a new version in the same session). */
  async refine(instruction: string, n: number): Promise<Job | null> {
    const session = this.session;
    const current = this.current;
    if (!session || !current) {
      this.emit("job", refusedJob("nothing to refine yet: generate first"));
      return null;
    }
    const code = session.domain === "code";
    const accepted = await this.start(() =>
      this.api.generate({
        domain: session.domain as Domain,
        prompt: "",
        n,
        session_id: session.id,
        parent_version_id: current.id,
        instruction,
        ...(code ? { tests: this.codeTests.tests || null, entry_point: this.codeTests.entryPoint || null } : {}),
      }),
    );
    return accepted ? this.follow(accepted, "refine", true) : null;
  }

  /**
   * Validate edited code; when valid (cad/scene), save it as a new manual version (unless it is
   * the current version's program and `always` is false). Returns the Report, or null when a
   * newer edit superseded this one.
   */
  async editProgram(program: string, always = false, fromJob: string | null = null): Promise<Report | null> {
    const ticket = ++this.validateTicket;
    const domain = this.domain;
    let report: Report;
    try {
      if (domain === "code" && (!this.codeTests.tests || !this.codeTests.entryPoint)) {
        this.emit("message", "code: give the tests and entry point in the prompt panel to check edits");
        return null;
      }
      // An edit is judged against the request its version stands on: a change that makes the
      // 80 mm part 120 mm is NOT AS ASKED, never VALID.
      // An opened candidate is judged against the request of the generation that made it.
      const standsOn =
        domain === "code" ? {} : fromJob ? { job_id: fromJob } : this.current ? { version_id: this.current.id } : {};
      report = await this.api.validate({
        domain,
        program,
        ...(domain === "code" ? { tests: this.codeTests.tests, entry_point: this.codeTests.entryPoint } : standsOn),
      });
    } catch (err) {
      if (ticket === this.validateTicket) this.emit("message", err instanceof Error ? err.message : String(err));
      return null;
    }
    if (ticket !== this.validateTicket) return null;
    this.emit("report", { report, source: "edit" });
    // A sound part that differs from the request is still the user's to keep (they changed it
    // on purpose); its version shows NOT AS ASKED and what is off.
    if (verdictOf(report).kind === "invalid" || domain === "code") return report;
    if (!always && this.current && this.current.program === program) {
      this.emit("message", `${verdictOf(report).kind} (the same as the current version)`);
      return report;
    }
    await this.saveProgram(program, "edit", fromJob);
    return report;
  }

  /** Save a program as a manual version (a child of the current one) and show it when done. */
  async saveProgram(program: string, origin: Origin = "edit", fromJob: string | null = null): Promise<Job | null> {
    let sessionId = this.session?.id;
    const parent = this.current?.id ?? null;
    if (!sessionId) {
      try {
        sessionId = await this.api.createSession(this.uiDomain);
      } catch (err) {
        this.emit("job", refusedJob(err instanceof Error ? err.message : String(err)));
        return null;
      }
    }
    const id = sessionId;
    const accepted = await this.start(() =>
      this.api.createVersion(id, { parent_version_id: parent, program, ...(fromJob ? { job_id: fromJob } : {}) }),
    );
    return accepted ? this.follow(accepted, origin, false) : null;
  }

  /** New parameter values for the current version's program (all of them, so edits never race). */
  async setParameters(values: Record<string, ParamValue>): Promise<Job | null> {
    const session = this.session;
    const current = this.current;
    if (!session || !current || session.domain === "code") return null;
    const accepted = await this.start(() =>
      this.api.createVersion(session.id, { parent_version_id: current.id, parameters: values }),
    );
    return accepted ? this.follow(accepted, "params", false) : null;
  }

  /** Open a candidate's program: into the code panel, validated and saved as a manual version. */
  async openProgram(program: string): Promise<void> {
    this.emit("program", program);
    await this.editProgram(program, true, this.galleryJob);
  }

  // ---- sessions, versions, navigation -------------------------------------------------------

  /** Reload a session's versions and tree (a different session resets undo/redo). */
  async refreshSession(id: string): Promise<Session | null> {
    let session: Session;
    try {
      session = await this.api.session(id);
    } catch (err) {
      if (err instanceof ApiError) this.emit("message", err.message);
      return null;
    }
    if (this.session?.id !== session.id) {
      this.nav.reset();
      this.versions.clear();
      this.emit("compare", null);
    }
    this.session = session;
    for (const version of session.versions) this.versions.set(version.id, version);
    this.emit("session", session);
    return session;
  }

  /** Open a session (e.g. from the page's address) at a version, or at its head. */
  async loadSession(id: string, versionId?: string | null): Promise<void> {
    const session = await this.refreshSession(id);
    if (!session) return;
    const target = versionId && this.versions.has(versionId) ? versionId : session.head_version_id;
    if (target) await this.goTo(target, "load");
  }

  /** Make a version current (recorded for undo unless `record` is false). */
  async goTo(id: string, origin: Origin = "navigate", record = true): Promise<void> {
    let version = this.versions.get(id);
    if (!version) {
      try {
        version = await this.api.version(id);
      } catch (err) {
        this.emit("message", err instanceof Error ? err.message : String(err));
        return;
      }
      this.versions.set(id, version);
    }
    if (record) this.nav.visit(id);
    this.current = version;
    this.emit("current", { version, origin });
    this.emit("report", { report: versionReport(version), source: "version" });
    this.emit("nav", { canUndo: this.nav.canUndo, canRedo: this.nav.canRedo });
    this.saveLocation();
  }

  undo(): void {
    const id = this.nav.undo();
    if (id) void this.goTo(id, "navigate", false);
  }

  redo(): void {
    const id = this.nav.redo();
    if (id) void this.goTo(id, "navigate", false);
  }

  /** Compare two versions (older first), or stop comparing with null. */
  compare(ids: [string, string] | null): void {
    if (!ids) {
      this.emit("compare", null);
      return;
    }
    const [a, b] = ids.map((id) => this.versions.get(id));
    if (!a || !b) return;
    this.emit("compare", a.number <= b.number ? { a, b } : { a: b, b: a });
  }

  /** Keep the session and version in the page's address, so a reload comes back to them. */
  private saveLocation(): void {
    if (!this.session || !this.current || typeof location === "undefined") return;
    const hash = `#session=${encodeURIComponent(this.session.id)}&version=${encodeURIComponent(this.current.id)}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  /** The session and version in the page's address, if any. */
  static locationTarget(): { session: string; version: string | null } | null {
    if (typeof location === "undefined") return null;
    const params = new URLSearchParams(location.hash.slice(1));
    const session = params.get("session");
    return session ? { session, version: params.get("version") } : null;
  }
}

type GenerationRequestLike = GenerateRequest;
