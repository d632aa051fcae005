import { Binds, query } from "../../lib/database";
import { memberOf } from "./segment.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Cohorts from kept facts (migration 0089): the cohort members from
 * `analytics_contact_firsts` (their first `event`) or
 * `analytics_contact_created` (no event), their activity from
 * `analytics_contact_activity` (written by the events' fold, migration
 * 0112), in 15-minute UTC buckets, so every answer bucket
 * edge falls on one. Periods are 1-based indexes into the frame's `edges`.
 * With `segmentId`, the cohorts hold only the segment's current members.
 */

export interface CohortCounts {
  /** Contacts per cohort period. */
  sizes: Map<number, number>;
  /** Contacts of cohort `cohort` active in period `period` (`period >= cohort`). */
  active: Array<{ cohort: number; period: number; contacts: number }>;
}

export async function cohortCounts(
  workspaceId: WorkspaceId,
  event: string | null,
  edges: Date[],
  segmentId?: string,
): Promise<CohortCounts> {
  const binds = Binds.inWorkspace([edges, edges[0], edges[edges.length - 1]]);
  const inSegment = segmentId === undefined ? "" : `AND ${memberOf("k.contact_id", binds.p(segmentId))}`;
  const members =
    event === null
      ? `SELECT k.contact_id, k.created_at AS at FROM analytics_contact_created k
          WHERE k.workspace_id = $1 AND created_at >= $3 AND created_at < $4 ${inSegment}`
      : `SELECT k.contact_id, k.first_at AS at FROM analytics_contact_firsts k
          WHERE k.workspace_id = $1 AND type = ${binds.p(event)} AND first_at >= $3 AND first_at < $4 ${inSegment}`;
  // Period 0 carries each cohort's size; the activity of a member is read from its cohort's start by key.
  const rows = await query<{ cohort: number; period: number; contacts: string }>(
    workspaceId,
    `WITH cohort_contacts AS (SELECT contact_id, width_bucket(at, $2::timestamptz[]) AS cohort FROM (${members}) m)
     SELECT cohort, 0 AS period, count(*) AS contacts FROM cohort_contacts GROUP BY 1
     UNION ALL
     SELECT m.cohort, width_bucket(a.bucket, $2::timestamptz[]) AS period, count(DISTINCT m.contact_id)
       FROM cohort_contacts m
      CROSS JOIN LATERAL (
             SELECT a.bucket FROM analytics_contact_activity a
              WHERE a.workspace_id = $1 AND a.contact_id = m.contact_id
                AND a.bucket >= ($2::timestamptz[])[m.cohort] AND a.bucket < $4) a
      GROUP BY 1, 2`,
    binds.values,
  );
  const sizes = new Map<number, number>();
  const active: CohortCounts["active"] = [];
  for (const row of rows) {
    const contacts = Number(row.contacts);
    if (Number(row.period) === 0) sizes.set(Number(row.cohort), contacts);
    else active.push({ cohort: Number(row.cohort), period: Number(row.period), contacts });
  }
  return { sizes, active };
}
