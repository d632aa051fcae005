import { MicroBatcher } from "../../lib/batcher";
import type { QueueFigures } from "../../lib/business-metrics";
import { database, query, queryAcrossWorkspaces, queryAcrossWorkspacesPrepared } from "../../lib/database";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import type { WorkspaceId } from "../../lib/tenancy";
import type { ProviderEvent } from "./callbacks";
import type { InboundAttachment } from "./inbound-mail";

/** The queue of accepted inbound messages waiting to be filed (migration 0105). */

export type InboundEvent = Extract<ProviderEvent, { kind: "inbound" }>;

/** An inbound message to store, as the webhook read it. */
export interface AcceptedInbound {
  workspaceId: WorkspaceId;
  providerId: string;
  /** Unique per provider: a retried webhook's message is stored once. */
  dedupeKey: string;
  /** Channel and sender: one conversation's messages are filed in arrival order. */
  conversation: string;
  inbound: InboundEvent;
  attachments: InboundAttachment[];
}

/** A claimed row, to file. */
export interface ClaimedInbound {
  id: string;
  workspace_id: WorkspaceId;
  provider_id: string;
  conversation: string;
  inbound: InboundEvent;
  attachments: InboundAttachment[];
  attempts: number;
}

/** Rows not filed and not given up on. */
const WAITING = `filed_at IS NULL AND failed_at IS NULL`;

/**
 * Concurrent webhooks' messages go in one insert (one commit); a message
 * already stored (same provider and dedupe key, in this batch or before)
 * answers false.
 */
const acceptor = new MicroBatcher(
  async (items: AcceptedInbound[]): Promise<boolean[]> => {
    const rows = await queryAcrossWorkspacesPrepared<{ provider_id: string; dedupe_key: string }>(
      `INSERT INTO inbound_queue (workspace_id, provider_id, dedupe_key, conversation, inbound, attachments)
       SELECT w, p, k, c, i, a
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[])
              WITH ORDINALITY AS t(w, p, k, c, i, a, n)
        ORDER BY n
       ON CONFLICT (provider_id, dedupe_key) DO NOTHING
       RETURNING provider_id, dedupe_key`,
      [
        items.map((i) => i.workspaceId),
        items.map((i) => i.providerId),
        items.map((i) => i.dedupeKey),
        items.map((i) => i.conversation),
        items.map((i) => JSON.stringify(i.inbound)),
        items.map((i) => JSON.stringify(i.attachments)),
      ],
    );
    const inserted = new Set(rows.map((r) => `${r.provider_id}\n${r.dedupe_key}`));
    // Of two items with one key in a batch, the first was stored.
    return items.map((i) => inserted.delete(`${i.providerId}\n${i.dedupeKey}`));
  },
  { maxBatch: 200, lanes: 1 },
);

/** Store an accepted inbound message; false when it was stored before (a provider's retry). */
export const acceptInbound = (item: AcceptedInbound): Promise<boolean> => acceptor.add(item);

/**
 * A batch of due rows (any workspace) leased to `node` for `leaseSeconds`,
 * oldest first. A row is skipped while an earlier row of its conversation
 * waits or is leased, so one sender's messages are filed in order however
 * many replicas claim; claims take turns (a transaction lock), so each sees
 * the leases of the claim before it.
 */
export async function claimInbound(
  node: string,
  limit: number,
  leaseSeconds: number,
): Promise<ClaimedInbound[]> {
  return (await database())
    .transaction(async (transaction) => {
      await queryAcrossWorkspaces(
        `SELECT pg_advisory_xact_lock(hashtext('inbound_queue claim'))`,
        [],
        transaction,
      );
      return queryAcrossWorkspacesPrepared<ClaimedInbound>(
        `WITH claimable AS (
         SELECT q.id FROM inbound_queue q
          WHERE q.${WAITING} AND q.due_at <= now() AND (q.claimed_until IS NULL OR q.claimed_until < now())
            AND NOT EXISTS (
              SELECT 1 FROM inbound_queue e
               WHERE e.conversation = q.conversation AND e.id < q.id AND e.${WAITING}
                 AND (e.due_at > now() OR e.claimed_until >= now()))
          ORDER BY q.id LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE inbound_queue q
          SET claimed_by = $2, claimed_until = now() + make_interval(secs => $3), attempts = q.attempts + 1
         FROM claimable c WHERE q.id = c.id
       RETURNING q.id, q.workspace_id, q.provider_id, q.conversation, q.inbound, q.attachments, q.attempts`,
        [limit, node, leaseSeconds],
        transaction,
      );
    })
    .then((rows) => rows.sort((a, b) => Number(a.id) - Number(b.id)));
}

