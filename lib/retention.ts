import { Type, type Static } from "@sinclair/typebox";
import { defineAction } from "./define-service";
import { Component, Int32, Nullable } from "./schema";
import { workspaceOf, type WorkspaceId } from "./tenancy";

/**
 * Data retention (contract-messaging 12): how many days each kind of fact is
 * kept. Each kind's table belongs to an area, which answers the retention
 * area's two internal calls, `<area>.countBefore` and `<area>.purgeBefore`,
 * with the schemas below; `settings.retention` holds the policy.
 */

/** Each retained kind and the area owning its table (the service answering its count and purge). */
export const RETENTION_KINDS = {
  events: "events",
  messages: "messages",
  formSubmissions: "forms",
  webhookDeliveries: "webhooks",
} as const;

export type RetentionKind = keyof typeof RETENTION_KINDS;
export const RETENTION_KIND_NAMES = Object.keys(RETENTION_KINDS) as RetentionKind[];

const Days = Nullable(
  Int32({
    minimum: 1,
    maximum: 3650,
    description: "Days kept (1-3650); null keeps them all",
  }),
);

/** An undeclared key is refused (400 naming it), not dropped: a misspelt kind must not silently keep data. */
export const UnknownKey = Type.Not(Type.Unknown(), {
  errorMessage: "is not a retained kind (events, messages, formSubmissions, webhookDeliveries)",
});

export const retentionDays = {
  events: Type.Optional(Days),
  messages: Type.Optional(Days),
  formSubmissions: Type.Optional(Days),
  webhookDeliveries: Type.Optional(Days),
};

/** `settings.retention` as sent (PATCH {ws} or POST {ws}/data-retention): a kind left out is kept. */
export const RetentionSetting = Type.Object(retentionDays, {
  additionalProperties: UnknownKey,
  description:
    "Days each kind is kept (events by their timestamp, messages, form submissions and webhook deliveries by creation); null keeps them",
});

/** The policy as answered: every kind, null where it is kept. */
export const RetentionPolicy = Component(
  "RetentionPolicy",
  Type.Object({
    events: Nullable(Type.Integer()),
    messages: Nullable(Type.Integer()),
    formSubmissions: Nullable(Type.Integer()),
    webhookDeliveries: Nullable(Type.Integer()),
  }),
);
export type RetentionPolicy = Static<typeof RetentionPolicy>;

/** Rows per kind (what a purge would delete, or deleted). */
export const RetentionCounts = Component(
  "RetentionCounts",
  Type.Object({
    events: Type.Integer(),
    messages: Type.Integer(),
    formSubmissions: Type.Integer(),
    webhookDeliveries: Type.Integer(),
  }),
);
export type RetentionCounts = Static<typeof RetentionCounts>;

/** The policy with every kind named (a kind left out, or a stored setting missing it, is kept). */
export function retentionPolicy(
  setting: Partial<Record<RetentionKind, number | null>> | null,
): RetentionPolicy {
  return {
    events: setting?.events ?? null,
    messages: setting?.messages ?? null,
    formSubmissions: setting?.formSubmissions ?? null,
    webhookDeliveries: setting?.webhookDeliveries ?? null,
  };
}

/** Internal `<area>.countBefore`: rows of the workspace a purge before `before` would delete now. */
export const CountBeforeParams = Type.Object({ before: Type.String({ format: "date-time" }) });
export const CountBeforeResult = Type.Object({ count: Type.Integer() });

/**
 * Internal `<area>.purgeBefore`: delete one batch (at most `limit` rows, oldest first) of what `countBefore` counts,
 * from `from` on (the previous batch's `last`), so a batch starts where the last one stopped instead of stepping
 * again over the index entries of every row deleted before it (they stay until vacuum).
 */
export const PurgeBeforeParams = Type.Object({
  before: Type.String({ format: "date-time" }),
  limit: Type.Integer({ minimum: 1, maximum: 50_000 }),
  from: Type.Optional(Type.String({ format: "date-time" })),
});
export const PurgeBeforeResult = Type.Object({
  deleted: Type.Integer(),
  /** The newest time the batch deleted; null when it deleted nothing. */
  last: Nullable(Type.String({ format: "date-time" })),
});

