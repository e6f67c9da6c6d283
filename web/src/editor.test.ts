// Unit tests of the Editor's flows against a fake API: generate, parameters, code edits,
// undo/redo, refusals and a job stream that breaks off.
import { describe, expect, it } from "vitest";
import { ApiError, type Api } from "./api/client";
import type { Job, Report, Session, Version } from "./api/types";
import { Editor } from "./editor";

function sse(events: Array<[string, Job]>): ReadableStream<Uint8Array> {
  const text = events.map(([name, job]) => `event: ${name}\ndata: ${JSON.stringify(job)}\n\n`).join("");
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(c) {
      c.enqueue(bytes);
      c.close();
    },
  });
}

function job(id: string, status: string, extra: Partial<Job> = {}): Job {
  return {
    id,
    kind: "generation",
    status: status as Job["status"],
    domain: "cad",
    progress: { stage: status, done: 0, total: 4, fraction: 0.5, message: status },
    error: null,
    session_id: "ses_1",
    parent_version_id: null,
    version_id: null,
    attempts: 1,
    created_at: 0,
    updated_at: 0,
    finished_at: null,
    result: null,
    url: "",
    events_url: "",
    ...extra,
  };
}

function version(n: number, parent: string | null, program = "result = 1", parameters = {}): Version {
  return {
    id: `ver_${n}`,
    session_id: "ses_1",
    parent_id: parent,
    number: n,
    source: n === 1 ? "generation" : "manual",
    domain: "cad",
    prompt: "",
    program,
    parameters,
    report: { valid: true, reward: 1, checks: {}, error: null, metrics: {}, parameters: {} },
    valid: true,
    job_id: `job_${n}`,
    assets: [],
    created_at: n,
  };
}

const validReport: Report = { valid: true, reward: 1, checks: {}, error: null, metrics: {}, parameters: {} };

class FakeApi {
  versions: Version[] = [];
  calls: Array<[string, unknown]> = [];
  streams = new Map<string, Array<[string, Job]>>();
  finals = new Map<string, Job>();
  refuse: string | null = null;
  report: Report = validReport;
  private nextJob = 1;

  /** The next job makes version n (child of parent) and finishes. */
  private queue(v: Version, candidates: unknown[] = []): { id: string; status: "queued"; session_id: string; url: string; events_url: string } {
    const id = `job_${this.nextJob++}`;
    const done = job(id, "done", { version_id: v.id, result: { candidates, version_id: v.id } });
    this.streams.set(id, [["progress", job(id, "generating")], ["done", done]]);
    this.finals.set(id, done);
    this.versions.push(v);
    return { id, status: "queued", session_id: "ses_1", url: "", events_url: "" };
  }

  async generate(body: unknown) {
    this.calls.push(["generate", body]);
    if (this.refuse) throw new ApiError(this.refuse, 422);
    return this.queue(version(this.versions.length + 1, null), [{ index: 0, reward: 1, valid: true, program: "p" }]);
  }
  async createVersion(session: string, body: { parent_version_id?: string | null; program?: string | null }) {
    this.calls.push(["createVersion", { session, ...body }]);
    const parent = this.versions.find((v) => v.id === body.parent_version_id);
    return this.queue(version(this.versions.length + 1, body.parent_version_id ?? null, body.program ?? parent?.program));
  }
  async jobEvents(id: string) {
    return sse(this.streams.get(id) ?? []);
  }
  async job(id: string) {
    return this.finals.get(id)!;
  }
  async session(): Promise<Session> {
    const children: Record<string, string[]> = {};
    for (const v of this.versions) (children[v.parent_id ?? "root"] ??= []).push(v.id);
    return {
      id: "ses_1",
      name: "",
      domain: "cad",
      head_version_id: this.versions.at(-1)?.id ?? null,
      created_at: 0,
      updated_at: 0,
      versions: [...this.versions],
      children,
    };
  }
  async version(id: string) {
    return this.versions.find((v) => v.id === id)!;
  }
  async validate(body: unknown) {
    this.calls.push(["validate", body]);
    return this.report;
  }
  async createSession() {
    return "ses_1";
  }
}

function setup() {
  const api = new FakeApi();
  const editor = new Editor(api as unknown as Api);
  const jobs: string[] = [];
  editor.on("job", (j) => jobs.push(j.status === "failed" ? `failed: ${j.error}` : j.status));
  return { api, editor, jobs };
}

