import { MicroBatcher } from "../../lib/batcher";
import { newId } from "../../lib/crypto";
import { Binds, query, queryAcrossWorkspaces, queryAcrossWorkspacesPrepared } from "../../lib/database";
import type { DomainEvent } from "../../lib/domain-events";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { QueueFigures } from "../../lib/business-metrics";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import { retentionPurge } from "../../lib/retention";
import { deliveryBody } from "./signature";
import type { Delivery } from "./webhooks.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of outbound deliveries (`webhook_deliveries`): fan-out, the page, the lease-claimed queue and its attempts. */

export interface DeliveryRow {
  id: string;
  workspace_id: WorkspaceId;
  endpoint_id: string;
  event: string;
  direction: "INBOUND" | "OUTBOUND";
  /** The exact body sent (OUTBOUND) or received (INBOUND). */
  body: string;
  attempt: number;
  success: boolean;
  status_code: number | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number | null;
  next_attempt_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    event: row.event,
    direction: row.direction,
    attempt: row.attempt,
    success: row.success,
    statusCode: row.status_code,
    responseBody: row.response_body,
    error: row.error,
    durationMs: row.duration_ms,
    nextAttemptAt: iso(row.next_attempt_at),
    payload: JSON.parse(row.body) as Record<string, unknown>,
    createdAt: new Date(row.created_at).toISOString(),
    deliveredAt: iso(row.delivered_at),
  };
}

const DELIVERY_COLUMNS = `id, workspace_id, endpoint_id, event, direction, body, attempt, success, status_code,
  response_body, error, duration_ms, next_attempt_at, created_at, delivered_at`;

export async function listDeliveries(
  workspaceId: WorkspaceId,
  filter: { endpointId?: string; success?: boolean; event?: string },
  page: PageRequest,
): Promise<Page<Delivery>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.endpointId) where.push(`endpoint_id = ${binds.p(filter.endpointId)}`);
  if (filter.success !== undefined) where.push(`success = ${binds.p(filter.success)}`);
  if (filter.event) where.push(`event = ${binds.p(filter.event)}`);
  return selectPage(
    workspaceId,
    {
      select: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${where.join(" AND ")}`,
      orderBy: "created_at DESC, id DESC",
      countFrom: `FROM webhook_deliveries WHERE ${where.join(" AND ")}`,
    },
    binds.values,
    page,
    toDelivery,
  );
}

export async function findDelivery(workspaceId: WorkspaceId, id: string): Promise<DeliveryRow | null> {
  const [row] = await query<DeliveryRow>(
    workspaceId,
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ?? null;
}

/**
 * Fan a domain event out in one statement: one delivery per active OUTBOUND
 * endpoint of the workspace subscribed to its type (`[]` or `*` = all). The
 * unique (endpoint, source event) index makes a redelivered event a no-op.
 */
async function fanOutMany(events: DomainEvent[]): Promise<number[]> {
  const rows = await queryAcrossWorkspacesPrepared<{ source_event_id: string }>(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, source_event_id, body, next_attempt_at)
     SELECT gen_random_uuid()::text, e.workspace_id, e.id, v.type, 'OUTBOUND', v.source_id, v.body, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS v(type, source_id, body, workspace_id)
       JOIN webhook_endpoints e ON e.workspace_id = v.workspace_id
      WHERE e.direction = 'OUTBOUND' AND e.active
        AND (jsonb_array_length(e.events) = 0 OR e.events ? '*' OR e.events ? v.type)
     ON CONFLICT (endpoint_id, source_event_id) WHERE source_event_id IS NOT NULL AND direction = 'OUTBOUND' DO NOTHING
     RETURNING source_event_id`,
    [
      events.map((event) => event.type),
      events.map((event) => event.id),
      events.map((event) =>
        deliveryBody({ event: event.type, timestamp: event.occurredAt, data: event.data }),
      ),
      events.map((event) => event.workspaceId),
    ],
  );
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.source_event_id, (counts.get(row.source_event_id) ?? 0) + 1);
  return events.map((event) => counts.get(event.id) ?? 0);
}

