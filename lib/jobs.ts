import { type Transaction } from "sequelize";
import type { Scope } from "./access";
import { newId } from "./crypto";
import type { QueueFigures } from "./business-metrics";
import { Binds, query, queryAcrossWorkspaces } from "./database";
import { found, invalidState } from "./errors";
import { selectPage, type Page, type PageRequest } from "./pagination";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "./queue-stats";
import type { WorkspaceId } from "./tenancy";

/**
 * Long work as a job with progress. The row is written first and the caller
 * answers 202 `{jobId}` at once; the work runs in this process, writing
 * progress (which doubles as a heartbeat). A job whose process died stops
 * heartbeating and is marked failed by `failAbandonedJobs`. A job that must
 * commit with another write is queued in that write's transaction
 * (`queueJobs`) and started by its owner (`startQueuedJobs`).
 *
 * A job that can stop halfway without harm (each step it took stands on its
 * own, and running it again finishes the work) names the permission its
 * cancel needs. A cancel marks the row, on whichever node it arrives; the
 * worker sees it at its next progress write (at most every half second
 * while it reports) and stops there: `progress` throws `JobCancelled`.
 */
export type ProgressFn = (done: number, total?: number) => Promise<void>;

export interface JobSpec {
  workspaceId: WorkspaceId;
  type: string;
  createdBy?: string | null;
  total?: number;
  /** Set when stopping halfway is safe: the permission a cancel needs. */
  cancelPermission?: Scope;
}

/** What `progress` throws once the job was cancelled; the work stops there. */
class JobCancelled extends Error {
  constructor() {
    super("The job was cancelled");
    this.name = "JobCancelled";
  }
}

