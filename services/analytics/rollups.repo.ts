import { Binds, query, queryAcrossWorkspaces } from "../../lib/database";
import { tilesOf } from "./tiles";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Reads of `analytics_rollups` (migration 0083) and the deltas the facts'
 * triggers append until they are folded in (0085): sums over the fewest
 * rollup buckets that tile the range exactly (tiles.ts), plus the range's
 * unfolded deltas, grouped by what an answer splits on. `period` is the
 * 1-based index of the answer's bucket a rollup bucket falls in (`edges` are
 * the bucket starts, then the end); no tile straddles an edge, and a delta's
 * 15-minute bucket never does. A sum that neither filters nor splits by
 * channel, campaign or dimension reads the `all:` series (and every split
 * delta of its metrics, there being no `all:` delta).
 */

export type RollupKey = "metric" | "period" | "channel" | "campaign" | "dim";

/** `$2` is the edges, bound only when an answer splits by period. */
const KEY_SQL: Record<RollupKey, string> = {
  metric: "r.metric",
  period: "width_bucket(r.bucket, $2::timestamptz[])",
  channel: "r.channel",
  campaign: "r.campaign_id",
  dim: "r.dim",
};

export interface RollupQuery {
  metrics: string[];
  edges: Date[];
  channel?: string;
  campaignId?: string;
  by: RollupKey[];
}

export type RollupRow = Partial<Record<RollupKey, string>> & { period?: number; value: number };

const ALL = "all:";

/** Sums over the frame, one row per distinct value of `by`. */
export async function sumRollups(workspaceId: WorkspaceId, q: RollupQuery): Promise<RollupRow[]> {
  const edges = q.edges.map((edge) => edge.getTime());
  const periodic = q.by.includes("period");
  const spans: Array<[number, number]> = periodic
    ? edges.slice(0, -1).map((lo, i) => [lo, edges[i + 1]])
    : [[edges[0], edges[edges.length - 1]]];
  const tiles = tilesOf(spans);
  const unsplit =
    q.channel === undefined &&
    q.campaignId === undefined &&
    !q.by.some((key) => key === "channel" || key === "campaign" || key === "dim");
  const binds = Binds.inWorkspace(periodic ? [q.edges] : []);
  const tileSql = `unnest(${binds.p(
    tiles.map((t) => t.tier),
    "smallint[]",
  )}, ${binds.p(
    tiles.map((t) => new Date(t.lo)),
    "timestamptz[]",
  )}, ${binds.p(
    tiles.map((t) => new Date(t.hi)),
    "timestamptz[]",
  )}) AS t(tier, lo, hi)`;
  const channel = q.channel === undefined ? undefined : binds.p(q.channel);
  const campaign = q.campaignId === undefined ? undefined : binds.p(q.campaignId);
  const where = [
    "r.workspace_id = $1",
    `r.metric = ANY (${binds.p(unsplit ? q.metrics.map((m) => ALL + m) : q.metrics, "text[]")})`,
    "r.tier = t.tier",
    "r.bucket >= t.lo",
    "r.bucket < t.hi",
  ];
  const deltaWhere = [
    "d.workspace_id = $1",
    `d.metric = ANY (${binds.p(q.metrics, "text[]")})`,
    `d.bucket >= ${binds.p(q.edges[0], "timestamptz")}`,
    `d.bucket < ${binds.p(q.edges[q.edges.length - 1], "timestamptz")}`,
  ];
  if (channel) {
    where.push(`r.channel = ${channel}`);
    deltaWhere.push(`d.channel = ${channel}`);
  }
  if (campaign) {
    where.push(`r.campaign_id = ${campaign}`);
    deltaWhere.push(`d.campaign_id = ${campaign}`);
  }
  const keys = q.by.map((key) => `${KEY_SQL[key]} AS ${key}`);
  // One statement, so one snapshot: a fold committing meanwhile moves deltas into rollups wholly before or after
  // it. One index range scan per tile (OFFSET 0 keeps the subquery a parameterised scan, never a hash of the table).
  const rows = await query<Record<string, string | number>>(
    workspaceId,
    `SELECT ${[...keys, "sum(r.value) AS value"].join(", ")}
       FROM (SELECT r.metric, r.bucket, r.channel, r.campaign_id, r.dim, r.value
               FROM ${tileSql}
              CROSS JOIN LATERAL (SELECT r.* FROM analytics_rollups r WHERE ${where.join(" AND ")} OFFSET 0) r
             UNION ALL
             SELECT ${unsplit ? `'${ALL}' || d.metric` : "d.metric"}, d.bucket, d.channel, d.campaign_id, d.dim, d.value
               FROM analytics_rollup_deltas d
              WHERE ${deltaWhere.join(" AND ")}) r
      ${q.by.length ? `GROUP BY ${q.by.map((_, i) => i + 1).join(", ")}` : ""}`,
    binds.values,
  );
  return rows.map((row) => ({
    ...row,
    ...(typeof row.metric === "string" ? { metric: row.metric.replace(ALL, "") } : {}),
    value: Number(row.value),
  }));
}

