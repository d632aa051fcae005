import path from "node:path";
import { Client } from "pg";
import { QueryTypes, Sequelize, type Transaction } from "sequelize";
import { SequelizeStorage, Umzug } from "umzug";
import { config } from "./config";
import { sha256Hex } from "./crypto";
import { RunningPostgres, startEmbeddedPostgres } from "./embedded-postgres";
import { keepStatistics } from "./table-stats";
import { initModels } from "../models";
import type { WorkspaceId } from "./workspace-id";
import { migrations } from "../models/migrations";

/**
 * One Sequelize instance and pool per process, shared by every service.
 * Services acquire it when they start and release it when they stop; the
 * pool closes (and an embedded server stops) when the last one lets go.
 */
interface Database {
  sequelize: Sequelize;
  embedded?: RunningPostgres;
  stopStatistics: () => Promise<void>;
}

let opening: Promise<Database> | undefined;
let users = 0;

const MIGRATION_LOCK = 724_311_901; // any constant shared by every replica

async function ensureDatabase(url: string, name: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const target = new URL(url);
  target.pathname = `/${name}`;
  return target.toString();
}

const LOCK_POLL_MS = 250;

/** `ms` later, or at once when `signal` aborts. */
function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    // Removed when the delay ends: a wait that polls would pile up one listener per poll.
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Wait for the migration lock by polling `pg_try_advisory_lock`, so a waiting
 * replica never sits inside a statement: a backend blocked in
 * `pg_advisory_lock` holds a snapshot, and the lock holder's
 * `CREATE INDEX CONCURRENTLY` waits for every snapshot to end, a cycle
 * PostgreSQL cannot see. An aborted wait (the process is stopping) throws.
 */
async function takeMigrationLock(lock: Client, signal?: AbortSignal): Promise<void> {
  for (;;) {
    if (signal?.aborted)
      throw new Error("Stopped while waiting for another replica to finish the migrations");
    const { rows } = await lock.query<{ taken: boolean }>("SELECT pg_try_advisory_lock($1) AS taken", [
      MIGRATION_LOCK,
    ]);
    if (rows[0].taken) return;
    await abortableDelay(LOCK_POLL_MS, signal);
  }
}

function migrator(sequelize: Sequelize): Umzug<object> {
  return new Umzug({
    migrations: migrations.map((m) => ({ name: m.name, up: () => m.up(sequelize) })),
    storage: new SequelizeStorage({ sequelize, tableName: "schema_migrations" }),
    logger: undefined,
  });
}

const SCHEMA_POLL_MS = 1000;

/**
 * With MIGRATE=false (the Kubernetes shape: a Job migrates before the
 * services roll out) a node waits until every migration it knows has been
 * applied, so new code never runs on an old schema; an aborted wait (the
 * process is stopping) throws.
 */
export async function waitForSchema(sequelize: Sequelize, signal?: AbortSignal): Promise<void> {
  const umzug = migrator(sequelize);
  let told = false;
  for (;;) {
    if (signal?.aborted) throw new Error("Stopped while waiting for the schema");
    const pending = await umzug.pending().catch(() => migrations);
    if (pending.length === 0) return;
    if (!told) {
      told = true;
      console.warn(
        `Waiting for the schema: ${pending.length} migration(s) not applied yet, from ${pending[0].name} (MIGRATE=false: the migration job applies them)`,
      );
    }
    await abortableDelay(SCHEMA_POLL_MS, signal);
  }
}

/** Run pending migrations while holding a PostgreSQL advisory lock, so replicas may start together. */
export async function migrate(sequelize: Sequelize, url: string, signal?: AbortSignal): Promise<void> {
  const lock = new Client({ connectionString: url });
  await lock.connect();
  try {
    await takeMigrationLock(lock, signal);
    await migrator(sequelize).up();
  } finally {
    await lock.query("SELECT pg_advisory_unlock_all()").catch(() => undefined);
    await lock.end();
  }
}

