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

/**
 * Queries of deliveries: the history (`webhook_deliveries`: fan-out, the page, each attempt's record) and the
 * outbound queue (`webhook_delivery_queue`: one row per delivery not yet settled, with its lease; migration 0103).
 */

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
 * endpoint of the workspace subscribed to its type (`[]` or `*` = all), each
 * queued by the history's insert trigger (migration 0103). The unique
 * (endpoint, source event) index makes a redelivered event a no-op.
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

/** The columns of a claim (`u` the claimed queue rows, `d` their deliveries): only what an attempt is made from. */
const CLAIMED = `u.delivery_id AS id, u.endpoint_id, d.event, d.body, d.attempt, u.claim_token, e.url, e.secret_sealed,
  e.active`;

/**
 * Each claimed row's delivery, looked up by its key: a subquery the planner keeps apart (OFFSET 0), so a claim of a
 * few hundred rows never hashes the whole history.
 */
const DELIVERY_OF_CLAIM = `CROSS JOIN LATERAL (SELECT event, body, attempt FROM webhook_deliveries
    WHERE id = u.delivery_id OFFSET 0) d`;

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

/** The endpoint as `webhook_delivery_queue_idx` holds it (migration 0103): a condition on it is served by that index. */
const QUEUE_ENDPOINT = `endpoint_id COLLATE "C"`;

/** A queued row no live claim holds. */
const UNCLAIMED = `(claimed_until IS NULL OR claimed_until < now())`;

/** `$1`: each endpoint's room by id (jsonb), `$2`: the room of an endpoint not named. */
const ROOM = `coalesce((CAST($1 AS jsonb) ->> endpoint_id)::int, $2::int)`;

/** The outbound queue's figures across workspaces (lib/queue-stats.ts); deliveries a live claim holds are in flight. */
export async function queueFiguresOfDeliveries(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("next_attempt_at <= now()", "next_attempt_at")} FROM webhook_delivery_queue
      WHERE ${UNCLAIMED}`,
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
 * read apart through the queue's index, so one endpoint's backlog (a failing
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
       -- The endpoints with queued rows, one index probe each (a loose scan of the queue's index).
       (SELECT endpoint_id FROM webhook_delivery_queue ORDER BY ${QUEUE_ENDPOINT} LIMIT 1)
       UNION ALL
       SELECT (SELECT endpoint_id FROM webhook_delivery_queue
                WHERE ${QUEUE_ENDPOINT} > q.endpoint_id ORDER BY ${QUEUE_ENDPOINT} LIMIT 1)
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
           SELECT delivery_id AS id, created_at FROM webhook_delivery_queue
            WHERE ${QUEUE_ENDPOINT} = r.endpoint_id AND next_attempt_at <= now() AND ${UNCLAIMED}
            ORDER BY created_at, delivery_id
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
       SELECT q.delivery_id AS id, q.ctid AS tid, t.turn, t.created_at
         FROM (SELECT * FROM turns ORDER BY turn, created_at LIMIT ${2 * claimLimit}) t
         JOIN webhook_delivery_queue q ON q.delivery_id = t.id
        WHERE q.next_attempt_at <= now() AND (q.claimed_until IS NULL OR q.claimed_until < now())
        ORDER BY t.turn, t.created_at
        LIMIT ${claimLimit}
        FOR UPDATE OF q SKIP LOCKED
     ), u AS (
       UPDATE webhook_delivery_queue q
          SET claimed_until = now() + make_interval(secs => $3), claim_token = $4, claimed_by = $5
         -- By the locked row's tid: joined by id, the planner may hash the whole queue for a claim's few hundred rows.
         FROM due WHERE q.ctid = due.tid AND ${NO_FLUSH_WAIT}
       RETURNING q.delivery_id, q.endpoint_id, q.claim_token
     )
     SELECT ${CLAIMED} FROM u JOIN due ON due.id = u.delivery_id ${DELIVERY_OF_CLAIM}
       JOIN webhook_endpoints e ON e.id = u.endpoint_id
      ORDER BY due.turn, due.created_at`,
    [JSON.stringify(caps.room), caps.perEndpoint, leaseMs / 1000, newId(), nodeId],
  );
}

/**
 * Claim one OUTBOUND delivery for a manual retry: its queued row, or one queued again for it (a delivered or dead
 * delivery), under a lease like the dispatcher's, so a retry cut by a crash is taken over when the lease ends.
 * Null when another sender holds it right now.
 */