/** Where running totals start: nothing the service holds is older. */
const BEGINNING = new Date(Date.UTC(1900, 0, 1));

/** Sums of `metrics` over all time before `end` (a running total such as the contacts held), by metric. */
export async function sumBefore(
  workspaceId: WorkspaceId,
  metrics: string[],
  end: Date,
): Promise<Map<string, number>> {
  const rows = await sumRollups(workspaceId, { metrics, edges: [BEGINNING, end], by: ["metric"] });
  return new Map(rows.map((row) => [row.metric!, row.value]));
}

/** Shared by every replica, beside the migration and statistics locks (lib/database.ts, lib/table-stats.ts). */
export const FOLD_LOCK = 724_311_903;
/** Deltas folded per statement: a bounded transaction, however far behind the fold is. */
export const FOLD_BATCH = 20_000;

/**
 * Fold up to `limit` deltas into the rollups in one statement (so one
 * transaction): delete them and add their sums at the three tiers and to the
 * `all:` series, in key order, so writers of the same rows never deadlock
 * with it. Under an advisory lock, so one replica folds at a time and a delta
 * is folded once; null when another holds it. The deltas of a deleted
 * workspace are dropped. Answers how many were folded.
 */
export async function foldBatch(limit = FOLD_BATCH): Promise<number | null> {
  const [row] = await queryAcrossWorkspaces<{ held: boolean; folded: string }>(
    `WITH lock AS (SELECT pg_try_advisory_xact_lock($1) AS held),
     batch AS (
       DELETE FROM analytics_rollup_deltas d
        WHERE d.ctid = ANY (ARRAY(SELECT ctid FROM analytics_rollup_deltas WHERE (SELECT held FROM lock) LIMIT $2))
       RETURNING d.workspace_id, d.metric, d.bucket, d.channel, d.campaign_id, d.dim, d.value
     ),
     folded AS (
       INSERT INTO analytics_rollups AS r (workspace_id, metric, tier, bucket, channel, campaign_id, dim, value)
       SELECT b.workspace_id, x.metric, t.tier,
              CASE t.tier WHEN 0 THEN b.bucket
                          WHEN 1 THEN date_trunc('hour', b.bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                          ELSE date_trunc('day', b.bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END,
              x.channel, x.campaign, x.dim, sum(b.value)
         FROM batch b
         JOIN workspaces w ON w.id = b.workspace_id
        CROSS JOIN LATERAL (VALUES (b.metric, b.channel, b.campaign_id, b.dim), ('${ALL}' || b.metric, '', '', ''))
                           AS x(metric, channel, campaign, dim)
        CROSS JOIN (VALUES (0::smallint), (1::smallint), (2::smallint)) AS t(tier)
        GROUP BY 1, 2, 3, 4, 5, 6, 7
        ORDER BY 1, 2, 3, 4, 5, 6, 7
       ON CONFLICT (workspace_id, metric, tier, bucket, channel, campaign_id, dim)
       DO UPDATE SET value = r.value + EXCLUDED.value
     )
     SELECT (SELECT held FROM lock) AS held, (SELECT count(*) FROM batch) AS folded`,
    [FOLD_LOCK, limit],
  );
  return row.held ? Number(row.folded) : null;
}

/** The events' fold's own lock (never the rebuild's), so an answer waiting for it waits for one batch at most. */
export const EVENTS_FOLD_LOCK = 724_311_904;
/** Events derived per statement (migration 0112): a bounded transaction, however far behind the fold is. */
const EVENTS_FOLD_BATCH = 20_000;

/**
 * Derive every stored event's analytics facts (migration 0112's `analytics_fold_events`): the rollup deltas and the
 * per-contact facts, oldest stored first, a bounded batch per statement. `wait`: for the lock while another replica
 * folds (an answer), else stop when another holds it (the timer). Answers how many events were derived.
 */
export async function foldEvents(wait: boolean): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await queryAcrossWorkspaces<{ folded: number | null }>(
      `SELECT analytics_fold_events($1, $2, $3) AS folded`,
      [EVENTS_FOLD_LOCK, EVENTS_FOLD_BATCH, wait],
    );
    total += row.folded ?? 0;
    if (row.folded === null || row.folded < EVENTS_FOLD_BATCH) return total;
  }
}

/**
 * Derive the stored events' facts, then fold the deltas until none is left (each part stops early while another
 * replica holds it); answers how many deltas were folded.
 */
export async function foldRollups(): Promise<number> {
  await foldEvents(false);
  let total = 0;
  for (;;) {
    const folded = await foldBatch();
    total += folded ?? 0;
    if (folded === null || folded < FOLD_BATCH) return total;
  }
}
