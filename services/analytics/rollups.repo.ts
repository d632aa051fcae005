import { Binds, selectRows } from "../../lib/database";

/**
 * Reads of `analytics_rollups` (kept by the triggers of migration 0083): sums
 * of whole 15-minute buckets, grouped by what an answer splits on. `period`
 * is the 1-based index of the answer's bucket a rollup bucket falls in
 * (`edges` are the bucket starts, then the end).
 */

export type RollupKey = "metric" | "period" | "channel" | "campaign" | "dim";

const KEY_SQL: Record<RollupKey, string> = {
  metric: "metric",
  period: "width_bucket(bucket, $2::timestamptz[])",
  channel: "channel",
  campaign: "campaign_id",
  dim: "dim",
};

export interface RollupQuery {
  metrics: string[];
  edges: Date[];
  channel?: string;
  campaignId?: string;
  by: RollupKey[];
}

export type RollupRow = Partial<Record<RollupKey, string>> & { period?: number; value: number };

/** Sums over the frame, one row per distinct value of `by`. */
export async function sumRollups(workspaceId: string, q: RollupQuery): Promise<RollupRow[]> {
  const binds = new Binds([workspaceId, q.edges]);
  const where = [
    "workspace_id = $1",
    `metric = ANY (${binds.p(q.metrics, "text[]")})`,
    "bucket >= ($2::timestamptz[])[1]",
    "bucket < ($2::timestamptz[])[array_length($2::timestamptz[], 1)]",
  ];
  if (q.channel !== undefined) where.push(`channel = ${binds.p(q.channel)}`);
  if (q.campaignId !== undefined) where.push(`campaign_id = ${binds.p(q.campaignId)}`);
  const keys = q.by.map((key) => `${KEY_SQL[key]} AS ${key}`);
  const rows = await selectRows<Record<string, string | number>>(
    `SELECT ${[...keys, "sum(value) AS value"].join(", ")}
       FROM analytics_rollups
      WHERE ${where.join(" AND ")}
      ${q.by.length ? `GROUP BY ${q.by.map((_, i) => i + 1).join(", ")}` : ""}`,
    binds.values,
  );
  return rows.map((row) => ({ ...row, value: Number(row.value) }));
}

/** Sums of `metrics` over all time before `end` (a running total such as the contacts held), by metric. */
export async function sumBefore(
  workspaceId: string,
  metrics: string[],
  end: Date,
): Promise<Map<string, number>> {
  const rows = await selectRows<{ metric: string; value: number }>(
    `SELECT metric, sum(value) AS value
       FROM analytics_rollups
      WHERE workspace_id = $1 AND metric = ANY ($2::text[]) AND bucket < $3
      GROUP BY metric`,
    [workspaceId, metrics, end],
  );
  return new Map(rows.map((row) => [row.metric, Number(row.value)]));
}