export function createSequelize(url: string): Sequelize {
  return new Sequelize(url, {
    dialect: "postgres",
    logging: false,
    pool: { max: Number(process.env.DATABASE_POOL_MAX ?? 20), min: 0, idle: 10_000, acquire: 30_000 },
    // Prepared statements (queryPrepared: the hot paths) keep one generic plan instead of planning each call.
    dialectOptions: { options: "-c plan_cache_mode=force_generic_plan" },
    define: { underscored: true, timestamps: true },
  });
}

let shareRunningEmbedded = false;

/** For a one-off command beside a running service (`npm run setup`): use the service's embedded server, if it runs. */
export function shareEmbeddedDatabase(): void {
  shareRunningEmbedded = true;
}

async function open(signal: AbortSignal): Promise<Database> {
  let url = config().databaseUrl;
  let embedded: RunningPostgres | undefined;
  if (!url) {
    embedded = await startEmbeddedPostgres(path.join(config().dataDir, "pg"), {
      shareRunning: shareRunningEmbedded,
    });
    url = await ensureDatabase(embedded.url, "campaigns");
  }
  const sequelize = createSequelize(url);
  initModels(sequelize);
  try {
    if (config().migrate) await migrate(sequelize, url, signal);
    else await waitForSchema(sequelize, signal);
  } catch (err) {
    await sequelize.close();
    await embedded?.stop();
    throw err;
  }
  const stopStatistics = keepStatistics(sequelize, config().tableStatsIntervalMs, console);
  return { sequelize, embedded, stopStatistics };
}

/** Aborts a start-up still waiting for the migration lock when its services are stopped (SIGTERM). */
let openingAbort: AbortController | undefined;

/** Take a reference to the shared database, opening it on first use. */
export async function acquireDatabase(): Promise<Sequelize> {
  users += 1;
  if (!opening) {
    openingAbort = new AbortController();
    opening = open(openingAbort.signal);
  }
  try {
    return (await opening).sequelize;
  } catch (err) {
    users -= 1;
    opening = undefined;
    throw err;
  }
}

/** Give a reference back; the last one closes the pool. */
export async function releaseDatabase(): Promise<void> {
  users = Math.max(0, users - 1);
  if (users > 0 || !opening) return;
  openingAbort?.abort();
  const db = await opening.catch(() => undefined);
  opening = undefined;
  if (!db) return;
  await db.stopStatistics();
  await db.sequelize.close();
  await db.embedded?.stop();
}

/** Whether a service of this process uses the database (holds a reference, or is opening it). */
export function databaseInUse(): boolean {
  return opening !== undefined;
}

/** The open instance, for code that runs inside a started service. */
export async function database(): Promise<Sequelize> {
  if (!opening) throw new Error("Database used before any service acquired it");
  return (await opening).sequelize;
}

/**
 * The one query API. A statement of one workspace names it first: the
 * workspace id is bound as `$1` and `binds` follow as `$2`, `$3`…, so a
 * query cannot be written without saying whose rows it reads or writes.
 * PostgreSQL refuses a statement that binds `$1` without using it.
 */
export async function query<T extends object>(
  workspaceId: WorkspaceId,
  sql: string,
  binds: readonly unknown[] = [],
  transaction?: Transaction,
): Promise<T[]> {
  return runSequelize<T>(sql, [workspaceId, ...binds], transaction);
}

/**
 * A statement that spans workspaces, said at the call: the claim loops over
 * every workspace's due rows, writes by the primary key of a row already
 * claimed, maintenance.
 */
export async function queryAcrossWorkspaces<T extends object>(
  sql: string,
  binds: readonly unknown[] = [],
  transaction?: Transaction,
): Promise<T[]> {
  return runSequelize<T>(sql, binds, transaction);
}

/** `query` as a named prepared statement (see `runPrepared`): the hot paths. */
export async function queryPrepared<T>(
  workspaceId: WorkspaceId,
  sql: string,
  binds: readonly unknown[] = [],
  transaction?: Transaction,
): Promise<T[]> {
  return runPrepared<T>(sql, [workspaceId, ...binds], transaction);
}

/** `queryAcrossWorkspaces` as a named prepared statement: the claim loops of the hot paths. */
export async function queryAcrossWorkspacesPrepared<T>(
  sql: string,
  binds: readonly unknown[] = [],
  transaction?: Transaction,
): Promise<T[]> {
  return runPrepared<T>(sql, binds, transaction);
}

