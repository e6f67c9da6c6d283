/**
 * Types of the API's objects. The routes and bodies come from the generated OpenAPI schema
 * (schema.d.ts); the Report and a job's result are free-form objects there, so their known
 * fields are described here.
 */
import type { components } from "./schema";

type Schemas = components["schemas"];
export type Version = Schemas["VersionOut"];
export type Session = Schemas["SessionOut"];
export type Job = Schemas["JobOut"];
export type JobAccepted = Schemas["JobAccepted"];
export type Asset = Schemas["AssetOut"];
export type GenerationCreate = Schemas["GenerationCreate"];
export type VersionCreate = Schemas["VersionCreate"];
export type ValidateRequest = Schemas["ValidateRequest"];
export type Domain = "cad" | "scene" | "code";

export interface Check {
  score: number;
  passed: boolean;
  detail?: unknown;
}

export interface ReportParameter {
  value: number | boolean | string;
  type: string;
  line?: number | null;
}

export interface Report {
  valid: boolean;
  reward: number;
  checks: Record<string, Check>;
  error: { kind: string; message: string; line: number | null } | null;
  metrics: Record<string, unknown>;
  parameters: Record<string, ReportParameter>;
}

export interface Candidate {
  index: number;
  reward: number;
  valid: boolean;
  /** "valid", "not as asked" (sound, not what the request asked) or "invalid". */
  verdict?: string;
  finish_reason?: string;
  program: string;
  /** 0: the first sampling; r: written in repair round r. */
  round?: number;
  /** The candidate this one was fitted to the request's picture from (none: sampled). */
  fitted_from?: number | null;
  /** The model's gallery part this candidate is (none: sampled by the model). */
  retrieved_from?: string | null;
  /** Where its picture is (CAD and scenes that built geometry). */
  preview_url?: string;
}

/** One repair round: the failing candidate fed back with its error, and what came of it. */
export interface RepairRound {
  round: number;
  repaired: number;
  error: { kind: string; message: string; line?: number | null };
  candidates?: number;
  valid?: number;
}

/** What fitting the best part to the request did: to its stated sizes (`sizes`), then to its
 * picture (the scores are image_match; `picture` false when there was none). */
export interface FitSummary {
  improved: boolean;
  score_before: number;
  score_after: number;
  /** parameter: [before, after] */
  changed: Record<string, [number, number]>;
  rounds: number;
  trials: number;
  seconds: number;
  /** the size fit alone (its scores are the request check's) */
  sizes?: FitSummary;
  picture?: boolean;
}

export interface JobResult {
  program?: string;
  report?: Report;
  valid?: boolean;
  candidates?: Candidate[];
  repairs?: RepairRound[];
  fit?: FitSummary | null;
  version_id?: string | null;
  assets?: Asset[];
}

/** A job's result with its known fields (null until the job has one). */
export function jobResult(job: Job): JobResult | null {
  return (job.result as JobResult | null) ?? null;
}

/** A version's Report (never null: an empty invalid one when missing). */
export function versionReport(version: Version): Report {
  const r = version.report as Partial<Report> | null;
  return {
    valid: r?.valid ?? version.valid,
    reward: r?.reward ?? 0,
    checks: r?.checks ?? {},
    error: r?.error ?? null,
    metrics: r?.metrics ?? {},
    parameters: r?.parameters ?? {},
  };
}

export const TERMINAL = new Set(["done", "failed", "cancelled"]);
