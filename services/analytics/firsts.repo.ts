import { Binds, query } from "../../lib/database";
import { memberOf } from "./segment.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Reads of `analytics_contact_firsts` and `analytics_contact_sources`
 * (migration 0084): when each contact first did each event type, and first
 * came from each UTM source and medium.
 */

/**
 * A funnel over first times: step 1 counts the contacts whose first `steps[0]`
 * falls in `[start, end)`; each next step, those of the step before whose
 * first `steps[k]` came at or after their previous step and within `windowMs`
 * of their first step. One index range scan, then a key probe per contact and step.
 * With `segmentId`, only the segment's current members' firsts.
 */
export async function funnelCounts(
  workspaceId: WorkspaceId,
  steps: string[],
  start: Date,
  end: Date,
  windowMs: number,
  segmentId?: string,
): Promise<number[]> {
  const binds = Binds.inWorkspace([start, end, windowMs]);
  const members = segmentId === undefined ? "" : `AND ${memberOf("f0.contact_id", binds.p(segmentId))}`;
  const joins = steps.slice(1).map(
    (type, i) => `LEFT JOIN analytics_contact_firsts f${i + 1}
       ON f${i + 1}.workspace_id = $1 AND f${i + 1}.contact_id = f0.contact_id AND f${i + 1}.type = ${binds.p(type)}
      AND f${i + 1}.first_at >= f${i}.first_at AND f${i + 1}.first_at <= f0.first_at + $4 * interval '1 millisecond'`,
  );
  const [row] = await query<Record<string, string>>(
    workspaceId,
    `SELECT ${steps.map((_, i) => `count(f${i}.first_at) AS s${i}`).join(", ")}
       FROM analytics_contact_firsts f0
       ${joins.join("\n")}
      WHERE f0.workspace_id = $1 AND f0.type = ${binds.p(steps[0])} AND f0.first_at >= $2 AND f0.first_at < $3
      ${members}`,
    binds.values,
  );
  return steps.map((_, i) => Number(row[`s${i}`]));
}

export interface SourceRow {
  utm_source: string;
  utm_medium: string;
  contacts: string;
  conversions: string;
}

/**
 * Per UTM source and medium: the contacts who first came from it in
 * `[start, end)`, and those of them whose first `conversion` came after that
 * and before `end`. Most contacts first, at most `limit`. With `segmentId`,
 * only the segment's current members.
 */
export function sourceCounts(
  workspaceId: WorkspaceId,
  conversion: string,
  start: Date,
  end: Date,
  limit: number,
  segmentId?: string,
): Promise<SourceRow[]> {
  const binds = Binds.inWorkspace([conversion, start, end, limit]);
  const members = segmentId === undefined ? "" : `AND ${memberOf("s.contact_id", binds.p(segmentId))}`;
  return query<SourceRow>(
    workspaceId,
    `SELECT s.utm_source, s.utm_medium, count(*) AS contacts, count(c.first_at) AS conversions
       FROM analytics_contact_sources s
       LEFT JOIN analytics_contact_firsts c
         ON c.workspace_id = $1 AND c.contact_id = s.contact_id AND c.type = $2
        AND c.first_at >= s.first_at AND c.first_at < $4
      WHERE s.workspace_id = $1 AND s.first_at >= $3 AND s.first_at < $4
      ${members}
      GROUP BY 1, 2
      ORDER BY 3 DESC, 1, 2
      LIMIT $5`,
    binds.values,
  );
}