/** Rows filed by `node` (a lease another node took over is its to settle). */
export async function markFiled(node: string, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await queryAcrossWorkspacesPrepared(
    `UPDATE inbound_queue SET filed_at = now(), claimed_until = NULL
      WHERE id = ANY($1::bigint[]) AND claimed_by = $2`,
    [ids, node],
  );
}

/** What became of a row that was not filed. */
export interface Unfiled {
  id: string;
  /** Null: not tried (an earlier message of its conversation failed), its claim handed back as it was. */
  error: string | null;
  /** Seconds until it is due again; null: given up on (`failed_at`). */
  retryInSeconds: number | null;
}

/** Rows handed back: tried ones due again later (or given up on), untried ones as they were. */
export async function markUnfiled(node: string, rows: Unfiled[]): Promise<void> {
  if (!rows.length) return;
  await queryAcrossWorkspacesPrepared(
    `UPDATE inbound_queue q
        SET claimed_until = NULL,
            attempts = CASE WHEN u.error IS NULL THEN q.attempts - 1 ELSE q.attempts END,
            last_error = coalesce(u.error, q.last_error),
            due_at = CASE WHEN u.error IS NULL THEN q.due_at
                          ELSE now() + make_interval(secs => coalesce(u.retry_in, 0)) END,
            failed_at = CASE WHEN u.error IS NOT NULL AND u.retry_in IS NULL THEN now() END
       FROM unnest($1::bigint[], $2::text[], $3::float8[]) AS u(id, error, retry_in)
      WHERE q.id = u.id AND q.claimed_by = $4`,
    [rows.map((r) => r.id), rows.map((r) => r.error), rows.map((r) => r.retryInSeconds), node],
  );
}

/**
 * The workspace's given-up rows (`failed_at`) due again now, their attempts
 * reset and their last error kept; their kept attachments went when they
 * were given up on, so they are filed without them. Answers how many.
 */
export async function requeueFailedInbound(workspaceId: WorkspaceId): Promise<number> {
  const rows = await query(
    workspaceId,
    `UPDATE inbound_queue
        SET failed_at = NULL, attempts = 0, due_at = now(), claimed_until = NULL, attachments = '[]'::jsonb
      WHERE workspace_id = $1 AND failed_at IS NOT NULL AND filed_at IS NULL
      RETURNING 1`,
  );
  return rows.length;
}

/** Rows neither filed nor given up on (due, waiting or leased): what a drain waits for. */
export async function unfiledCount(): Promise<number> {
  const [row] = await queryAcrossWorkspaces<{ n: string }>(
    `SELECT count(*) AS n FROM inbound_queue WHERE ${WAITING}`,
  );
  return Number(row.n);
}

/** Filed rows older than `hours` dropped (they keep a retried webhook from storing a message again till then). */
export async function dropFiledBefore(hours: number): Promise<number> {
  const rows = await queryAcrossWorkspaces(
    `DELETE FROM inbound_queue WHERE filed_at < now() - make_interval(hours => $1) RETURNING 1`,
    [hours],
  );
  return rows.length;
}

/** The queue's figures (lib/queue-stats.ts) over the rows not yet filed. */
export async function inboundQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("due_at <= now()", "due_at")} FROM inbound_queue WHERE ${WAITING}`,
  );
  return queueFigures("inbound_queue", row);
}
