import { fieldError, validationError, type FieldIssue } from "../../lib/errors";
import type { DealStatus, PipelineStage } from "../../models";
import { SEARCH_TYPES } from "./crm.schemas";

type SearchType = (typeof SEARCH_TYPES)[number];

/** Pure rules of the CRM area: domain normalisation, pipeline stages, deal status transitions, search types. */

const HOSTNAME =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/** `https://www.Acme.com/about` → `acme.com`; null when what remains is not a hostname. */
export function normaliseDomain(input: string): string | null {
  let value = input.trim().toLowerCase();
  value = value.replace(/^[a-z][a-z0-9+.-]*:\/\//, "");
  value = value.split(/[/?#]/)[0];
  value = value
    .replace(/:\d+$/, "")
    .replace(/^www\./, "")
    .replace(/\.$/, "");
  return HOSTNAME.test(value) ? value : null;
}

export interface StageInput {
  id?: string;
  name: string;
  probability?: number | null;
  won?: boolean;
  lost?: boolean;
}

export const MAX_STAGES = 50;

export const DEFAULT_STAGES: StageInput[] = [
  { name: "Lead", probability: 10 },
  { name: "Qualified", probability: 25 },
  { name: "Proposal", probability: 50 },
  { name: "Negotiation", probability: 75 },
  { name: "Closed won", probability: 100, won: true },
  { name: "Closed lost", probability: 0, lost: true },
];

/**
 * Turn the stages a client sent into the stored ordered list. A stage that
 * carries an `id` keeps it (it must be one of `existing`); one without gets a
 * new id. Names are unique (case-insensitive); a stage is won or lost, not
 * both. Answers the stored list and the ids of existing stages left out.
 */
export function buildStages(
  input: StageInput[],
  existing: PipelineStage[],
  makeId: () => string,
): { stages: PipelineStage[]; removedIds: string[] } {
  const issues: FieldIssue[] = [];
  if (input.length === 0) issues.push({ field: "stages", message: "must have at least one stage" });
  if (input.length > MAX_STAGES)
    issues.push({ field: "stages", message: `must have at most ${MAX_STAGES} stages` });
  const known = new Set(existing.map((s) => s.id));
  const names = new Set<string>();
  const ids = new Set<string>();
  const stages = input.map((stage, index): PipelineStage => {
    const at = `stages[${index}]`;
    const name = stage.name.trim();
    if (!name) issues.push({ field: `${at}.name`, message: "must not be empty" });
    if (names.has(name.toLowerCase()))
      issues.push({ field: `${at}.name`, message: "must be unique within the pipeline" });
    names.add(name.toLowerCase());
    if (stage.id !== undefined) {
      if (!known.has(stage.id))
        issues.push({ field: `${at}.id`, message: "is not a stage of this pipeline" });
      if (ids.has(stage.id)) issues.push({ field: `${at}.id`, message: "appears twice" });
      ids.add(stage.id);
    }
    const won = stage.won === true;
    const lost = stage.lost === true;
    if (won && lost) issues.push({ field: `${at}.won`, message: "a stage cannot be both won and lost" });
    const probability = stage.probability ?? (won ? 100 : lost ? 0 : null);
    return { id: stage.id ?? makeId(), name, probability, won, lost };
  });
  if (issues.length) throw validationError(issues[0].field + " " + issues[0].message, issues);
  return { stages, removedIds: existing.filter((s) => !ids.has(s.id)).map((s) => s.id) };
}

export const statusOfStage = (stage: Pick<PipelineStage, "won" | "lost">): DealStatus =>
  stage.won ? "won" : stage.lost ? "lost" : "open";

/** A deal closes when it enters a won or lost stage and reopens when it leaves them. */
export function closedAtAfterMove(
  from: DealStatus,
  to: DealStatus,
  current: Date | null,
  now: Date,
): Date | null {
  if (to === "open") return null;
  if (from === to && current) return current;
  return now;
}

/** The key that makes the due notification of one task for one due date unique. */
export const dueNotificationKey = (taskId: string, dueAt: Date, userId: string) =>
  `task.due:${taskId}:${dueAt.toISOString()}:${userId}`;

/** Merge a patch into a JSON object key by key; a key set to null is removed. */
export function mergeObject(
  current: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const merged = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

/** One row of `GROUP BY pipeline, stage, status, currency` over deals (`value` as numeric text). */
export interface DealGroupRow {
  pipelineId: string;
  stageId: string;
  status: DealStatus;
  currency: string;
  count: number;
  value: string;
}

/** Money summed per currency: `{ USD: 1200.5, EUR: 300 }` (values of different currencies are never added). */
export type Amounts = Record<string, number>;
export interface Bucket {
  count: number;
  value: Amounts;
}

const addTo = (bucket: Bucket, row: DealGroupRow) => {
  bucket.count += row.count;
  bucket.value[row.currency] = round2((bucket.value[row.currency] ?? 0) + Number(row.value));
};
const round2 = (n: number) => Math.round(n * 100) / 100;
const emptyBucket = (): Bucket => ({ count: 0, value: {} });

/**
 * The deals/stats answer: every stage of every pipeline (empty ones too, in
 * pipeline order) with its count, value and probability-weighted value, and
 * open/won/lost totals with the win rate (won / (won + lost)).
 */
export function summariseDeals(
  pipelines: Array<{ id: string; name: string; isDefault: boolean; stages: PipelineStage[] }>,
  rows: DealGroupRow[],
) {
  const totals = { open: emptyBucket(), won: emptyBucket(), lost: emptyBucket() };
  const byStage = new Map<string, Bucket>();
  for (const row of rows) {
    addTo(totals[row.status], row);
    const key = `${row.pipelineId}/${row.stageId}`;
    if (!byStage.has(key)) byStage.set(key, emptyBucket());
    addTo(byStage.get(key)!, row);
  }
  const closed = totals.won.count + totals.lost.count;
  return {
    pipelines: pipelines.map((p) => ({
      id: p.id,
      name: p.name,
      isDefault: p.isDefault,
      stages: p.stages.map((s, position) => {
        const bucket = byStage.get(`${p.id}/${s.id}`) ?? emptyBucket();
        const weighted: Amounts = {};
        for (const [currency, amount] of Object.entries(bucket.value))
          weighted[currency] = round2((amount * (s.probability ?? 0)) / 100);
        return {
          id: s.id,
          name: s.name,
          position,
          probability: s.probability,
          won: s.won,
          lost: s.lost,
          ...bucket,
          weightedValue: weighted,
        };
      }),
    })),
    totals: { ...totals, all: { count: totals.open.count + closed } },
    winRate: closed === 0 ? null : round2(totals.won.count / closed),
  };
}

/** The record types a search asks for: all, or the comma-separated `types` (400 naming `types` for an unknown one). */
export function searchTypes(types: string | undefined): SearchType[] {
  if (!types) return [...SEARCH_TYPES];
  const asked = types
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  const unknown = asked.find((t) => !(SEARCH_TYPES as readonly string[]).includes(t));
  if (unknown || !asked.length)
    throw fieldError("types", `must be a comma-separated list of ${SEARCH_TYPES.join(", ")}`);
  return [...new Set(asked as SearchType[])];
}