describe("Editor", () => {
  it("generates, follows the job and opens the new version", async () => {
    const { api, editor, jobs } = setup();
    let candidates = 0;
    editor.on("candidates", (c) => (candidates = c.length));
    await editor.generate({ domain: "cad", prompt: "a flange", n: 4 });
    expect(api.calls[0]).toEqual(["generate", { domain: "cad", prompt: "a flange", n: 4, images: [] }]);
    expect(jobs).toEqual(["generating", "done"]);
    expect(editor.current?.id).toBe("ver_1");
    expect(editor.session?.versions).toHaveLength(1);
    expect(candidates).toBe(1);
  });

  it("makes parameter versions from the current one, with undo and redo", async () => {
    const { api, editor } = setup();
    const nav: boolean[][] = [];
    editor.on("nav", (n) => nav.push([n.canUndo, n.canRedo]));
    await editor.generate({ domain: "cad", prompt: "x", n: 1 });
    await editor.setParameters({ thickness: 10 });
    expect(api.calls.at(-1)).toEqual([
      "createVersion",
      { session: "ses_1", parent_version_id: "ver_1", parameters: { thickness: 10 } },
    ]);
    expect(editor.current?.id).toBe("ver_2");
    editor.undo();
    await Promise.resolve();
    expect(editor.current?.id).toBe("ver_1");
    editor.redo();
    await Promise.resolve();
    expect(editor.current?.id).toBe("ver_2");
    expect(nav.at(-1)).toEqual([true, false]);
  });

  it("saves valid edited code as a child version and keeps invalid code unsaved", async () => {
    const { api, editor } = setup();
    const reports: string[] = [];
    editor.on("report", ({ report, source }) => reports.push(`${source}:${report.valid}`));
    await editor.generate({ domain: "cad", prompt: "x", n: 1 });
    api.report = { ...validReport, valid: false, error: { kind: "syntax", message: "bad", line: 2 } };
    await editor.editProgram("x = (");
    expect(api.calls.filter(([name]) => name === "createVersion")).toHaveLength(0);
    expect(editor.current?.id).toBe("ver_1");
    api.report = validReport;
    await editor.editProgram("result = 2");
    expect(api.calls.at(-1)).toEqual([
      "createVersion",
      { session: "ses_1", parent_version_id: "ver_1", program: "result = 2" },
    ]);
    expect(editor.current?.program).toBe("result = 2");
    expect(reports).toEqual(["version:true", "edit:false", "edit:true", "version:true"]);
  });

  it("judges edits and opened candidates against their request, and keeps a sound part that misses it", async () => {
    const { api, editor } = setup();
    await editor.generate({ domain: "cad", prompt: "a block 40 mm tall", n: 1 });
    // The edit is checked against the request the current version stands on.
    api.report = {
      ...validReport,
      valid: false,
      metrics: { geometry_sound: true },
      checks: { request: { score: 0.5, passed: false, detail: { items: [{ ok: false, note: "height 80 mm, asked 40 mm" }] } } },
    };
    await editor.editProgram("result = 80");
    expect(api.calls.at(-2)).toEqual(["validate", { domain: "cad", program: "result = 80", version_id: "ver_1" }]);
    expect(api.calls.at(-1)).toEqual([
      "createVersion",
      { session: "ses_1", parent_version_id: "ver_1", program: "result = 80" },
    ]);
    // A candidate from the gallery is checked against the generation that made it.
    await editor.openProgram("p");
    expect(api.calls.at(-2)).toEqual(["validate", { domain: "cad", program: "p", job_id: "job_1" }]);
    expect(api.calls.at(-1)).toEqual([
      "createVersion",
      { session: "ses_1", parent_version_id: "ver_2", program: "p", job_id: "job_1" },
    ]);
  });

  it("does not save code that is the current version's", async () => {
    const { api, editor } = setup();
    await editor.generate({ domain: "cad", prompt: "x", n: 1 });
    await editor.editProgram("result = 1");
    expect(api.calls.filter(([name]) => name === "createVersion")).toHaveLength(0);
  });

  it("shows a refused request as a failed job", async () => {
    const { api, editor, jobs } = setup();
    api.refuse = "the prompt is empty";
    expect(await editor.generate({ domain: "cad", prompt: "", n: 1 })).toBeNull();
    expect(jobs).toEqual(["failed: the prompt is empty"]);
  });

  it("refuses to refine before there is a version", async () => {
    const { editor, jobs } = setup();
    await editor.refine("thicker", 2);
    expect(jobs[0]).toMatch(/^failed: nothing to refine/);
  });

  it("finds a job's end when its event stream breaks off", async () => {
    const { api, editor, jobs } = setup();
    const original = api.generate.bind(api);
    api.generate = async (body: unknown) => {
      const accepted = await original(body);
      api.streams.set(accepted.id, [["progress", job(accepted.id, "generating")]]); // no terminal event
      return accepted;
    };
    await editor.generate({ domain: "cad", prompt: "x", n: 1 });
    expect(jobs).toEqual(["generating", "done"]);
    expect(editor.current?.id).toBe("ver_1");
  });
});

describe("Editor.openProgram", () => {
  it("puts the program in the code panel and saves it even when it is the current one", async () => {
    const { api, editor } = setup();
    const shown: string[] = [];
    editor.on("program", (p) => shown.push(p));
    await editor.generate({ domain: "cad", prompt: "x", n: 1 });
    await editor.openProgram("result = 1");
    expect(shown).toEqual(["result = 1"]);
    expect(api.calls.at(-1)?.[0]).toBe("createVersion");
    expect(editor.current?.id).toBe("ver_2");
  });
});