/** One batch's answer, as the repo gives it. */
export interface PurgedBatch {
  deleted: number;
  last: Date | null;
}

/**
 * The two internal actions an owning area answers for retention, over its
 * repo's count and batch delete (the workspace from ctx.meta, as everywhere).
 */
export function retentionActions(
  count: (workspaceId: WorkspaceId, before: Date) => Promise<number>,
  purge: (workspaceId: WorkspaceId, before: Date, limit: number, from: Date | null) => Promise<PurgedBatch>,
) {
  return {
    /** Internal (retention): rows a purge before `before` would delete now. */
    countBefore: defineAction({
      params: CountBeforeParams,
      result: CountBeforeResult,
      handler: async (ctx) => ({ count: await count(workspaceOf(ctx), new Date(ctx.params.before)) }),
    }),
    /** Internal (retention): delete one batch of those, oldest first from `from`; answers how many went, and the last time. */
    purgeBefore: defineAction({
      params: PurgeBeforeParams,
      result: PurgeBeforeResult,
      handler: async (ctx) => {
        const { before, limit, from } = ctx.params;
        const batch = await purge(workspaceOf(ctx), new Date(before), limit, from ? new Date(from) : null);
        return { deleted: batch.deleted, last: batch.last?.toISOString() ?? null };
      },
    }),
  };
}

/** One statement's runner, as the owning repo picks it (`queryPrepared` on hot tables, else `query`). */
export type CountQuery = (
  workspaceId: WorkspaceId,
  sql: string,
  binds: unknown[],
) => Promise<Array<{ n: number; last?: Date | null }>>;

export interface PurgeTable {
  /** The owning area's table, a plain lower-case identifier (it is spliced into the SQL). */
  table: string;
  /** The time a row is aged by (indexed with workspace_id, so the batch is picked by that index). */
  timeColumn: string;
  /** SQL condition over the table's columns for rows kept whatever their age (a queued send, say). */
  keep?: string;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * The two statements behind an area's count and purge: `count` binds
 * ($1 workspace, $2 before), `purge` also $3 limit and $4 from (null: the
 * oldest). The purge picks its batch oldest first from `from` and deletes it
 * by ctid in one short statement, the condition restated so a row changed
 * meanwhile (no longer purgeable) is left; it answers the newest time it
 * deleted, where the next batch starts (ties at that time are picked again).
 */
export function purgeStatements({ table, timeColumn, keep }: PurgeTable): { count: string; purge: string } {
  for (const name of [table, timeColumn]) {
    if (!IDENTIFIER.test(name)) throw new Error(`Not a plain SQL identifier: ${JSON.stringify(name)}`);
  }
  const purgeable = `workspace_id = $1 AND ${timeColumn} < $2${keep ? ` AND NOT (${keep})` : ""}`;
  return {
    count: `SELECT count(*)::int AS n FROM ${table} WHERE ${purgeable}`,
    purge: `WITH gone AS (
       DELETE FROM ${table}
        WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table}
                                WHERE ${purgeable} AND ${timeColumn} >= COALESCE($4::timestamptz, '-infinity')
                                ORDER BY ${timeColumn} LIMIT $3))
          AND ${purgeable}
       RETURNING ${timeColumn} AS at)
     SELECT count(*)::int AS n, max(at) AS last FROM gone`,
  };
}

/** An area's count and batch delete for its table (what `retentionActions` takes), run through `query`. */
export function retentionPurge(target: PurgeTable, query: CountQuery) {
  const sql = purgeStatements(target);
  return {
    countBefore: async (workspaceId: WorkspaceId, before: Date): Promise<number> =>
      (await query(workspaceId, sql.count, [before]))[0].n,
    deleteBefore: async (
      workspaceId: WorkspaceId,
      before: Date,
      limit: number,
      from: Date | null,
    ): Promise<PurgedBatch> => {
      const [row] = await query(workspaceId, sql.purge, [before, limit, from]);
      return { deleted: row.n, last: row.last ?? null };
    },
  };
}