export interface JobView {
  id: string;
  type: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled";
  progress: { done: number; total: number | null };
  result: unknown;
  error: string | null;
  /** Whether a cancel would stop it now. */
  cancellable: boolean;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Progress writes are throttled: at most one UPDATE per interval, plus the final one. */
const PROGRESS_INTERVAL_MS = 500;
export const ABANDONED_AFTER_MS = 5 * 60 * 1000;

export async function startJob(
  spec: JobSpec,
  work: (progress: ProgressFn) => Promise<unknown>,
  onError?: (err: unknown) => void,
): Promise<{ jobId: string; done: Promise<void> }> {
  const jobId = newId();
  await query(
    spec.workspaceId,
    `INSERT INTO jobs (id, workspace_id, type, status, progress_total, created_by, cancel_permission,
                       created_at, started_at, heartbeat_at)
     VALUES ($2, $1, $3, 'running', $4, $5, $6, now(), now(), now())`,
    [jobId, spec.type, spec.total ?? null, spec.createdBy ?? null, spec.cancelPermission ?? null],
  );
  return { jobId, done: runJob(jobId, spec.total ?? null, work, onError) };
}

/** A job to queue: its spec and what its work needs to start (stored as JSON). */
export interface QueuedJobSpec<I> extends JobSpec {
  input: I;
}

/**
 * Queue jobs in the caller's transaction, in one statement: they commit (or
 * not) with the caller's write, so a write that commits always has its jobs.
 * Their owner starts them with `startQueuedJobs`; until then they are
 * `queued` (listed, cancellable when they name a permission).
 */
export async function queueJobs<I>(specs: QueuedJobSpec<I>[], transaction: Transaction): Promise<string[]> {
  if (!specs.length) return [];
  const ids = specs.map(() => newId());
  await queryAcrossWorkspaces(
    `INSERT INTO jobs (id, workspace_id, type, status, progress_total, created_by, cancel_permission, input)
     SELECT id, workspace_id, type, 'queued', total, created_by, cancel_permission, input
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::jsonb[])
            AS q(id, workspace_id, type, total, created_by, cancel_permission, input)
     RETURNING id`,
    [
      ids,
      specs.map((s) => s.workspaceId),
      specs.map((s) => s.type),
      specs.map((s) => s.total ?? null),
      specs.map((s) => s.createdBy ?? null),
      specs.map((s) => s.cancelPermission ?? null),
      specs.map((s) => JSON.stringify(s.input)),
    ],
    transaction,
  );
  return ids;
}

/** A queued job as its owner starts it. */
export interface StartedJob<I> {
  jobId: string;
  workspaceId: WorkspaceId;
  input: I;
}

/**
 * Start up to `limit` queued jobs of `type`, oldest first, on any number of
 * replicas at once: each is taken (queued to running) by one of them only
 * (`FOR UPDATE SKIP LOCKED`). Whoever queued them starts them at once; a
 * process that died before it did leaves them queued for the next pass of
 * the owner's periodic step. Answers the jobs started, their work under way.
 */
export async function startQueuedJobs<I>(
  type: string,
  limit: number,
  work: (job: StartedJob<I>, progress: ProgressFn) => Promise<unknown>,
  onError?: (job: StartedJob<I>, err: unknown) => void,
): Promise<Array<StartedJob<I> & { done: Promise<void> }>> {
  const rows = await queryAcrossWorkspaces<{
    id: string;
    workspace_id: WorkspaceId;
    input: I;
    progress_total: number | null;
  }>(
    `UPDATE jobs SET status = 'running', started_at = now(), heartbeat_at = now()
      WHERE id IN (SELECT id FROM jobs WHERE type = $1 AND status = 'queued'
                    ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
        AND status = 'queued'
      RETURNING id, workspace_id, input, progress_total`,
    [type, limit],
  );
  return rows.map((row) => {
    const job: StartedJob<I> = { jobId: row.id, workspaceId: row.workspace_id, input: row.input };
    const done = runJob(
      row.id,
      row.progress_total,
      (progress) => work(job, progress),
      onError && ((err) => onError(job, err)),
    );
    return { ...job, done };
  });
}

/** The work of a running job: progress written as its heartbeat, the outcome as its end. */
function runJob(
  jobId: string,
  initialTotal: number | null,
  work: (progress: ProgressFn) => Promise<unknown>,
  onError?: (err: unknown) => void,
): Promise<void> {
  let lastWrite = 0;
  // The latest progress reported, written or not: the final update keeps it.
  let reported = { done: 0, total: initialTotal };
  const progress: ProgressFn = async (done, total) => {
    reported = { done, total: total ?? reported.total };
    const now = Date.now();
    if (now - lastWrite < PROGRESS_INTERVAL_MS) return;
    lastWrite = now;
    const [row] = await queryAcrossWorkspaces<{ status: string }>(
      `UPDATE jobs SET progress_done = $2, progress_total = COALESCE($3::int, progress_total), heartbeat_at = now()
        WHERE id = $1 RETURNING status`,
      [jobId, done, total ?? null],
    );
    if (row?.status === "cancelled") throw new JobCancelled();
  };

  return (async () => {
    try {
      const result = await work(progress);
      await queryAcrossWorkspaces(
        `UPDATE jobs SET status = 'completed', result = $2::jsonb, finished_at = now(), heartbeat_at = now(),
                progress_total = COALESCE($4::int, progress_total),
                progress_done = COALESCE($4::int, progress_total, $3::int)
          WHERE id = $1 AND status = 'running'`,
        [jobId, JSON.stringify(result ?? null), reported.done, reported.total],
      );
    } catch (err) {
      // A cancel is no failure: the row already says cancelled.
      if ((err as Error | undefined)?.name === "JobCancelled") return;
      onError?.(err);
      const message = err instanceof Error ? err.message : String(err);
      await queryAcrossWorkspaces(
        `UPDATE jobs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1 AND status = 'running'`,
        [jobId, message.slice(0, 2000)],
      ).catch(() => undefined);
    }
  })();
}

interface JobRow {
  id: string;
  type: string;
  status: JobView["status"];
  progress_done: number;
  progress_total: number | null;
  result: unknown;
  error: string | null;
  cancel_permission: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export function jobView(row: JobRow): JobView {
  return {
    id: row.id,
    type: row.type,
    status: row.status,
    progress: { done: row.progress_done, total: row.progress_total },
    result: row.result,
    error: row.error,
    cancellable: row.cancel_permission !== null && (row.status === "running" || row.status === "queued"),
    createdAt: row.created_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

export async function listJobs(
  workspaceId: WorkspaceId,
  filters: { id?: string; type?: string; status?: string },
  page: PageRequest,
): Promise<Page<JobView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filters.id) where.push(`id = ${binds.p(filters.id)}`);
  if (filters.type) where.push(`type = ${binds.p(filters.type)}`);
  if (filters.status) where.push(`status = ${binds.p(filters.status)}`);
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM jobs WHERE ${where.join(" AND ")}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    jobView,
  );
}

/**
 * Cancel a job of the workspace: 404 when it is not one, 409 INVALID_STATE
 * when it cannot stop halfway or has ended; `allowed` checks the caller
 * holds the permission the job names (403 otherwise). The worker stops at
 * its next progress write; what it did until then stays.
 */
export async function cancelJob(
  workspaceId: WorkspaceId,
  jobId: string,
  allowed: (permission: Scope) => void,
): Promise<JobView> {
  const select = () =>
    query<JobRow>(workspaceId, `SELECT * FROM jobs WHERE workspace_id = $1 AND id = $2`, [jobId]);
  const job = found((await select())[0], "Job");
  if (!job.cancel_permission)
    throw invalidState(`A ${job.type} job cannot be stopped halfway: it runs to its end`);
  allowed(job.cancel_permission as Scope);
  const [cancelled] = await query<JobRow>(
    workspaceId,
    `UPDATE jobs SET status = 'cancelled', finished_at = now()
      WHERE workspace_id = $1 AND id = $2 AND status IN ('queued', 'running') RETURNING *`,
    [jobId],
  );
  if (!cancelled)
    throw invalidState(`The job has already ended (${(await select())[0]?.status ?? job.status})`);
  return jobView(cancelled);
}

/** Jobs whose worker stopped heartbeating are failed, so nobody waits on them forever. */
export async function failAbandonedJobs(): Promise<number> {
  const rows = await queryAcrossWorkspaces(
    `UPDATE jobs SET status = 'failed', error = 'The worker running this job stopped', finished_at = now()
      WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => $1)
      RETURNING id`,
    [ABANDONED_AFTER_MS / 1000],
  );
  return rows.length;
}

/**
 * Jobs as a queue (lib/queue-stats.ts): every unfinished job is due (jobs
 * run at once, none waits for a time), aged from its creation, so a job
 * stuck before the sweep fails it shows as an old due row.
 */
export async function jobQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("true", "created_at")} FROM jobs WHERE status IN ('queued', 'running')`,
    [],
  );
  return queueFigures("jobs", row);
}
