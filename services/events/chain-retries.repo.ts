import type { QueueFigures } from "../../lib/business-metrics";
import { query, queryAcrossWorkspaces } from "../../lib/database";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import type { WorkspaceId } from "../../lib/tenancy";
import { toEvent, type EventRow } from "./events.repo";
import type { EventRecord } from "./events.schemas";

/** The queue of events whose chain stopped at a failed step (migration 0110). */

/** An event stored, its chain to run again after `delayMs`; an event already queued keeps its turn. */
export async function queueChainRetry(
  workspaceId: WorkspaceId,
  eventId: string,
  error: string,
  delayMs: number,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO event_chain_retries (event_id, workspace_id, run_at, last_error)
     VALUES ($2, $1, now() + $3 * interval '1 millisecond', $4)
     ON CONFLICT (event_id) DO NOTHING`,
    [eventId, delayMs, error.slice(0, 1000)],
  );
}

export interface ChainRetry {
  workspaceId: WorkspaceId;
  event: EventRecord;
  /** Runs of the chain from this queue, this one included. */
  attempts: number;
}

/**
 * Due retries of any workspace, claimed (SKIP LOCKED, so replicas never take
 * the same) by moving their `run_at` on by `leaseMs`: a node that dies before
 * finishing one leaves it due again after the lease. Oldest due first.
 */
export async function claimChainRetries(limit: number, leaseMs: number): Promise<ChainRetry[]> {
  const rows = await queryAcrossWorkspaces<EventRow & { workspace_id: WorkspaceId; attempts: number }>(
    `WITH due AS (
       SELECT event_id FROM event_chain_retries WHERE run_at <= now()
        ORDER BY run_at LIMIT $1 FOR UPDATE SKIP LOCKED),
     claimed AS (
       UPDATE event_chain_retries r SET attempts = r.attempts + 1, run_at = now() + $2 * interval '1 millisecond'
         FROM due WHERE r.event_id = due.event_id
       RETURNING r.event_id, r.attempts)
     SELECT e.workspace_id, e.id, e.type, e.metadata, e.timestamp, e.contact_id, e.session_id, e.page_url,
            e.referrer, e.utm_source, e.utm_medium, e.utm_campaign, claimed.attempts
       FROM claimed JOIN events e ON e.id = claimed.event_id
      ORDER BY e.timestamp, e.id`,
    [limit, leaseMs],
  );
  return rows.map((row) => ({ workspaceId: row.workspace_id, event: toEvent(row), attempts: row.attempts }));
}

/** The chain completed: out of the queue. */
export async function finishChainRetry(workspaceId: WorkspaceId, eventId: string): Promise<void> {
  await query(workspaceId, `DELETE FROM event_chain_retries WHERE workspace_id = $1 AND event_id = $2`, [
    eventId,
  ]);
}

/** The chain failed again: due after `delayMs`, with the error kept for the operator. */
export async function postponeChainRetry(
  workspaceId: WorkspaceId,
  eventId: string,
  error: string,
  delayMs: number,
): Promise<void> {
  await query(
    workspaceId,
    `UPDATE event_chain_retries SET run_at = now() + $3 * interval '1 millisecond', last_error = $4
      WHERE workspace_id = $1 AND event_id = $2`,
    [eventId, delayMs, error.slice(0, 1000)],
  );
}

/** The queue's figures (lib/queue-stats.ts). */
export async function chainRetryFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("run_at <= now()", "run_at")} FROM event_chain_retries`,
    [],
  );
  return queueFigures("event_chain_retries", row);
}