/** Domain events arriving together are fanned out by one statement (one commit), see lib/batcher.ts. */
const fanOutWriter = new MicroBatcher(fanOutMany, { maxBatch: 200, lanes: 1 });

/** The number of deliveries queued for this event. */
export function fanOut(event: DomainEvent): Promise<number> {
  return fanOutWriter.add(event);
}

/** A claimed delivery: what the sender signs and sends, with its endpoint's target and secret. */
export interface ClaimedDelivery extends Pick<
  DeliveryRow,
  "id" | "endpoint_id" | "event" | "body" | "attempt"
> {
  url: string | null;
  secret_sealed: string | null;
  active: boolean;
  claim_token: string;
}

/** The columns of a claim: only what an attempt is made from (a claim returns hundreds of rows). */
const CLAIMED = `u.id, u.endpoint_id, u.event, u.body, u.attempt, u.claim_token, e.url, e.secret_sealed, e.active`;

/**
 * A one-time filter that lets the statement's commit skip the wait for the WAL flush: a claim or an attempt's
 * record lost by a database crash only sends the delivery again (at least once).
 */
const NO_FLUSH_WAIT = `(SELECT set_config('synchronous_commit', 'off', true)) = 'off'`;

/** How many more deliveries of each endpoint a dispatcher may claim. */
export interface EndpointRoom {
  /** Room of endpoints not listed in `room`. */
  perEndpoint: number;
  /** Room of the endpoints the dispatcher holds rows of, or knows to be failing, by id; 0 = not read at all. */
  room: Record<string, number>;
}

/** Queued OUTBOUND deliveries: the rows of `webhook_deliveries_queue_idx` (endpoint, then age). */
const QUEUED = `next_attempt_at IS NOT NULL AND direction = 'OUTBOUND'`;

/**
 * The endpoint as `webhook_deliveries_queue_idx` holds it (migration 0106): written so, a condition on it can be
 * served by that index alone, whatever the statistics say of the share of rows queued.
 */
const QUEUE_ENDPOINT = `endpoint_id COLLATE "C"`;

/** `$1`: each endpoint's room by id (jsonb), `$2`: the room of an endpoint not named. */
const ROOM = `coalesce((CAST($1 AS jsonb) ->> endpoint_id)::int, $2::int)`;

