import type { ServiceBroker } from "moleculer";
import type { Transaction } from "sequelize";
import { config } from "./config";
import { acquireDatabase, database, queryPrepared, releaseDatabase } from "./database";
import { sendDomainEvent, type DomainEvent } from "./domain-events";

/**
 * The transactional outbox of domain facts. A write stages its facts in the
 * transaction (or the statement) that makes them true, so they commit or roll
 * back together; a relay then sends them to the durable channel and deletes
 * them in one transaction, rolled back when a send fails. A crash between the
 * commit and the send leaves the rows for the next pass of any relay; a relay
 * that dies mid-send has its rows sent again, and consumers stay idempotent on
 * the fact id, so the normal case sends each fact once.
 */

/** A fact as a write states it; the outbox gives it its id and time. */
export type Fact = Pick<DomainEvent, "type" | "data">;

/** Rows one relay pass takes: sent in parallel, deleted by one commit. */
const RELAY_BATCH = 500;

/** Stage `facts` in the write's transaction (one INSERT); relays of this process wake when it commits. */
export async function stageDomainEvents(
  transaction: Transaction,
  workspaceId: string,
  facts: Fact[],
): Promise<void> {
  if (!facts.length) return;
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO domain_event_outbox (workspace_id, type, data)
     SELECT $1, v.type, CAST(v.data AS jsonb) FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS v(type, data, n)
      ORDER BY v.n`,
    { bind: [workspaceId, facts.map((f) => f.type), facts.map((f) => JSON.stringify(f.data))], transaction },
  );
  transaction.afterCommit(wakeOutboxRelays);
}

interface OutboxRow {
  seq: string;
  id: string;
  workspace_id: string;
  type: string;
  data: Record<string, unknown>;
  occurred_at: Date;
}

/**
 * One batch: delete the oldest rows no other relay holds (SKIP LOCKED), send
 * each, and commit only when every send succeeded; a throw rolls the delete
 * back. Returns the number of facts sent.
 */
export async function relayBatch(
  send: (event: DomainEvent) => Promise<void>,
  limit = RELAY_BATCH,
): Promise<number> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    // No wait for the WAL flush: a delete lost by a database crash only sends its facts again.
    await sequelize.query("SET LOCAL synchronous_commit = off", { transaction });
    const rows = await queryPrepared<OutboxRow>(
      `DELETE FROM domain_event_outbox
        WHERE seq IN (SELECT seq FROM domain_event_outbox ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING seq, id, workspace_id, type, data, occurred_at`,
      [limit],
      transaction,
    );
    // RETURNING keeps no order; sends start in staging order.
    rows.sort((a, b) => Number(a.seq) - Number(b.seq));
    await Promise.all(
      rows.map((row) =>
        send({
          id: row.id,
          workspaceId: row.workspace_id,
          type: row.type,
          data: row.data,
          occurredAt: new Date(row.occurred_at).toISOString(),
        }),
      ),
    );
    return rows.length;
  });
}

export interface RelayOptions {
  /** One batch (relayBatch); returns how many facts it sent. */
  pass: () => Promise<number>;
  /** A pass that sent this many may have left more: run another at once. */
  batch: number;
  pollMs: number;
  onError: (err: Error) => void;
}

/**
 * When to run passes: at once when woken (a fact was staged here), and every
 * `pollMs` for facts staged by a process that died before sending them. One
 * pass at a time; a wake during a pass runs one more after it. After a failed
 * pass only the poll retries, so a channel that is down is not hammered.
 */
export class OutboxRelay {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private failing = false;

  constructor(private readonly opts: RelayOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.failing = false;
      this.wake();
    }, this.opts.pollMs);
    this.timer.unref();
    this.wake();
  }

  wake(): void {
    if (!this.timer || this.failing) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.again = false;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.again) this.wake();
    });
  }

  private async drain(): Promise<void> {
    try {
      let sent: number;
      do sent = await this.opts.pass();
      while (this.timer && sent >= this.opts.batch);
    } catch (err) {
      this.failing = true;
      this.opts.onError(err as Error);
    }
  }

  /** No more passes; the one in flight finishes (if it fails, its rows stay staged for any relay). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

/** One relay per broker (tests run several brokers in a process), shared by the services that stage facts. */
const relays = new Map<ServiceBroker, { relay: OutboxRelay; users: number }>();
/**
 * Brokers whose channel adapter is connected and subscribed. Services start
 * before it is: the in-memory adapter would drop a fact sent earlier, so a
 * relay sends nothing until then.
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
  const relay = new OutboxRelay({
    pass: () => relayBatch((event) => sendDomainEvent(broker, event)),
    batch: RELAY_BATCH,
    pollMs: config().outboxPollMs,
    onError: (err) =>
      logger.warn(`Outbox relay pass failed (${err.message}); its facts stay staged for the next poll`),
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
