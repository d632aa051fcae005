import type { ServiceBroker } from "moleculer";
import type { Transaction } from "sequelize";
import { config } from "./config";
import type { QueueFigures } from "./business-metrics";
import {
  acquireDatabase,
  database,
  query,
  queryAcrossWorkspaces,
  queryAcrossWorkspacesPrepared,
  releaseDatabase,
} from "./database";
import { ENVELOPE_MAX_BYTES, failedFactIdsOf, sendDomainEnvelope, type DomainEvent } from "./domain-events";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "./queue-stats";
import { Poller } from "./worker";
import type { WorkspaceId } from "./tenancy";

/**
 * The transactional outbox of domain facts. A write stages its facts in the
 * transaction (or the statement) that makes them true, so they commit or roll
 * back together; a relay then sends them to the durable channel and deletes
 * them in one transaction, a pass's facts as envelopes (one channel message
 * for up to a whole batch, at most ENVELOPE_MAX_BYTES each). A send settles
 * when the channel has the envelope (JetStream's ack) or, embedded, when its
 * consumers have handled its facts (lib/embedded-channel.ts); a fact whose
 * send failed is put back with a backoff. A crash between the commit and the
 * send leaves the rows for the next pass of any relay; a relay that dies
 * mid-send has its rows sent again, and consumers stay idempotent on the fact
 * id, so the normal case sends each fact once.
 */

/** A fact as a write states it; the outbox gives it its id and time. */
export type Fact = Pick<DomainEvent, "type" | "data" | "changedFields">;

/** Rows one relay pass takes: sent in parallel, deleted by one commit. */
const RELAY_BATCH = 500;
/** A wake during a pass runs the next one this long after it, so facts staged meanwhile go together. */
const RELAY_GAP_MS = 5;

/** Stage `facts` in the write's transaction (one INSERT); relays of this process wake when it commits. */
export async function stageDomainEvents(
  transaction: Transaction,
  workspaceId: WorkspaceId,
  facts: Fact[],
): Promise<void> {
  if (!facts.length) return;
  await query(
    workspaceId,
    `INSERT INTO domain_event_outbox (workspace_id, type, data, changed_fields)
     SELECT $1, v.type, CAST(v.data AS jsonb), CAST(v.changed AS jsonb)
       FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS v(type, data, changed, n)
      ORDER BY v.n`,
    [
      facts.map((f) => f.type),
      facts.map((f) => JSON.stringify(f.data)),
      facts.map((f) => (f.changedFields ? JSON.stringify(f.changedFields) : null)),
    ],
    transaction,
  );
  transaction.afterCommit(wakeOutboxRelays);
}

interface OutboxRow {
  seq: string;
  id: string;
  workspace_id: WorkspaceId;
  type: string;
  data: Record<string, unknown>;
  occurred_at: Date;
  attempts: number;
  changed_fields: string[] | null;
  /** The size of `data` and `changed_fields` as JSON text, at least what JSON.stringify makes of them. */
  json_bytes: number;
}

/** A fact's JSON beside its `data` and `changedFields`: keys, quotes, id, workspace, type, time. */
const FACT_FRAME_BYTES = 160;
/** `{"facts":[` and `]}`. */
const ENVELOPE_FRAME_BYTES = 16;

/**
 * Split facts of these JSON sizes, in order, into envelopes of at most
 * `maxBytes` (with their frames and commas): `[start, end)` of each. A fact
 * larger than the bound alone goes in an envelope of its own.
 */
export function envelopeBounds(sizes: number[], maxBytes: number): Array<[number, number]> {
  const bounds: Array<[number, number]> = [];
  let start = 0;
  let bytes = ENVELOPE_FRAME_BYTES;
  sizes.forEach((size, i) => {
    if (i > start && bytes + size + 1 > maxBytes) {
      bounds.push([start, i]);
      start = i;
      bytes = ENVELOPE_FRAME_BYTES;
    }
    bytes += size + 1;
  });
  if (sizes.length > start) bounds.push([start, sizes.length]);
  return bounds;
}

function factOf(row: OutboxRow): DomainEvent {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    type: row.type,
    data: row.data,
    occurredAt: new Date(row.occurred_at).toISOString(),
    ...(row.changed_fields ? { changedFields: row.changed_fields } : {}),
  };
}

/** A fact's JSON size, at least: PostgreSQL's text of its jsonb (spaces after `:` and `,`) and its frame. */
const factBytes = (row: OutboxRow) =>
  Number(row.json_bytes) +
  FACT_FRAME_BYTES +
  row.id.length +
  row.workspace_id.length +
  Buffer.byteLength(row.type);

