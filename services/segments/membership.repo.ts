import { type Transaction } from "sequelize";
import { Binds, query, queryAcrossWorkspaces, queryPrepared } from "../../lib/database";
import { sqlProbe } from "../../lib/versioned-cache";
import type { FilterGroup } from "./filter-schema";
import type { WorkspaceId } from "../../lib/tenancy";

/** A dynamic segment as membership evaluation reads it. */
export interface DynamicSegment {
  id: string;
  filter: FilterGroup;
  dependsOn: string[];
  eventTypes: string[];
  usesScore: boolean;
}

/** A contact entering or leaving a segment. */
export interface MembershipChange {
  segmentId: string;
  contactId: string;
}

/** The statements of membership evaluation and recompute (membership.ts). */

/** Working memory for the set-shaped queries: a semi-join over a million ids must hash, not loop. */
const SET_QUERY_WORK_MEM = "256MB";

/** The version of a workspace's dynamic segments (count, newest update and creation), for membership.ts's cache. */
export const segmentsVersionProbe = sqlProbe(
  "segments",
  `SELECT workspace_id, count(*) || '/' || max(updated_at)::text || '/' || max(created_at)::text AS version
       FROM segments WHERE workspace_id = ANY($1::text[]) AND type = 'dynamic' GROUP BY workspace_id`,
);

export async function loadDynamicSegments(
  workspaceId: WorkspaceId,
  transaction?: Transaction,
): Promise<DynamicSegment[]> {
  const rows = await query<{
    id: string;
    filter: FilterGroup;
    depends_on: string[];
    event_types: string[];
    uses_score: boolean;
  }>(
    workspaceId,
    `SELECT id, filter, depends_on, event_types, uses_score FROM segments
      WHERE workspace_id = $1 AND type = 'dynamic' ORDER BY created_at, id`,
    [],
    transaction,
  );
  return rows.map((r) => ({
    id: r.id,
    filter: r.filter,
    dependsOn: r.depends_on,
    eventTypes: r.event_types,
    usesScore: r.uses_score,
  }));
}

/**
 * Serialise evaluations of the same contact across connections (advisory
 * locks, without touching its row lock), and say which event caused each
 * contact's entries and exits, read by the membership log's triggers
 * (migration 0033): one statement. A volatile output of a subquery is never
 * dropped, so every lock is taken.
 */
export async function lockContacts(
  contactIds: string[],
  causes: Map<string, string>,
  transaction: Transaction,
) {
  await queryAcrossWorkspaces(
    `SELECT (SELECT count(*) FROM (SELECT pg_advisory_xact_lock(hashtextextended('segments:contact:' || id, 0))
                                     FROM unnest($1::text[]) AS id ORDER BY id) locked) AS locked,
            set_config('segments.causes', $2, true) AS causes`,
    [[...contactIds].sort(), JSON.stringify(Object.fromEntries(causes))],
    transaction,
  );
}

/** Each contact's predicate results (in `predicates` order) and its current segments among `$3`. */
export async function levelMembership(
  workspaceId: WorkspaceId,
  binds: Binds,
  predicates: string[],
  transaction?: Transaction,
): Promise<Array<{ id: string; m: boolean[]; cur: string[] }>> {
  // The contacts are found by id alone (a fence keeps the workspace check out of it), so always through
  // the primary key, whatever the statistics said when the statement's plan was made.
  return queryPrepared<{ id: string; m: boolean[]; cur: string[] }>(
    workspaceId,
    `SELECT c.id, ARRAY[${predicates.join(", ")}]::boolean[] AS m,
            ARRAY(SELECT sm.segment_id FROM segment_members sm
                   WHERE sm.contact_id = c.id AND sm.segment_id = ANY($3::text[])) AS cur
       FROM (SELECT * FROM contacts x WHERE x.id = ANY($2::text[]) OFFSET 0) c WHERE c.workspace_id = $1`,
    binds.values,
    transaction,
  );
}

export async function applyChanges(
  enter: MembershipChange[],
  exit: MembershipChange[],
  transaction: Transaction,
) {
  if (enter.length) {
    await queryAcrossWorkspaces(
      `INSERT INTO segment_members (segment_id, contact_id, entered_at)
       SELECT s, c, now() FROM unnest($1::text[], $2::text[]) AS d(s, c) ON CONFLICT DO NOTHING`,
      [enter.map((e) => e.segmentId), enter.map((e) => e.contactId)],
      transaction,
    );
  }
  if (exit.length) {
    await queryAcrossWorkspaces(
      `DELETE FROM segment_members sm USING unnest($1::text[], $2::text[]) AS d(s, c)
        WHERE sm.segment_id = d.s AND sm.contact_id = d.c`,
      [exit.map((e) => e.segmentId), exit.map((e) => e.contactId)],
      transaction,
    );
  }
}

/** One recompute of a segment at a time; the set-shaped statement gets its working memory. */
export async function holdRecompute(segmentId: string, transaction: Transaction): Promise<void> {
  await queryAcrossWorkspaces(
    `SELECT pg_advisory_xact_lock(hashtextextended('segments:recompute:' || $1, 0))`,
    [segmentId],
    transaction,
  );
  await queryAcrossWorkspaces(`SET LOCAL work_mem = '${SET_QUERY_WORK_MEM}'`, [], transaction);
}

/**
 * The difference between a segment's members and its filter's contacts,
 * written (an anti-join each way); `collect` asks for the changed ids too.
 */
export async function reconcileSegment(
  workspaceId: WorkspaceId,
  binds: Binds,
  predicate: string,
  collect: string,
  transaction: Transaction,
): Promise<{ added: string; removed: string; member_count: string; entered?: string[]; exited?: string[] }> {
  const [row] = await query<{
    added: string;
    removed: string;
    member_count: string;
    entered?: string[];
    exited?: string[];
  }>(
    workspaceId,
    `WITH target AS MATERIALIZED (
       SELECT c.id FROM contacts c WHERE c.workspace_id = $1 AND ${predicate}
     ),
     -- EXCEPT scans each side once: an anti-join planned from stale statistics could rescan
     -- segment_members for every row while this same statement fills it (quadratic).
     removed AS (
       DELETE FROM segment_members sm
        USING (SELECT m.contact_id FROM segment_members m WHERE m.segment_id = $2
               EXCEPT SELECT t.id FROM target t) gone
        WHERE sm.segment_id = $2 AND sm.contact_id = gone.contact_id
        RETURNING sm.contact_id
     ),
     -- In contact order, so the member indexes fill page by page: in hash order a big build dirtied
     -- about one index page a member, evicted and rewritten before its next use.
     added AS (
       INSERT INTO segment_members (segment_id, contact_id, entered_at)
       SELECT $2, fresh.id, now()
         FROM (SELECT t.id FROM target t
               EXCEPT SELECT m.contact_id FROM segment_members m WHERE m.segment_id = $2) fresh
        ORDER BY fresh.id
       RETURNING contact_id
     )
     SELECT (SELECT count(*) FROM added) AS added, (SELECT count(*) FROM removed) AS removed,
            (SELECT count(*) FROM target) AS member_count${collect}`,
    binds.values,
    transaction,
  );
  return row;
}
