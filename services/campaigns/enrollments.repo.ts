import { Binds, query, queryAcrossWorkspaces, queryAcrossWorkspacesPrepared } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { QueueFigures } from "../../lib/business-metrics";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import type { EnrollmentView } from "./campaigns.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of enrollments as they run: claim, save steps, waits, goals, exits, listing. */

export interface EnrollmentRow {
  id: string;
  workspace_id: WorkspaceId;
  campaign_id: string;
  contact_id: string;
  version: number;
  status: EnrollmentView["status"];
  current_node_id: string | null;
  next_branch: string | null;
  waiting_until: Date | null;
  waiting_event: string | null;
  run_at: Date | null;
  trigger_id: string | null;
  event: Record<string, unknown> | null;
  exit_reason: string | null;
  finished_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** The node that last claimed its step. */
  claimed_by: string | null;
}

export const enrollmentView = (r: EnrollmentRow): EnrollmentView => ({
  id: r.id,
  campaignId: r.campaign_id,
  contactId: r.contact_id,
  version: r.version,
  status: r.status,
  currentNodeId: r.current_node_id,
  waitingUntil: r.waiting_until,
  triggerId: r.trigger_id,
  exitReason: r.exit_reason,
  finishedAt: r.finished_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The step queue's figures across workspaces (lib/queue-stats.ts): enrollments of active campaigns with a step to run. */
export async function stepQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("d.run_at <= now()", "d.run_at")}
       FROM campaign_enrollments d JOIN campaigns c ON c.id = d.campaign_id
      WHERE d.run_at IS NOT NULL AND c.status = 'active'`,
    [],
  );
  return queueFigures("campaign_steps", row);
}

/** Live enrollments across workspaces by status (read through the due index: live ones have a `run_at`). */
export async function liveEnrollmentCounts(): Promise<Array<{ status: string; count: number }>> {
  const rows = await queryAcrossWorkspaces<{ status: string; count: string }>(
    `SELECT status, count(*) AS count FROM campaign_enrollments
      WHERE run_at IS NOT NULL AND status IN ('active', 'waiting') GROUP BY status`,
    [],
  );
  return rows.map((r) => ({ status: r.status, count: Number(r.count) }));
}

/**
 * Take up to `limit` due enrollments of active campaigns for node `nodeId`, each leased for
 * `leaseMs` (its `run_at` moved on): a replica that dies mid-step leaves it
 * to be taken again when the lease ends.
 */
export async function claimDue(
  nodeId: string,
  limit: number,
  leaseMs: number,
): Promise<Array<EnrollmentRow & { priority: number }>> {
  return queryAcrossWorkspaces<EnrollmentRow & { priority: number }>(
    `UPDATE campaign_enrollments e
        SET run_at = now() + make_interval(secs => $2::double precision / 1000), claimed_by = $3
      WHERE e.id IN (SELECT d.id FROM campaign_enrollments d JOIN campaigns c ON c.id = d.campaign_id
                      WHERE d.run_at <= now() AND c.status = 'active'
                      ORDER BY d.run_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED)
      RETURNING e.*, (SELECT c.priority FROM campaigns c WHERE c.id = e.campaign_id) AS priority`,
    [limit, leaseMs, nodeId],
  );
}

export interface StepRecord {
  nodeId: string;
  outcome: "ok" | "branched" | "skipped" | "failed";
  branch: string | null;
  detail: string | null;
}

/** An enrollment's next state. `runAt` null: nothing more to run (finished). */
export interface NextStep {
  status: EnrollmentRow["status"];
  currentNodeId: string | null;
  runAt: Date | null;
  waitingUntil?: Date | null;
  waitingEvent?: string | null;
  exitReason?: string | null;
}

/** One enrollment's save: its next state with the logs of the steps that led there, in order. */
export interface StepSave {
  e: EnrollmentRow;
  next: NextStep;
  logs: StepRecord[];
}

/**
 * Enrollments' next states and their logs, in one statement for them all.
 * An enrollment that ended meanwhile (a goal, its campaign completed) stays
 * ended.
 */
export async function saveSteps(saves: StepSave[]): Promise<void> {
  if (!saves.length) return;
  const logs = saves.flatMap(({ e, logs }) => logs.map((l) => ({ e, l })));
  const finished = (status: string) => status === "completed" || status === "exited" || status === "failed";
  await queryAcrossWorkspacesPrepared(
    `WITH s AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::text[],
                            $8::boolean[])
              AS s(id, status, current_node_id, run_at, waiting_until, waiting_event, exit_reason, finished)
     ), logged AS (
       INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, branch, detail)
       SELECT l.workspace_id, l.campaign_id, l.enrollment_id, l.contact_id, l.node_id, l.outcome, l.branch, l.detail
         FROM unnest($9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[])
              WITH ORDINALITY AS l(workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, branch, detail, n)
        ORDER BY l.n)
     UPDATE campaign_enrollments e SET status = s.status, current_node_id = s.current_node_id, run_at = s.run_at,
            waiting_until = s.waiting_until, waiting_event = s.waiting_event, next_branch = NULL, exit_reason = s.exit_reason,
            finished_at = CASE WHEN s.finished THEN now() END, updated_at = now()
       FROM s
      WHERE e.id = s.id AND e.status IN ('active', 'waiting')`,
    [
      saves.map(({ e }) => e.id),
      saves.map(({ next }) => next.status),
      saves.map(({ next }) => next.currentNodeId),
      saves.map(({ next }) => next.runAt),
      saves.map(({ next }) => next.waitingUntil ?? null),
      saves.map(({ next }) => next.waitingEvent ?? null),
      saves.map(({ next }) => next.exitReason ?? null),
      saves.map(({ next }) => finished(next.status)),
      logs.map(({ e }) => e.workspace_id),
      logs.map(({ e }) => e.campaign_id),
      logs.map(({ e }) => e.id),
      logs.map(({ e }) => e.contact_id),
      logs.map(({ l }) => l.nodeId),
      logs.map(({ l }) => l.outcome),
      logs.map(({ l }) => l.branch),
      logs.map(({ l }) => l.detail),
    ],
  );
}

/** The contact's enrollments waiting for an event of `type`, each at its wait node. */
export async function waitingFor(workspaceId: WorkspaceId, contactId: string, type: string) {
  return query<{ id: string; campaign_id: string; version: number; current_node_id: string }>(
    workspaceId,
    `SELECT id, campaign_id, version, current_node_id FROM campaign_enrollments
      WHERE workspace_id = $1 AND contact_id = $2 AND status = 'waiting' AND waiting_event = $3`,
    [contactId, type],
  );
}

/**
 * These waits end now, by their `event` branch; answers how many. Only a
 * wait no runner holds (its `run_at` is still its end): one taken at its
 * timeout goes on by the timeout.
 */
export async function resumeWaits(workspaceId: WorkspaceId, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const rows = await query<{ id: string }>(
    workspaceId,
    `UPDATE campaign_enrollments SET next_branch = 'event', run_at = now(), updated_at = now()
      WHERE workspace_id = $1 AND id = ANY ($2::text[]) AND status = 'waiting' AND run_at = waiting_until
      RETURNING id`,
    [ids],
  );
  return rows.length;
}

/**
 * The contact's live enrollments whose version has a goal on `type` complete
 * now, wherever they are in the graph; answers how many.
 */
export async function completeGoals(
  workspaceId: WorkspaceId,
  contactId: string,
  type: string,
): Promise<number> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `WITH reached AS (
       UPDATE campaign_enrollments e SET status = 'completed', exit_reason = 'goal', run_at = NULL, waiting_until = NULL,
              waiting_event = NULL, finished_at = now(), updated_at = now()
         FROM campaign_versions v
        WHERE e.workspace_id = $1 AND e.contact_id = $2 AND e.status IN ('active', 'waiting')
          AND v.campaign_id = e.campaign_id AND v.number = e.version
          AND v.workflow -> 'nodes' @> jsonb_build_array(jsonb_build_object('type', 'goal', 'config', jsonb_build_object('event', $3::text)))
       RETURNING e.*)
     INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, detail)
     SELECT r.workspace_id, r.campaign_id, r.id, r.contact_id,
            (SELECT n ->> 'id' FROM campaign_versions v, jsonb_array_elements(v.workflow -> 'nodes') n
              WHERE v.campaign_id = r.campaign_id AND v.number = r.version
                AND n ->> 'type' = 'goal' AND n -> 'config' ->> 'event' = $3 LIMIT 1),
            'ok', 'goal reached: ' || $3
       FROM reached r
     RETURNING enrollment_id`,
    [contactId, type],
  );
  return rows.length;
}

/** A campaign's live enrollments end (`completed` or `archived` campaign): exited with `reason`. */
export async function exitLive(
  workspaceId: WorkspaceId,
  campaignId: string,
  reason: string,
): Promise<number> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `UPDATE campaign_enrollments SET status = 'exited', exit_reason = $3, run_at = NULL, waiting_until = NULL,
            waiting_event = NULL, finished_at = now(), updated_at = now()
      WHERE workspace_id = $1 AND campaign_id = $2 AND status IN ('active', 'waiting') RETURNING id`,
    [campaignId, reason],
  );
  return rows.length;
}

export async function listEnrollments(
  workspaceId: WorkspaceId,
  filter: { campaignId?: string; contactId?: string; status?: string },
  page: PageRequest,
): Promise<Page<EnrollmentView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.campaignId) where.push(`campaign_id = ${binds.p(filter.campaignId)}`);
  if (filter.contactId) where.push(`contact_id = ${binds.p(filter.contactId)}`);
  if (filter.status) where.push(`status = ${binds.p(filter.status)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    { select: `SELECT * FROM campaign_enrollments WHERE ${clause}`, orderBy: "created_at DESC, id DESC" },
    binds.values,
    page,
    enrollmentView,
  );
}

/** Whether the contact clicked `url` in the message of a step (its click event). */
export async function linkClicked(
  workspaceId: WorkspaceId,
  contactId: string,
  messageId: string,
  url: string,
): Promise<boolean> {
  const [row] = await query<{ yes: boolean }>(
    workspaceId,
    `SELECT EXISTS (SELECT 1 FROM events WHERE workspace_id = $1 AND contact_id = $3 AND type = 'message.click'
                      AND metadata ->> 'messageId' = $2 AND metadata ->> 'url' = $4) AS yes`,
    [messageId, contactId, url],
  );
  return row?.yes ?? false;
}
