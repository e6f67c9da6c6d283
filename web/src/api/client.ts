/**
 * The API client: openapi-fetch over the generated schema (src/api/schema.d.ts), with the
 * Bearer key added to every request and API errors turned into exceptions with the service's
 * own message.
 */
import createClient from "openapi-fetch";
import type { paths } from "./schema";
import type {
  Domain,
  GenerationCreate,
  Job,
  JobAccepted,
  Report,
  Session,
  ValidateRequest,
  Version,
  VersionCreate,
} from "./types";

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The service's explanation from an error body ({detail: string | [{msg}]}), else the status. */
export function errorMessage(body: unknown, response: Response): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d) => {
        const item = d as { loc?: unknown[]; msg?: string };
        const where = Array.isArray(item.loc) ? item.loc.filter((p) => p !== "body").join(".") : "";
        return where ? `${where}: ${item.msg}` : String(item.msg);
      })
      .join("; ");
  }
  return `${response.status} ${response.statusText || "error"}`;
}

interface Outcome<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.error !== undefined || !outcome.response.ok || outcome.data === undefined) {
    throw new ApiError(errorMessage(outcome.error, outcome.response), outcome.response.status);
  }
  return outcome.data;
}

export type AssetFormat = "glb" | "step" | "stl" | "3mf" | "ply" | "spz" | "splat-glb" | "png" | "manifest";

export class Api {
  private readonly client;

  /** `getKey` is read on every request; `onUnauthorized` runs on a 401. */
  constructor(getKey: () => string | null, onUnauthorized: () => void, baseUrl = location.origin) {
    this.client = createClient<paths>({ baseUrl });
    this.client.use({
      onRequest({ request }) {
        const key = getKey();
        if (key) request.headers.set("Authorization", `Bearer ${key}`);
        return request;
      },
      onResponse({ response }) {
        if (response.status === 401) onUnauthorized();
        return response;
      },
    });
  }

  async generate(body: GenerationCreate): Promise<JobAccepted> {
    return unwrap(await this.client.POST("/v1/generations", { body }));
  }

  async job(id: string): Promise<Job> {
    return unwrap(await this.client.GET("/v1/generations/{job_id}", { params: { path: { job_id: id } } }));
  }

  /** The job's Server-Sent Events stream (read it with readSse). */
  async jobEvents(id: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const outcome = await this.client.GET("/v1/generations/{job_id}/events", {
      params: { path: { job_id: id } },
      parseAs: "stream",
      headers: { Accept: "text/event-stream" },
      signal,
    });
    const body = outcome.response.body;
    if (!outcome.response.ok || !body) {
      throw new ApiError(errorMessage(outcome.error, outcome.response), outcome.response.status);
    }
    return body;
  }

  async validate(body: ValidateRequest, signal?: AbortSignal): Promise<Report> {
    return unwrap(await this.client.POST("/v1/validate", { body, signal })) as unknown as Report;
  }

  async createSession(domain: Domain, name = ""): Promise<string> {
    return unwrap(await this.client.POST("/v1/sessions", { body: { domain, name } })).id;
  }

  async session(id: string): Promise<Session> {
    return unwrap(
      await this.client.GET("/v1/sessions/{session_id}", { params: { path: { session_id: id } } }),
    );
  }

  async version(id: string): Promise<Version> {
    return unwrap(
      await this.client.GET("/v1/versions/{version_id}", { params: { path: { version_id: id } } }),
    );
  }

  async createVersion(sessionId: string, body: VersionCreate): Promise<JobAccepted> {
    return unwrap(
      await this.client.POST("/v1/sessions/{session_id}/versions", {
        params: { path: { session_id: sessionId } },
        body,
      }),
    );
  }

  /** A generation's picture of one of its candidates (PNG). */
  async candidatePreview(jobId: string, index: number): Promise<Blob> {
    const outcome = await this.client.GET("/v1/generations/{job_id}/candidates/{index}/preview", {
      params: { path: { job_id: jobId, index } },
      parseAs: "blob",
    });
    return unwrap(outcome as Outcome<Blob>);
  }

  /** A version's file in `format` (any of its asset ids will do; other formats are made on demand). */
  async asset(assetId: string, format: AssetFormat): Promise<Blob> {
    const outcome = await this.client.GET("/v1/assets/{asset_id}", {
      params: { path: { asset_id: assetId }, query: { format } },
      parseAs: "blob",
    });
    return unwrap(outcome as Outcome<Blob>);
  }
}
