import type { Context, LoggerInstance, ServiceBroker } from "moleculer";
import { startJob, type ProgressFn } from "../../lib/jobs";
import {
  RETENTION_KIND_NAMES,
  RETENTION_KINDS,
  type RetentionCounts,
  type RetentionKind,
  type RetentionPolicy,
} from "../../lib/retention";
import { systemCall } from "../../lib/system-call";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The purge: for each kind the policy keeps a number of days, the owning
 * area deletes its rows older than the cutoff in batches (`<area>.purgeBefore`,
 * one short statement each), until a batch comes back short. The cutoffs are
 * fixed when the purge starts, so what it deletes is what a dry run counts at
 * that moment; rows written meanwhile are newer and stay. Each batch starts
 * at the time the previous one reached, so an old row backfilled behind it
 * meanwhile waits for the next day's run.
 */

export const PURGE_JOB = "retention.purge";
/** Rows per delete statement: each holds its row locks for tens of milliseconds, never a table lock. */
export const PURGE_BATCH = 5_000;
/**
 * After each batch the purge rests as long as the batch took, so it holds at
 * most half of one database backend and the ingest beside it keeps its pace
 * (bench/retention.ts); a daily purge has the time.
 */
export const PURGE_REST_RATIO = 1;

const DAY_MS = 24 * 60 * 60 * 1000;

export type Cutoffs = Record<RetentionKind, Date | null>;

/** Each kind's cutoff: rows older than `now` − its days go; null for a kind kept. */
export function cutoffsOf(policy: RetentionPolicy, now: Date): Cutoffs {
  const cutoff = (days: number | null) => (days === null ? null : new Date(now.getTime() - days * DAY_MS));
  return {
    events: cutoff(policy.events),
    messages: cutoff(policy.messages),
    formSubmissions: cutoff(policy.formSubmissions),
    webhookDeliveries: cutoff(policy.webhookDeliveries),
  };
}

const zeroCounts = (): RetentionCounts => ({
  events: 0,
  messages: 0,
  formSubmissions: 0,
  webhookDeliveries: 0,
});

/** What a purge at these cutoffs would delete now, per kind (0 for a kind kept): the dry run's answer. */
export async function countAll(
  from: Context | ServiceBroker,
  workspaceId: WorkspaceId,
  cutoffs: Cutoffs,
): Promise<RetentionCounts> {
  const counts = zeroCounts();
  await Promise.all(
    RETENTION_KIND_NAMES.map(async (kind) => {
      const before = cutoffs[kind];
      if (!before) return;
      const answer = await systemCall<{ count: number }>(
        from,
        workspaceId,
        `${RETENTION_KINDS[kind]}.countBefore`,
        { before: before.toISOString() },
      );
      counts[kind] = answer.count;
    }),
  );
  return counts;
}

export interface PurgeResult {
  deleted: RetentionCounts;
  /** Each kind's cutoff (ISO 8601), null for a kind kept. */
  before: Record<RetentionKind, string | null>;
}

/** The job's work: counts first (the progress total), then each kind batch by batch; a cancel stops it between batches. */
export async function purge(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  cutoffs: Cutoffs,
  progress: ProgressFn,
  { batch = PURGE_BATCH, restRatio = PURGE_REST_RATIO } = {},
): Promise<PurgeResult> {
  const expected = await countAll(broker, workspaceId, cutoffs);
  let total = RETENTION_KIND_NAMES.reduce((sum, kind) => sum + expected[kind], 0);
  const deleted = zeroCounts();
  let done = 0;
  await progress(0, total);
  for (const kind of RETENTION_KIND_NAMES) {
    const before = cutoffs[kind];
    if (!before) continue;
    let from: string | null = null;
    for (;;) {
      const batchStart = Date.now();
      const answer: { deleted: number; last: string | null } = await systemCall(
        broker,
        workspaceId,
        `${RETENTION_KINDS[kind]}.purgeBefore`,
        { before: before.toISOString(), limit: batch, ...(from ? { from } : {}) },
      );
      from = answer.last ?? from;
      deleted[kind] += answer.deleted;
      done += answer.deleted;
      // A backfill of old rows meanwhile may outgrow the first count.
      total = Math.max(total, done);
      await progress(done, total);
      if (answer.deleted < batch) break;
      const rest = (Date.now() - batchStart) * restRatio;
      if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    }
  }
  const before = Object.fromEntries(
    RETENTION_KIND_NAMES.map((kind) => [kind, cutoffs[kind]?.toISOString() ?? null]),
  ) as PurgeResult["before"];
  return { deleted, before };
}

/** Start a purge as a job (stopping it halfway is safe: what went stays gone, the next run goes on). */
export async function startPurge(
  broker: ServiceBroker,
  logger: LoggerInstance,
  workspaceId: WorkspaceId,
  policy: RetentionPolicy,
  createdBy: string | null,
): Promise<{ jobId: string; done: Promise<void> }> {
  const cutoffs = cutoffsOf(policy, new Date());
  return startJob(
    { workspaceId, type: PURGE_JOB, createdBy, cancelPermission: "settings.manage" },
    (progress) => purge(broker, workspaceId, cutoffs, progress),
    (err) => logger.error(`Retention purge of workspace ${workspaceId} failed`, err),
  );
}