/** A failed fact waits `base × 2^(attempts − 1)`, at most this long, before its next send. */
const MAX_RETRY_DELAY_MS = 5 * 60_000;

export function retryDelayMs(attempts: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_MS);
}

export interface RelayPass {
  /** Facts taken: a full batch may have left more. */
  taken: number;
  /** Those whose send failed: staged again, each on its own backoff. */
  failed: Array<{ id: string; type: string; attempts: number; error: string }>;
}

/**
 * One batch: delete the oldest rows that are due and that no other relay
 * holds (SKIP LOCKED), send them as envelopes in staging order, and put the
 * facts whose send failed back in the same transaction, with their attempt
 * counted and a backoff: the others are not sent again and later facts are
 * not held up behind them. A failed envelope fails all its facts unless the
 * failure names the ones not handled (embedded consumers do). A crash
 * mid-pass rolls the whole delete back, so every fact of the batch is sent
 * again by the next pass (consumers are idempotent on the fact id).
 */
export async function relayBatch(
  send: (facts: DomainEvent[]) => Promise<void>,
  retryBaseMs: number,
  limit = RELAY_BATCH,
  maxEnvelopeBytes = ENVELOPE_MAX_BYTES,
): Promise<RelayPass> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    // No wait for the WAL flush: a delete lost by a database crash only sends its facts again. Set by the
    // delete itself (a one-time filter), not by a statement of its own: one round trip fewer a batch.
    const rows = await queryAcrossWorkspacesPrepared<OutboxRow>(
      `DELETE FROM domain_event_outbox
        WHERE seq IN (SELECT seq FROM domain_event_outbox
                       WHERE available_at IS NULL OR available_at <= now()
                       ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
          AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
       RETURNING seq, id, workspace_id, type, data, occurred_at, attempts, changed_fields,
                 octet_length(data::text) + coalesce(octet_length(changed_fields::text), 0) AS json_bytes`,
      [limit],
      transaction,
    );
    // RETURNING keeps no order; envelopes hold facts in staging order and are sent in it.
    rows.sort((a, b) => Number(a.seq) - Number(b.seq));
    const facts = rows.map(factOf);
    const envelopes = envelopeBounds(rows.map(factBytes), maxEnvelopeBytes);
    const outcomes = await Promise.allSettled(envelopes.map(([from, to]) => send(facts.slice(from, to))));
    const failedIds = new Map<string, string>();
    envelopes.forEach(([from, to], i) => {
      const outcome = outcomes[i];
      if (outcome.status === "fulfilled") return;
      const error = String((outcome.reason as Error)?.message ?? outcome.reason);
      const ids = failedFactIdsOf(outcome.reason);
      const named = ids && new Set(ids);
      for (const fact of facts.slice(from, to))
        if (!named || named.has(fact.id)) failedIds.set(fact.id, error);
    });
    const failed = rows.flatMap((row) => {
      const error = failedIds.get(row.id);
      return error === undefined ? [] : [{ row, attempts: row.attempts + 1, error }];
    });
    if (failed.length) {
      // Back under their own seq and id: same place in the order, same fact for idempotent consumers.
      await queryAcrossWorkspacesPrepared(
        `INSERT INTO domain_event_outbox (seq, id, workspace_id, type, data, occurred_at, attempts, available_at, last_error, changed_fields)
         SELECT v.seq, v.id, v.workspace_id, v.type, v.data, v.occurred_at, v.attempts,
                now() + v.delay_ms * interval '1 millisecond', v.error, v.changed_fields
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[],
                       $7::int[], $8::float8[], $9::text[], $10::jsonb[])
                AS v(seq, id, workspace_id, type, data, occurred_at, attempts, delay_ms, error, changed_fields)`,
        [
          failed.map(({ row }) => row.seq),
          failed.map(({ row }) => row.id),
          failed.map(({ row }) => row.workspace_id),
          failed.map(({ row }) => row.type),
          failed.map(({ row }) => JSON.stringify(row.data)),
          failed.map(({ row }) => row.occurred_at),
          failed.map(({ attempts }) => attempts),
          failed.map(({ attempts }) => retryDelayMs(attempts, retryBaseMs)),
          failed.map(({ error }) => error.slice(0, 1000)),
          failed.map(({ row }) => (row.changed_fields ? JSON.stringify(row.changed_fields) : null)),
        ],
        transaction,
      );
    }
    return {
      taken: rows.length,
      failed: failed.map(({ row, attempts, error }) => ({ id: row.id, type: row.type, attempts, error })),
    };
  });
}

