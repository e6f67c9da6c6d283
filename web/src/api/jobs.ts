/**
 * Following a job to its end: its Server-Sent Events stream (progress → done/failed/cancelled),
 * reconnecting or falling back to polling GET /v1/generations/{id} if the stream breaks.
 */
import type { Api } from "./client";
import { readSse } from "./sse";
import { TERMINAL, type Job } from "./types";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolve with the finished job; `onUpdate` sees every state on the way. */
export async function watchJob(
  api: Api,
  id: string,
  onUpdate: (job: Job) => void,
  signal?: AbortSignal,
): Promise<Job> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const stream = await api.jobEvents(id, signal);
      for await (const event of readSse(stream)) {
        let job: Job;
        try {
          job = JSON.parse(event.data) as Job;
        } catch {
          continue;
        }
        onUpdate(job);
        if (TERMINAL.has(job.status)) return job;
      }
    } catch (err) {
      if (signal?.aborted) throw err;
    }
    // The stream ended early: the job may have finished meanwhile.
    const job = await api.job(id);
    onUpdate(job);
    if (TERMINAL.has(job.status)) return job;
    await sleep(500 * (attempt + 1));
  }
  for (;;) {
    if (signal?.aborted) throw new DOMException("aborted", "AbortError");
    const job = await api.job(id);
    onUpdate(job);
    if (TERMINAL.has(job.status)) return job;
    await sleep(1000);
  }
}
