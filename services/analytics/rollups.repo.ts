import { Binds, selectRows } from "../../lib/database";
import { tilesOf } from "./tiles";

/**
 * Reads of `analytics_rollups` (kept by the triggers of migrations 0083 and
 * 0084): sums over the fewest rollup buckets that tile the range exactly
 * (tiles.ts), grouped by what an answer splits on. `period` is the 1-based
 * index of the answer's bucket a rollup bucket falls in (`edges` are the
 * bucket starts, then the end); no tile straddles an edge. A sum that neither
 * filters nor splits by channel, campaign or dimension reads the `all:` series.
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
export async function sumRollups(workspaceId: string, q: RollupQuery): Promise<RollupRow[]> {
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
  const binds = new Binds(periodic ? [workspaceId, q.edges] : [workspaceId]);
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
  const where = [
    "r.workspace_id = $1",
    `r.metric = ANY (${binds.p(unsplit ? q.metrics.map((m) => ALL + m) : q.metrics, "text[]")})`,
    "r.tier = t.tier",
    "r.bucket >= t.lo",
    "r.bucket < t.hi",
  ];
  if (q.channel !== undefined) where.push(`r.channel = ${binds.p(q.channel)}`);
  if (q.campaignId !== undefined) where.push(`r.campaign_id = ${binds.p(q.campaignId)}`);
  const keys = q.by.map((key) => `${KEY_SQL[key]} AS ${key}`);
  // One index range scan per tile (OFFSET 0 keeps the subquery a parameterised scan, never a hash of the table).
  const rows = await selectRows<Record<string, string | number>>(
    `SELECT ${[...keys, "sum(r.value) AS value"].join(", ")}
       FROM ${tileSql}
      CROSS JOIN LATERAL (SELECT r.* FROM analytics_rollups r WHERE ${where.join(" AND ")} OFFSET 0) r
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
  workspaceId: string,
  metrics: string[],
  end: Date,
): Promise<Map<string, number>> {
  const rows = await sumRollups(workspaceId, { metrics, edges: [BEGINNING, end], by: ["metric"] });
  return new Map(rows.map((row) => [row.metric!, row.value]));
}
