import { newId } from "../../lib/crypto";
import { database, query, queryAcrossWorkspaces } from "../../lib/database";
import { queueJobs } from "../../lib/jobs";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { ReportInput, ReportView, ScheduleInput, ScheduleView } from "./reports.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Saved reports and their schedules; every statement is scoped by the workspace, except the due claim across them. */

interface ReportRow {
  id: string;
  name: string;
  endpoint: string;
  params: Record<string, unknown>;
  last_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const reportView = (r: ReportRow): ReportView => ({
  id: r.id,
  name: r.name,
  endpoint: r.endpoint,
  params: r.params ?? {},
  lastRunAt: r.last_run_at?.toISOString() ?? null,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

const REPORT = "id, name, endpoint, params, last_run_at, created_at, updated_at";

export function listReports(workspaceId: WorkspaceId, page: PageRequest): Promise<Page<ReportView>> {
  return selectPage<ReportRow, ReportView>(
    workspaceId,
    {
      select: `SELECT ${REPORT} FROM reports WHERE workspace_id = $1`,
      orderBy: "created_at DESC, id DESC",
      countFrom: "FROM reports WHERE workspace_id = $1",
    },
    [],
    page,
    reportView,
  );
}

export async function getReport(workspaceId: WorkspaceId, reportId: string): Promise<ReportView | null> {
  const [row] = await query<ReportRow>(
    workspaceId,
    `SELECT ${REPORT} FROM reports WHERE workspace_id = $1 AND id = $2`,
    [reportId],
  );
  return row ? reportView(row) : null;
}

export async function createReport(
  workspaceId: WorkspaceId,
  input: ReportInput,
  createdBy: string | null,
): Promise<ReportView> {
  const [row] = await query<ReportRow>(
    workspaceId,
    `INSERT INTO reports (id, workspace_id, name, endpoint, params, created_by)
     VALUES ($2, $1, $3, $4, $5::jsonb, $6) RETURNING ${REPORT}`,
    [newId(), input.name, input.endpoint, JSON.stringify(input.params), createdBy],
  );
  return reportView(row);
}

/** The whole definition replaces the report's; null when the workspace has no such report. */
export async function updateReport(
  workspaceId: WorkspaceId,
  reportId: string,
  input: ReportInput,
): Promise<ReportView | null> {
  const [row] = await query<ReportRow>(
    workspaceId,
    `UPDATE reports SET name = $3, endpoint = $4, params = $5::jsonb, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING ${REPORT}`,
    [reportId, input.name, input.endpoint, JSON.stringify(input.params)],
  );
  return row ? reportView(row) : null;
}

/** Whether it was one of the workspace's; its schedules go with it. */
export async function deleteReport(workspaceId: WorkspaceId, reportId: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM reports WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [reportId],
  );
  return rows.length > 0;
}

export async function markReportRun(workspaceId: WorkspaceId, reportId: string, at: Date): Promise<void> {
  await query(
    workspaceId,
    `UPDATE reports SET last_run_at = GREATEST(last_run_at, $3) WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [reportId, at],
  );
}

interface ScheduleRow {
  id: string;
  workspace_id: WorkspaceId;
  report_id: string;
  cron: string;
  timezone: string;
  recipients: string[];
  active: boolean;
  last_run_at: Date | null;
  next_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const scheduleView = (s: ScheduleRow): ScheduleView => ({
  id: s.id,
  reportId: s.report_id,
  cron: s.cron,
  timezone: s.timezone,
  recipients: s.recipients,
  active: s.active,
  lastRunAt: s.last_run_at?.toISOString() ?? null,
  nextRunAt: s.next_run_at?.toISOString() ?? null,
  createdAt: s.created_at.toISOString(),
  updatedAt: s.updated_at.toISOString(),
});

const SCHEDULE =
  "id, workspace_id, report_id, cron, timezone, recipients, active, last_run_at, next_run_at, created_at, updated_at";

/** A schedule's definition as stored, with the next run it gives. */
export type ScheduleWrite = ScheduleInput & { nextRunAt: Date | null };

/** Every schedule of the workspace (a bare list: small configuration), oldest first. */
export async function listSchedules(workspaceId: WorkspaceId, reportId?: string): Promise<ScheduleView[]> {
  const rows = await query<ScheduleRow>(
    workspaceId,
    `SELECT ${SCHEDULE} FROM report_schedules
      WHERE workspace_id = $1 AND ($2::text IS NULL OR report_id = $2)
      ORDER BY created_at, id`,
    [reportId ?? null],
  );
  return rows.map(scheduleView);
}

export async function getSchedule(
  workspaceId: WorkspaceId,
  scheduleId: string,
): Promise<ScheduleView | null> {
  const [row] = await query<ScheduleRow>(
    workspaceId,
    `SELECT ${SCHEDULE} FROM report_schedules WHERE workspace_id = $1 AND id = $2`,
    [scheduleId],
  );
  return row ? scheduleView(row) : null;
}

export async function createSchedule(
  workspaceId: WorkspaceId,
  reportId: string,
  input: ScheduleWrite,
): Promise<ScheduleView> {
  const [row] = await query<ScheduleRow>(
    workspaceId,
    `INSERT INTO report_schedules (id, workspace_id, report_id, cron, timezone, recipients, active, next_run_at)
     VALUES ($2, $1, $3, $4, $5, $6::text[], $7, $8) RETURNING ${SCHEDULE}`,
    [newId(), reportId, input.cron, input.timezone, input.recipients, input.active, input.nextRunAt],
  );
  return scheduleView(row);
}

export async function updateSchedule(
  workspaceId: WorkspaceId,
  scheduleId: string,
  input: ScheduleWrite,
): Promise<ScheduleView | null> {
  const [row] = await query<ScheduleRow>(
    workspaceId,
    `UPDATE report_schedules
        SET cron = $3, timezone = $4, recipients = $5::text[], active = $6, next_run_at = $7, updated_at = now()
      WHERE workspace_id = $1 AND id = $2 RETURNING ${SCHEDULE}`,
    [scheduleId, input.cron, input.timezone, input.recipients, input.active, input.nextRunAt],
  );
  return row ? scheduleView(row) : null;
}

export async function deleteSchedule(workspaceId: WorkspaceId, scheduleId: string): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `DELETE FROM report_schedules WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [scheduleId],
  );
  return rows.length > 0;
}

export async function markScheduleRun(workspaceId: WorkspaceId, scheduleId: string, at: Date): Promise<void> {
  await query(
    workspaceId,
    `UPDATE report_schedules SET last_run_at = GREATEST(last_run_at, $3) WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [scheduleId, at],
  );
}

/** A schedule taken by one replica for one due run, and the delivery job queued for it. */
export interface ClaimedSchedule {
  id: string;
  workspaceId: WorkspaceId;
  reportId: string;
  recipients: string[];
  dueAt: Date;
  jobId: string;
}

/** What a queued `reports.deliver` job needs to start. */
export interface DeliveryInput {
  scheduleId: string;
  reportId: string;
  recipients: string[];
}

/**
 * Claim up to `limit` due schedules, on any number of replicas at once: the
 * due rows are locked with FOR UPDATE SKIP LOCKED, moved on to their next
 * run (`next` of each) and given their queued `reports.deliver` job in the
 * same transaction, so a due time is taken by one replica only, once, and a
 * claimed run always has its job (a crash after the commit leaves it queued
 * for the next pass). A schedule with no next run becomes inactive.
 */
export async function claimDueSchedules(
  now: Date,
  limit: number,
  next: (row: { cron: string; timezone: string }) => Date | null,
): Promise<ClaimedSchedule[]> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const due = await queryAcrossWorkspaces<ScheduleRow>(
      `SELECT ${SCHEDULE} FROM report_schedules
        WHERE active AND next_run_at <= $1
        ORDER BY next_run_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED`,
      [now, limit],
      transaction,
    );
    if (!due.length) return [];
    const nextRuns = due.map((row) => next(row)?.toISOString() ?? null);
    await queryAcrossWorkspaces(
      `UPDATE report_schedules s
          SET next_run_at = n.next_run_at, active = n.next_run_at IS NOT NULL
         FROM unnest($1::text[], $2::timestamptz[]) AS n(id, next_run_at)
        WHERE s.id = n.id
        RETURNING s.id`,
      [due.map((row) => row.id), nextRuns],
      transaction,
    );
    const jobIds = await queueJobs<DeliveryInput>(
      due.map((row) => ({
        workspaceId: row.workspace_id,
        type: DELIVERY_JOB,
        total: deliverySteps(row.recipients),
        input: { scheduleId: row.id, reportId: row.report_id, recipients: row.recipients },
      })),
      transaction,
    );
    return due.map((row, i) => ({
      id: row.id,
      workspaceId: row.workspace_id,
      reportId: row.report_id,
      recipients: row.recipients,
      dueAt: row.next_run_at!,
      jobId: jobIds[i],
    }));
  });
}

/** The job type of a schedule's delivery. */
export const DELIVERY_JOB = "reports.deliver";

/** A delivery's progress steps: the report's run, then one per recipient. */
export const deliverySteps = (recipients: string[]) => recipients.length + 1;