/** The outbound queue's figures across workspaces (lib/queue-stats.ts); deliveries a live claim holds are in flight. */
export async function queueFiguresOfDeliveries(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("next_attempt_at <= now()", "next_attempt_at")} FROM webhook_deliveries
      WHERE ${QUEUED} AND (claimed_until IS NULL OR claimed_until < now())`,
    [],
  );
  return queueFigures("webhook_deliveries", row);
}

/**
 * Claim due deliveries with FOR UPDATE SKIP LOCKED and a lease: a replica
 * that dies mid-send leaves the row to be claimed again when the lease ends.
 * Fair across endpoints: endpoints take turns (each its oldest due rows
 * first, by age: a retry keeps its place ahead of rows queued after it),
 * at most their room each, among endpoints with any room; the rest
 * stay unclaimed for later claims or other replicas. Each endpoint's rows are
 * read apart through the claim index, so one endpoint's backlog (a failing
 * one's, one without room) is never read past, and with many endpoints each
 * reads about its share of the claim.
 */
export async function claimDue(
  nodeId: string,
  limit: number,
  leaseMs: number,
  caps: EndpointRoom,
): Promise<ClaimedDelivery[]> {
  // The limits are written into the text as integers, not bound: the planner sizes the per-endpoint reads
  // from them (a bound LIMIT is costed as a tenth of the rows, and a long backlog's claim gets JIT-compiled).
  const claimLimit = Math.trunc(limit);
  const maxRoom = Math.trunc(Math.min(limit, Math.max(caps.perEndpoint, ...Object.values(caps.room))));
  return queryAcrossWorkspaces<ClaimedDelivery>(
    `WITH RECURSIVE queued AS (
       -- The endpoints with queued rows, one index probe each (a loose scan of the claim index).
       (SELECT endpoint_id FROM webhook_deliveries WHERE ${QUEUED} ORDER BY ${QUEUE_ENDPOINT} LIMIT 1)
       UNION ALL
       SELECT (SELECT endpoint_id FROM webhook_deliveries
                WHERE ${QUEUED} AND ${QUEUE_ENDPOINT} > q.endpoint_id ORDER BY ${QUEUE_ENDPOINT} LIMIT 1)
         FROM queued q WHERE q.endpoint_id IS NOT NULL
     ), ready AS (
       SELECT endpoint_id, ${ROOM} AS room FROM queued
        WHERE endpoint_id IS NOT NULL
          AND ${ROOM} > 0
     ), head AS (
       -- The outer LIMIT (a constant: the largest room, at most the claim's limit) gives the planner a row count to
       -- cost; with the per-endpoint expression alone it assumes a tenth of each endpoint's rows, and JIT-compiles
       -- the claim of a long backlog (tens of ms).
       SELECT h.id, r.endpoint_id, h.created_at FROM ready r CROSS JOIN LATERAL (
         SELECT * FROM (
           SELECT id, created_at FROM webhook_deliveries
            WHERE ${QUEUE_ENDPOINT} = r.endpoint_id AND ${QUEUED} AND next_attempt_at <= now()
              AND (claimed_until IS NULL OR claimed_until < now())
            ORDER BY created_at, id
            LIMIT least(r.room, 2 * ${claimLimit} / (SELECT count(*) FROM ready) + 1)
         ) mine LIMIT ${maxRoom}
       ) h
     ), turns AS (
       -- Numbered after the LIMIT: a window inside it would read all of an endpoint's rows of the same age.
       -- "C" collation: the ids are only grouped, and a locale-aware sort would cost most of the claim.
       SELECT id, created_at, row_number() OVER (PARTITION BY endpoint_id COLLATE "C" ORDER BY created_at, id) AS turn
         FROM head
     ), due AS (
       -- Rechecked on the locked row: another replica may have claimed or finished it since the head was read.
       -- The first turns only (with room for rows another claim holds): the planner cannot size the per-endpoint
       -- limits above, and would rather scan the table than look each row up.
       SELECT d.id, d.ctid AS tid, t.turn, t.created_at
         FROM (SELECT * FROM turns ORDER BY turn, created_at LIMIT ${2 * claimLimit}) t JOIN webhook_deliveries d ON d.id = t.id
        WHERE d.next_attempt_at <= now() AND (d.claimed_until IS NULL OR d.claimed_until < now())
        ORDER BY t.turn, t.created_at
        LIMIT ${claimLimit}
        FOR UPDATE OF d SKIP LOCKED
     ), u AS (
       UPDATE webhook_deliveries d
          SET claimed_until = now() + make_interval(secs => $3), claim_token = $4, claimed_by = $5
         -- By the locked row's tid: joined by id, the planner hashes the whole table for a claim's few hundred rows.
         FROM due WHERE d.ctid = due.tid AND ${NO_FLUSH_WAIT}
       RETURNING d.*
     )
     SELECT ${CLAIMED} FROM u JOIN due ON due.id = u.id JOIN webhook_endpoints e ON e.id = u.endpoint_id
      ORDER BY due.turn, due.created_at`,
    [JSON.stringify(caps.room), caps.perEndpoint, leaseMs / 1000, newId(), nodeId],
  );
}

/** Claim one OUTBOUND delivery for a manual retry; null when another sender holds it right now. */
export async function claimOne(
  workspaceId: WorkspaceId,
  id: string,
  nodeId: string,
  leaseMs: number,
): Promise<ClaimedDelivery | null> {
  const rows = await query<ClaimedDelivery>(
    workspaceId,
    `WITH u AS (
       UPDATE webhook_deliveries d
          SET claimed_until = now() + make_interval(secs => $3), claim_token = $4, claimed_by = $5
        WHERE d.workspace_id = $1 AND d.id = $2 AND d.direction = 'OUTBOUND'
          AND (d.claimed_until IS NULL OR d.claimed_until < now())
       RETURNING d.*
     )
     SELECT ${CLAIMED} FROM u JOIN webhook_endpoints e ON e.id = u.endpoint_id`,
    [id, leaseMs / 1000, newId(), nodeId],
  );
  return rows[0] ?? null;
}

export interface AttemptResult {
  id: string;
  token: string;
  attempt: number;
  success: boolean;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number | null;
  /** When to try again; null when the delivery is finished. */
  nextAttemptAt: Date | null;
}

/** Attempts recorded by one statement; fenced by the claim token (a sender whose lease was taken over records nothing). */
const RECORD_ATTEMPTS = `UPDATE webhook_deliveries d
    SET attempt = r.attempt, success = r.success, status_code = r.status_code, response_body = r.response_body,
        error = r.error, duration_ms = r.duration_ms, next_attempt_at = r.next_attempt_at,
        delivered_at = CASE WHEN r.success THEN now() ELSE d.delivered_at END,
        claimed_until = NULL, claim_token = NULL
   FROM unnest($1::text[], $2::text[], $3::int[], $4::boolean[], $5::int[], $6::text[], $7::text[], $8::int[],
               $9::timestamptz[])
        AS r(id, token, attempt, success, status_code, response_body, error, duration_ms, next_attempt_at)
  WHERE d.id = r.id AND d.claim_token = r.token`;

/**
 * Record many attempts in one prepared statement (grouped commits); returns the ids recorded. The dispatcher's
 * records skip the wait for the WAL flush (see NO_FLUSH_WAIT); a retry by hand, whose answer shows the record,
 * waits for it (`durable`).
 */
export async function recordAttempts(
  results: AttemptResult[],
  options: { durable?: boolean } = {},
): Promise<string[]> {
  if (results.length === 0) return [];
  const updated = await queryAcrossWorkspacesPrepared<{ id: string }>(
    `${RECORD_ATTEMPTS}${options.durable ? "" : ` AND ${NO_FLUSH_WAIT}`} RETURNING d.id`,
    [
      results.map((r) => r.id),
      results.map((r) => r.token),
      results.map((r) => r.attempt),
      results.map((r) => r.success),
      results.map((r) => r.statusCode),
      results.map((r) => r.responseBody),
      results.map((r) => r.error),
      results.map((r) => r.durationMs),
      results.map((r) => r.nextAttemptAt),
    ],
  );
  return updated.map((u) => u.id);
}

/** Give claims back without recording an attempt (a stopping replica); another replica sends at once. */
export async function releaseClaims(claims: Array<{ id: string; token: string }>): Promise<void> {
  if (claims.length === 0) return;
  await queryAcrossWorkspaces(
    `UPDATE webhook_deliveries d SET claimed_until = NULL, claim_token = NULL
       FROM jsonb_to_recordset(CAST($1 AS jsonb)) AS r(id text, token text)
      WHERE d.id = r.id AND d.claim_token = r.token RETURNING d.id`,
    [JSON.stringify(claims)],
  );
}

/** Of these endpoints, those still active with deliveries queued (due now or waiting for a retry). */
export async function endpointsWithQueue(ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await queryAcrossWorkspaces<{ id: string }>(
    `SELECT e.id FROM webhook_endpoints e
      WHERE e.id = ANY($1::text[]) AND e.active
        AND EXISTS (SELECT 1 FROM webhook_deliveries d
                     WHERE d.${QUEUE_ENDPOINT} = e.id AND d.next_attempt_at IS NOT NULL AND d.direction = 'OUTBOUND')`,
    [ids],
  );
  return rows.map((r) => r.id);
}

/**
 * Retention: what a purge before `before` deletes, in batches oldest first
 * (lib/retention.ts). Deliveries by their created time, except outbound ones
 * still queued for an attempt (dropping one would lose a fact its endpoint
 * has not had).
 */
export const { countBefore, deleteBefore } = retentionPurge(
  { table: "webhook_deliveries", timeColumn: "created_at", keep: QUEUED },
  query,
);
