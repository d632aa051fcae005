import { query, queryAcrossWorkspaces } from "../../lib/database";
import type { RetentionKind } from "../../lib/retention";
import type { WorkspaceId } from "../../lib/tenancy";

type StoredSetting = Partial<Record<RetentionKind, number | null>>;

/**
 * Claim the workspaces whose purge is due: a retention setting that keeps
 * some kind for a number of days, and no run yet this UTC day. The claim
 * moves `last_run_on` to today in the same statement; of two replicas
 * claiming at once, the second waits on the first's row and then finds it
 * already today's (the ON CONFLICT condition), so each workspace is claimed
 * once a day across replicas.
 */
export async function claimDue(
  limit: number,
): Promise<Array<{ workspaceId: WorkspaceId; setting: StoredSetting }>> {
  const rows = await queryAcrossWorkspaces<{ workspace_id: WorkspaceId; setting: StoredSetting }>(
    `WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS day),
     claimed AS (
       INSERT INTO retention_runs AS r (workspace_id, last_run_on)
       SELECT w.id, today.day FROM workspaces w, today
        WHERE jsonb_typeof(w.settings -> 'retention') = 'object'
          AND EXISTS (SELECT 1 FROM jsonb_each(w.settings -> 'retention') k WHERE jsonb_typeof(k.value) = 'number')
          AND NOT EXISTS (SELECT 1 FROM retention_runs d WHERE d.workspace_id = w.id AND d.last_run_on >= today.day)
        ORDER BY w.id
        LIMIT $1
       ON CONFLICT (workspace_id) DO UPDATE SET last_run_on = EXCLUDED.last_run_on
        WHERE r.last_run_on < EXCLUDED.last_run_on
       RETURNING r.workspace_id)
     SELECT c.workspace_id, w.settings -> 'retention' AS setting
       FROM claimed c JOIN workspaces w ON w.id = c.workspace_id`,
    [limit],
  );
  return rows.map((row) => ({ workspaceId: row.workspace_id, setting: row.setting }));
}

/** A purge started by request: it is the workspace's run of the day. */
export async function noteRun(workspaceId: WorkspaceId): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO retention_runs (workspace_id, last_run_on) VALUES ($1, (now() AT TIME ZONE 'UTC')::date)
     ON CONFLICT (workspace_id) DO UPDATE SET last_run_on = EXCLUDED.last_run_on`,
  );
}