export async function claimOne(
  workspaceId: WorkspaceId,
  id: string,
  nodeId: string,
  leaseMs: number,
): Promise<ClaimedDelivery | null> {
  const rows = await query<ClaimedDelivery>(
    workspaceId,
    `WITH u AS (
       INSERT INTO webhook_delivery_queue AS q
              (delivery_id, endpoint_id, created_at, next_attempt_at, claimed_until, claim_token, claimed_by)
       SELECT id, endpoint_id, created_at, now(), now() + make_interval(secs => $3), $4, $5 FROM webhook_deliveries
        WHERE workspace_id = $1 AND id = $2 AND direction = 'OUTBOUND'
       ON CONFLICT (delivery_id) DO UPDATE
          SET claimed_until = EXCLUDED.claimed_until, claim_token = EXCLUDED.claim_token, claimed_by = EXCLUDED.claimed_by
        WHERE q.claimed_until IS NULL OR q.claimed_until < now()
       RETURNING q.delivery_id, q.endpoint_id, q.claim_token
     )
     SELECT ${CLAIMED} FROM u ${DELIVERY_OF_CLAIM} JOIN webhook_endpoints e ON e.id = u.endpoint_id`,
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

/**
 * Attempts recorded by one statement, fenced by the claim token of the queued row (a sender whose lease was taken
 * over records nothing): a settled delivery (delivered, or no attempt left) leaves the queue, one to be tried again
 * waits there unclaimed for its time; the history row takes the attempt, changing no indexed column (HOT).
 */
const RECORD_ATTEMPTS = `WITH r AS (
     SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::boolean[], $5::int[], $6::text[], $7::text[],
                          $8::int[], $9::timestamptz[])
         AS r(id, token, attempt, success, status_code, response_body, error, duration_ms, next_attempt_at)
   ), settled AS (
     DELETE FROM webhook_delivery_queue q USING r
      WHERE q.delivery_id = r.id AND q.claim_token = r.token AND r.next_attempt_at IS NULL
     RETURNING q.delivery_id, q.claimed_by
   ), again AS (
     UPDATE webhook_delivery_queue q SET next_attempt_at = r.next_attempt_at, claimed_until = NULL, claim_token = NULL
       FROM r WHERE q.delivery_id = r.id AND q.claim_token = r.token AND r.next_attempt_at IS NOT NULL
     RETURNING q.delivery_id, q.claimed_by
   ), fenced AS (SELECT * FROM settled UNION ALL SELECT * FROM again)
   UPDATE webhook_deliveries d
      SET attempt = r.attempt, success = r.success, status_code = r.status_code, response_body = r.response_body,
          error = r.error, duration_ms = r.duration_ms, next_attempt_at = r.next_attempt_at,
          delivered_at = CASE WHEN r.success THEN now() ELSE d.delivered_at END, claimed_by = f.claimed_by
     FROM r JOIN fenced f ON f.delivery_id = r.id
    WHERE d.id = r.id`;

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
    `UPDATE webhook_delivery_queue q SET claimed_until = NULL, claim_token = NULL
       FROM jsonb_to_recordset(CAST($1 AS jsonb)) AS r(id text, token text)
      WHERE q.delivery_id = r.id AND q.claim_token = r.token RETURNING q.delivery_id`,
    [JSON.stringify(claims)],
  );
}

/** Of these endpoints, those still active with deliveries queued (due now or waiting for a retry). */
export async function endpointsWithQueue(ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await queryAcrossWorkspaces<{ id: string }>(
    `SELECT e.id FROM webhook_endpoints e
      WHERE e.id = ANY($1::text[]) AND e.active
        AND EXISTS (SELECT 1 FROM webhook_delivery_queue q WHERE q.${QUEUE_ENDPOINT} = e.id)`,
    [ids],
  );
  return rows.map((r) => r.id);
}

/**
 * Retention: what a purge before `before` deletes, in batches oldest first
 * (lib/retention.ts). Deliveries by their created time, except outbound ones
 * still queued (dropping one would lose a fact its endpoint has not had).
 */
export const { countBefore, deleteBefore } = retentionPurge(
  {
    table: "webhook_deliveries",
    timeColumn: "created_at",
    keep: `EXISTS (SELECT 1 FROM webhook_delivery_queue q WHERE q.delivery_id = webhook_deliveries.id)`,
  },
  query,
);
