import { QueryTypes } from "sequelize";
import { newId } from "./crypto";
import { Binds, database } from "./database";
import { selectPage, type Page, type PageRequest } from "./pagination";

/**
 * Long work as a job with progress. The row is written first and the caller
 * answers 202 `{jobId}` at once; the work runs in this process, writing
 * progress (which doubles as a heartbeat). A job whose process died stops
 * heartbeating and is marked failed by `failAbandonedJobs`.
 */
export type ProgressFn = (done: number, total?: number) => Promise<void>;

export interface JobSpec {
  workspaceId: string;
  type: string;
  createdBy?: string | null;
  total?: number;
}

export interface JobView {
  id: string;
  type: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled";
  progress: { done: number; total: number | null };
  result: unknown;
  error: string | null;
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
  const sequelize = await database();
  const jobId = newId();
  await sequelize.query(
    `INSERT INTO jobs (id, workspace_id, type, status, progress_total, created_by, created_at, started_at, heartbeat_at)
     VALUES ($1, $2, $3, 'running', $4, $5, now(), now(), now())`,
    { bind: [jobId, spec.workspaceId, spec.type, spec.total ?? null, spec.createdBy ?? null] },
  );

  let lastWrite = 0;
  const progress: ProgressFn = async (done, total) => {
    const now = Date.now();
    if (now - lastWrite < PROGRESS_INTERVAL_MS) return;
    lastWrite = now;
    await sequelize.query(
      `UPDATE jobs SET progress_done = $2, progress_total = COALESCE($3::int, progress_total), heartbeat_at = now()
        WHERE id = $1`,
      { bind: [jobId, done, total ?? null] },
    );
  };

  const done = (async () => {
    try {
      const result = await work(progress);
      await sequelize.query(
        `UPDATE jobs SET status = 'completed', result = $2::jsonb, finished_at = now(), heartbeat_at = now(),
                progress_done = COALESCE(progress_total, progress_done)
          WHERE id = $1`,
        { bind: [jobId, JSON.stringify(result ?? null)] },
      );
    } catch (err) {
      onError?.(err);
      const message = err instanceof Error ? err.message : String(err);
      await sequelize
        .query(`UPDATE jobs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1`, {
          bind: [jobId, message.slice(0, 2000)],
        })
        .catch(() => undefined);
    }
  })();
  return { jobId, done };
}

interface JobRow {
  id: string;
  type: string;
  status: JobView["status"];
  progress_done: number;
  progress_total: number | null;
  result: unknown;
  error: string | null;
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
    createdAt: row.created_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

export async function listJobs(
  workspaceId: string,
  filters: { id?: string; type?: string; status?: string },
  page: PageRequest,
): Promise<Page<JobView>> {
  const binds = new Binds([workspaceId]);
  const where = ["workspace_id = $1"];
  if (filters.id) where.push(`id = ${binds.p(filters.id)}`);
  if (filters.type) where.push(`type = ${binds.p(filters.type)}`);
  if (filters.status) where.push(`status = ${binds.p(filters.status)}`);
  return selectPage(
    { select: `SELECT * FROM jobs WHERE ${where.join(" AND ")}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    jobView,
  );
}

/** Jobs whose worker stopped heartbeating are failed, so nobody waits on them forever. */
export async function failAbandonedJobs(): Promise<number> {
  const sequelize = await database();
  const rows = await sequelize.query(
    `UPDATE jobs SET status = 'failed', error = 'The worker running this job stopped', finished_at = now()
      WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => $1)
      RETURNING id`,
    { bind: [ABANDONED_AFTER_MS / 1000], type: QueryTypes.SELECT },
  );
  return rows.length;
}
