import type { Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { database, query, queryAcrossWorkspaces, queryAcrossWorkspacesPrepared } from "../../lib/database";
import type { ProviderChannel } from "../../lib/channels";
import type { ChannelCommand } from "./commands";
import { maskedConfig, openedConfig } from "./credentials";
import type { ProviderType } from "./kinds";
import type { ProviderView } from "./providers.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query of the providers area. Workspace id first. */

export interface ProviderRow {
  id: string;
  channel: ProviderChannel;
  type: ProviderType;
  name: string;
  is_default: boolean;
  priority: number;
  status: "active" | "failing";
  consecutive_failures: number;
  failing_since: Date | null;
  probe_at: Date | null;
  /** Secrets sealed. */
  config: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export const view = (r: ProviderRow): ProviderView => ({
  id: r.id,
  channel: r.channel,
  type: r.type,
  name: r.name,
  isDefault: r.is_default,
  priority: r.priority,
  status: r.status,
  consecutiveFailures: r.consecutive_failures,
  failingSince: r.failing_since,
  config: maskedConfig(r.type, r.config),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A provider as its sender uses it: secrets opened (never answered, never in a broker message). */
export interface OpenedProvider {
  id: string;
  type: ProviderType;
  name: string;
  isDefault: boolean;
  priority: number;
  status: "active" | "failing";
  probeAt: Date | null;
  config: Record<string, unknown>;
  updatedAt: Date;
}

export const opened = (r: ProviderRow): OpenedProvider => ({
  id: r.id,
  type: r.type,
  name: r.name,
  isDefault: r.is_default,
  priority: r.priority,
  status: r.status,
  probeAt: r.probe_at,
  config: openedConfig(r.type, r.config),
  updatedAt: r.updated_at,
});

/** The channels the workspace has at least one provider for. */
export async function configuredChannels(workspaceId: WorkspaceId): Promise<ProviderChannel[]> {
  const rows = await query<{ channel: ProviderChannel }>(
    workspaceId,
    `SELECT DISTINCT channel FROM providers WHERE workspace_id = $1 ORDER BY channel`,
  );
  return rows.map((r) => r.channel);
}

/** A channel's providers: the default first, then by priority and age (the failover order). */
export async function listProviders(
  workspaceId: WorkspaceId,
  channel: ProviderChannel,
): Promise<ProviderRow[]> {
  return query<ProviderRow>(
    workspaceId,
    `SELECT * FROM providers WHERE workspace_id = $1 AND channel = $2
      ORDER BY is_default DESC, priority, created_at, id`,
    [channel],
  );
}

export async function getProvider(
  workspaceId: WorkspaceId,
  id: string,
  transaction?: Transaction,
): Promise<ProviderRow | null> {
  const [row] = await query<ProviderRow>(
    workspaceId,
    `SELECT * FROM providers WHERE workspace_id = $1 AND id = $2${transaction ? " FOR UPDATE" : ""}`,
    [id],
    transaction,
  );
  return row ?? null;
}

/** The workspace's provider of a one-per-workspace type (push and chat channels); null when none. */
export async function providerOfType(
  workspaceId: WorkspaceId,
  type: ProviderType,
  transaction?: Transaction,
): Promise<ProviderRow | null> {
  const [row] = await query<ProviderRow>(
    workspaceId,
    `SELECT * FROM providers WHERE workspace_id = $1 AND type = $2${transaction ? " FOR UPDATE" : ""}`,
    [type],
    transaction,
  );
  return row ?? null;
}

export interface ProviderWrite {
  name: string;
  isDefault: boolean;
  priority: number;
  config: Record<string, unknown>;
}

/**
 * Writes of a channel's providers hold the workspace's channel (an advisory
 * transaction lock), so "the first is the default" and "a new default clears
 * the others" hold under concurrent writes.
 */
export async function inChannel<T>(
  workspaceId: WorkspaceId,
  channel: ProviderChannel,
  work: (transaction: Transaction) => Promise<T>,
): Promise<T> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await queryAcrossWorkspaces(
      `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
      [`providers:${workspaceId}:${channel}`],
      transaction,
    );
    return work(transaction);
  });
}

export async function hasDefault(
  transaction: Transaction,
  workspaceId: WorkspaceId,
  channel: ProviderChannel,
): Promise<boolean> {
  const rows = await query(
    workspaceId,
    `SELECT 1 FROM providers WHERE workspace_id = $1 AND channel = $2 AND is_default`,
    [channel],
    transaction,
  );
  return rows.length > 0;
}

export async function clearDefault(
  transaction: Transaction,
  workspaceId: WorkspaceId,
  channel: ProviderChannel,
): Promise<void> {
  await query(
    workspaceId,
    `UPDATE providers SET is_default = false, updated_at = now() WHERE workspace_id = $1 AND channel = $2 AND is_default`,
    [channel],
    transaction,
  );
}

export async function insertProvider(
  transaction: Transaction,
  workspaceId: WorkspaceId,
  row: { id: string; channel: ProviderChannel; type: ProviderType } & ProviderWrite,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO providers (id, workspace_id, channel, type, name, is_default, priority, config)
     VALUES ($2, $1, $3, $4, $5, $6, $7, $8::jsonb)`,
    [row.id, row.channel, row.type, row.name, row.isDefault, row.priority, JSON.stringify(row.config)],
    transaction,
  );
}

export async function updateProvider(
  transaction: Transaction,
  workspaceId: WorkspaceId,
  id: string,
  write: ProviderWrite,
): Promise<void> {
  await query(
    workspaceId,
    `UPDATE providers SET name = $3, is_default = $4, priority = $5, config = $6::jsonb, updated_at = now()
      WHERE workspace_id = $1 AND id = $2`,
    [id, write.name, write.isDefault, write.priority, JSON.stringify(write.config)],
    transaction,
  );
}

/**
 * Delete a provider; when it was the default, the next in failover order
 * becomes it, so a channel with providers always has one. False when none.
 */
export async function deleteProvider(
  transaction: Transaction,
  workspaceId: WorkspaceId,
  id: string,
  channel: ProviderChannel,
): Promise<boolean> {
  const [deleted] = await query<{ is_default: boolean }>(
    workspaceId,
    `DELETE FROM providers WHERE workspace_id = $1 AND id = $2 RETURNING is_default`,
    [id],
    transaction,
  );
  if (!deleted) return false;
  if (deleted.is_default)
    await query(
      workspaceId,
      `UPDATE providers SET is_default = true, updated_at = now()
        WHERE id = (SELECT id FROM providers WHERE workspace_id = $1 AND channel = $2
                     ORDER BY priority, created_at, id LIMIT 1)`,
      [channel],
      transaction,
    );
  return true;
}

/** A callback's provider, with its workspace's channel commands (null until it replaced the defaults). */
export type CallbackProvider = ProviderRow & { workspace_id: WorkspaceId; commands: ChannelCommand[] | null };

/**
 * Concurrent callbacks' providers (each of a chat's messages is a callback
 * of its own) are read together: the ids asked while a read runs go in the
 * next statement, with their workspaces' channel commands.
 */
const callbackProviders = new MicroBatcher(
  async (ids: string[]): Promise<Array<CallbackProvider | null>> => {
    const rows = await queryAcrossWorkspacesPrepared<CallbackProvider>(
      `SELECT p.*, c.commands FROM providers p LEFT JOIN channel_commands c ON c.workspace_id = p.workspace_id
        WHERE p.id = ANY ($1::text[])`,
      [[...new Set(ids)]],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id) ?? null);
  },
  { maxBatch: 200, lanes: 1 },
);

/**
 * A provider by id alone: a callback's `providerId` is all that names its
 * workspace (the route is public and the provider's signature authorises it).
 */
export const providerForCallback = (id: string): Promise<CallbackProvider | null> =>
  callbackProviders.add(id);

/** The workspace's channel commands; null until it replaced the defaults. */
export async function getCommands(workspaceId: WorkspaceId): Promise<ChannelCommand[] | null> {
  const [row] = await query<{ commands: ChannelCommand[] }>(
    workspaceId,
    `SELECT commands FROM channel_commands WHERE workspace_id = $1`,
  );
  return row?.commands ?? null;
}

export async function putCommands(workspaceId: WorkspaceId, commands: ChannelCommand[]): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO channel_commands (workspace_id, commands) VALUES ($1, $2::jsonb)
     ON CONFLICT (workspace_id) DO UPDATE SET commands = EXCLUDED.commands, updated_at = now()`,
    [JSON.stringify(commands)],
  );
}

/** A callback's event ids (of one provider). */
interface CallbackEvents {
  providerId: string;
  eventIds: string[];
}

/** The pairs of a batch of callbacks' events, as two parallel arrays. */
const pairs = (asks: CallbackEvents[]): [string[], string[]] => [
  asks.flatMap((a) => a.eventIds.map(() => a.providerId)),
  asks.flatMap((a) => a.eventIds),
];

/** Concurrent callbacks ask together which of their events were applied before. */
const seenReader = new MicroBatcher(
  async (asks: CallbackEvents[]): Promise<Array<Set<string>>> => {
    const rows = await queryAcrossWorkspacesPrepared<{ provider_id: string; event_id: string }>(
      `SELECT l.provider_id, l.event_id FROM provider_event_log l
         JOIN unnest($1::text[], $2::text[]) AS s(provider_id, event_id) USING (provider_id, event_id)`,
      pairs(asks),
    );
    const seen = new Set(rows.map((r) => `${r.provider_id}\n${r.event_id}`));
    return asks.map((a) => new Set(a.eventIds.filter((id) => seen.has(`${a.providerId}\n${id}`))));
  },
  { maxBatch: 200, lanes: 1 },
);

/** Which of a callback's event ids were applied before (providers retry a callback until it is answered). */
export async function seenEvents(providerId: string, eventIds: string[]): Promise<Set<string>> {
  return eventIds.length ? seenReader.add({ providerId, eventIds }) : new Set();
}

/** Concurrent callbacks note their applied events in one statement. */
const seenWriter = new MicroBatcher(
  async (asks: CallbackEvents[]): Promise<null[]> => {
    await queryAcrossWorkspacesPrepared(
      `INSERT INTO provider_event_log (provider_id, event_id)
       SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`,
      pairs(asks),
    );
    return asks.map(() => null);
  },
  { maxBatch: 200, lanes: 1 },
);

/** Note event ids as applied, once the callback's work is done. */
export async function markSeen(providerId: string, eventIds: string[]): Promise<void> {
  if (eventIds.length) await seenWriter.add({ providerId, eventIds });
}

export interface HealthChange {
  row: ProviderRow & { workspace_id: WorkspaceId };
  /** The status before the report, to tell a switch from a steady state. */
  was: "active" | "failing";
}

/**
 * A batch's outcome at a provider: any accepted send makes it `active` with
 * no failures; only transient failures add to its count, and past
 * `threshold` make it `failing` with a probe after `probeMs` (a failing
 * provider's failed probe moves the probe on). Null when it is gone.
 */
export async function reportHealth(
  workspaceId: WorkspaceId,
  id: string,
  outcome: { accepted: number; transientFailures: number },
  threshold: number,
  probeMs: number,
): Promise<HealthChange | null> {
  // One statement: the row is locked (and its status before read) only when the report changes it, so the
  // steady state (accepted sends at an active provider) writes nothing and sends do not queue on the row.
  const accepted = outcome.accepted > 0;
  const rows = await query<ProviderRow & { workspace_id: WorkspaceId; was: "active" | "failing" }>(
    workspaceId,
    `WITH before AS (
       SELECT id, status FROM providers WHERE workspace_id = $1 AND id = $2
          ${accepted ? "AND (status <> 'active' OR consecutive_failures <> 0 OR failing_since IS NOT NULL OR probe_at IS NOT NULL)" : ""}
        FOR UPDATE
     ), changed AS (
       UPDATE providers p SET ${
         accepted
           ? `status = 'active', consecutive_failures = 0, failing_since = NULL, probe_at = NULL`
           : `consecutive_failures = p.consecutive_failures + $3,
              status = CASE WHEN p.consecutive_failures + $3 >= $4 THEN 'failing' ELSE p.status END,
              failing_since = CASE WHEN p.consecutive_failures + $3 >= $4 THEN coalesce(p.failing_since, now()) ELSE p.failing_since END,
              probe_at = CASE WHEN p.consecutive_failures + $3 >= $4 THEN now() + $5 * interval '1 millisecond' ELSE p.probe_at END`
       } FROM before WHERE p.id = before.id RETURNING p.*, before.status AS was
     )
     SELECT * FROM changed
     UNION ALL
     SELECT p.*, p.status AS was FROM providers p
      WHERE p.workspace_id = $1 AND p.id = $2 AND NOT EXISTS (SELECT 1 FROM changed)`,
    accepted ? [id] : [id, outcome.transientFailures, threshold, probeMs],
  );
  if (!rows.length) return null;
  const { was, ...row } = rows[0];
  return { row, was };
}

/** Event ids older than `days`: no provider retries a callback that long. Answers how many were dropped. */
export async function dropOldEventIds(days: number): Promise<number> {
  const rows = await queryAcrossWorkspaces(
    `DELETE FROM provider_event_log WHERE created_at < now() - $1 * interval '1 day' RETURNING 1`,
    [days],
  );
  return rows.length;
}