/**
 * What a relay's passes say about its channel: down once a pass's every send failed, back once a later pass
 * sent one. Facts that failed during an outage wait out backoffs of up to five minutes; when the channel is
 * back they are made due at once (`makeBackedOffFactsDue`), so a long outage is not followed by minutes of
 * facts trickling out as each backoff ends.
 */
export class ChannelWatch {
  private down = false;

  /** Whether this pass (facts taken, sends failed) shows the channel back after an outage. */
  recovered(taken: number, failed: number): boolean {
    if (taken === 0) return false;
    if (failed === taken) {
      this.down = true;
      return false;
    }
    const back = this.down;
    this.down = false;
    return back;
  }
}

/** Facts waiting out a backoff become due now (their attempts and last error kept); answers how many. */
export async function makeBackedOffFactsDue(): Promise<number> {
  const [row] = await queryAcrossWorkspaces<{ n: string }>(
    `WITH due AS (UPDATE domain_event_outbox SET available_at = NULL WHERE available_at > now() RETURNING 1)
     SELECT count(*) AS n FROM due`,
    [],
  );
  return Number(row.n);
}

/**
 * The outbox as a queue (lib/queue-stats.ts): facts due to be relayed, and
 * failed ones waiting out their backoff. The oldest due fact's age is the
 * outbox lag: how far the channel is behind the writes.
 */
export async function outboxQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("available_at IS NULL OR available_at <= now()", "COALESCE(available_at, occurred_at)")}
       FROM domain_event_outbox`,
    [],
  );
  return queueFigures("domain_event_outbox", row);
}

/** One relay per broker (tests run several brokers in a process), shared by the services that stage facts. */
const relays = new Map<ServiceBroker, { relay: Poller; users: number }>();
/**
 * Brokers whose channel adapter is connected and subscribed. Services start
 * before it is: the embedded adapter would have no consumer to hand a fact
 * sent earlier to, so a relay sends nothing until then.
 */
const channelsUp = new WeakSet<ServiceBroker>();

/** Wake every relay of this process: a write staged facts and committed. */
export function wakeOutboxRelays(): void {
  for (const { relay } of relays.values()) relay.wake();
}

/** A service that stages facts starts: the broker gets its relay (made by the first such service), running once its channels are up. */
export async function holdOutboxRelay(broker: ServiceBroker): Promise<void> {
  const held = relays.get(broker);
  if (held) {
    held.users += 1;
    return;
  }
  const logger = broker.getLogger("outbox");
  const { outboxPollMs } = config();
  // Passes at once when woken (a fact was staged here), and every `outboxPollMs` for facts staged by a process
  // that died before sending them and failed facts whose backoff ended. Under load a pass takes what a few
  // milliseconds of writes staged (gapMs), not a fact or two each; after a pass that failed as a whole (the
  // database, the channel) only the poll retries.
  const channel = new ChannelWatch();
  const relay = new Poller({
    name: "outbox.relay",
    logger,
    metrics: broker.metrics,
    intervalMs: outboxPollMs,
    gapMs: RELAY_GAP_MS,
    passAtStart: true,
    retryOnInterval: true,
    failureNote: "its facts stay staged for the next poll",
    pass: async () => {
      const { taken, failed } = await relayBatch((facts) => sendDomainEnvelope(broker, facts), outboxPollMs);
      if (failed.length) {
        const [first] = failed;
        logger.warn(
          `${failed.length} of ${taken} facts were not sent (first: ${first.type} ${first.id}, attempt ${first.attempts}: ${first.error}); they stay staged and are retried with backoff`,
        );
      }
      if (channel.recovered(taken, failed.length)) {
        const due = await makeBackedOffFactsDue();
        logger.info(`The channel answers again: ${due} facts waiting out a backoff are due now`);
        return true;
      }
      // A full batch may have left more.
      return taken >= RELAY_BATCH;
    },
  });
  relays.set(broker, { relay, users: 1 });
  // Its own reference to the pool: the last batch may still run while the services' references are given back.
  await acquireDatabase();
  if (channelsUp.has(broker)) relay.start();
}

/** The broker's channels are up (after a start) or about to go down (before a stop). */
export function outboxChannels(broker: ServiceBroker, up: boolean): void {
  if (!up) {
    channelsUp.delete(broker);
    return;
  }
  channelsUp.add(broker);
  relays.get(broker)?.relay.start();
}

/** The last service that stages facts stops: finish the batch in flight, then let the pool go. */
export async function releaseOutboxRelay(broker: ServiceBroker): Promise<void> {
  const held = relays.get(broker);
  if (!held || --held.users > 0) return;
  relays.delete(broker);
  await held.relay.stop();
  await releaseDatabase();
}