async function runSequelize<T extends object>(
  sql: string,
  bind: readonly unknown[],
  transaction?: Transaction,
): Promise<T[]> {
  const sequelize = await database();
  return sequelize.query<T>(sql, { bind: bind as unknown[], type: QueryTypes.SELECT, transaction });
}

/**
 * Run a statement as a named prepared statement, on the transaction's
 * connection or a pooled one. Its text is the same on every call, so
 * PostgreSQL parses and plans it once per connection instead of on every
 * call (for a small batched write, parse and plan cost more than the write
 * itself).
 */
async function runPrepared<T>(
  text: string,
  values: readonly unknown[],
  transaction?: Transaction,
): Promise<T[]> {
  const name = `q_${sha256Hex(text).slice(0, 40)}`;
  const run = async (client: Client) =>
    (await client.query({ name, text, values: values as unknown[] })).rows as T[];
  if (transaction) return run((transaction as Transaction & { connection: Client }).connection);
  const manager = (await database()).connectionManager;
  const client = (await manager.getConnection({ type: "write" })) as Client;
  try {
    return await run(client);
  } finally {
    manager.releaseConnection(client);
  }
}

/**
 * Positional bind parameters for hand-built SQL (the one binding style,
 * `$n`): `p(value)` appends a value and returns its `$n`, with a cast when
 * given (`$3::text[]`). Start from values already bound (`new Binds([id])`);
 * for `query`, whose workspace is `$1`, start with `Binds.inWorkspace()`.
 */
export class Binds {
  readonly values: unknown[];
  private readonly offset: number;
  constructor(initial: unknown[] = [], offset = 0) {
    this.values = [...initial];
    this.offset = offset;
  }
  /** Binds numbered from `$2`: `query` binds the workspace as `$1`. */
  static inWorkspace(initial: unknown[] = []): Binds {
    return new Binds(initial, 1);
  }
  p(value: unknown, cast?: string): string {
    this.values.push(value);
    const n = this.values.length + this.offset;
    return cast ? `$${n}::${cast}` : `$${n}`;
  }
}

/** Escape LIKE wildcards so user text matches literally (the default escape character is `\`). */
export const likeEscape = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** PostgreSQL's unique violation (SQLSTATE 23505), from Sequelize or pg: the violated constraint, else null. */
export function uniqueViolation(err: unknown): string | null {
  const e = err as {
    parent?: { code?: string; constraint?: string };
    original?: { code?: string; constraint?: string };
    code?: string;
    constraint?: string;
  };
  const inner = e?.parent ?? e?.original ?? e;
  return inner?.code === "23505" ? (inner.constraint ?? "unique") : null;
}

/** PostgreSQL's "data exception" (SQLSTATE class 22: a value out of range, text it cannot encode): that row's fault alone. */
export function dataException(err: unknown): string | null {
  const e = err as {
    parent?: { code?: string };
    original?: { code?: string };
    code?: string;
    message?: string;
  };
  const inner = e?.parent ?? e?.original ?? e;
  return typeof inner?.code === "string" && inner.code.startsWith("22")
    ? String(e?.message ?? "invalid value")
    : null;
}

/**
 * A timestamptz as the API writes every moment (ISO 8601 UTC, milliseconds,
 * `Z`), for timestamps SQL puts into JSON itself: jsonb renders a timestamptz
 * as `+00:00` with microseconds, unlike the driver's Dates.
 */
export const isoTimeSql = (expression: string): string =>
  `to_char((${expression}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** How jsonb renders a timestamptz column (`to_jsonb(row)`): offset, up to microseconds. */
const JSONB_TIMESTAMPTZ = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$/;

/** A row read whole as jsonb (`to_jsonb(t)`), its timestamptz columns written as the API writes moments. */
export function isoTimeColumns(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(row).map(([column, value]) => [
      column,
      typeof value === "string" && JSONB_TIMESTAMPTZ.test(value) ? new Date(value).toISOString() : value,
    ]),
  );
}
