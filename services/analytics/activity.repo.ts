import { queryAcrossWorkspaces } from "../../lib/database";
import { FOLD_BATCH, FOLD_LOCK } from "./rollups.repo";

/**
 * The fold of the contacts' activity the events' trigger appends to
 * `analytics_contact_activity_pending` (migration 0102) into
 * `analytics_contact_activity`, beside the rollup deltas' fold and under the
 * same advisory lock, so one replica folds at a time and a row is moved once.
 * Readers (cohorts.repo.ts) read both tables in one statement.
 */

/**
 * Move up to `limit` pending rows in one statement (so one transaction):
 * delete them and insert their distinct buckets, in key order, skipping those
 * held. The rows of a deleted workspace are dropped. Null when another replica
 * holds the lock; else how many rows were moved.
 */
export async function foldActivityBatch(limit = FOLD_BATCH): Promise<number | null> {
  const [row] = await queryAcrossWorkspaces<{ held: boolean; folded: string }>(
    `WITH lock AS (SELECT pg_try_advisory_xact_lock($1) AS held),
     batch AS (
       DELETE FROM analytics_contact_activity_pending p
        WHERE p.ctid = ANY (ARRAY(SELECT ctid FROM analytics_contact_activity_pending
                                   WHERE (SELECT held FROM lock) LIMIT $2))
       RETURNING p.workspace_id, p.contact_id, p.bucket
     ),
     folded AS (
       INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
       SELECT DISTINCT b.workspace_id, b.contact_id, b.bucket
         FROM batch b
         JOIN workspaces w ON w.id = b.workspace_id
        ORDER BY 1, 2, 3
       ON CONFLICT DO NOTHING
     )
     SELECT (SELECT held FROM lock) AS held, (SELECT count(*) FROM batch) AS folded`,
    [FOLD_LOCK, limit],
  );
  return row.held ? Number(row.folded) : null;
}

/** Fold until no pending row is left (or another replica is folding); answers how many were moved. */
export async function foldActivity(): Promise<number> {
  let total = 0;
  for (;;) {
    const folded = await foldActivityBatch();
    total += folded ?? 0;
    if (folded === null || folded < FOLD_BATCH) return total;
  }
}
