import { database, query, queryAcrossWorkspaces } from "../../lib/database";
import type { TriggerType } from "./campaigns.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The segment membership log as the campaigns area reads it: the entries
 * and exits that segment triggers enroll by. The background reader keeps a
 * cursor of transaction ids (see migration 0052); the events chain reads an
 * event's own changes at once.
 */

export interface LogChange {
  id: string;
  workspace_id: WorkspaceId;
  segment_id: string;
  contact_id: string;
  change: "entered" | "exited";
}

export interface SegmentTrigger {
  id: string;
  workspace_id: WorkspaceId;
  campaign_id: string;
  type: Extract<TriggerType, "segment_entered" | "segment_exited">;
  segment_id: string;
  reentry: "once" | "always" | "cooldown";
  cooldown_hours: number | null;
  published_version: number;
}

const LIVE_SEGMENT_TRIGGERS = `
  SELECT t.id, t.workspace_id, t.campaign_id, t.type, t.config ->> 'segmentId' AS segment_id, t.reentry,
         t.cooldown_hours, c.published_version
    FROM campaign_triggers t JOIN campaigns c ON c.id = t.campaign_id
   WHERE t.type IN ('segment_entered', 'segment_exited') AND t.active
     AND c.status = 'active' AND c.published_version IS NOT NULL`;

/** Active segment triggers of active campaigns (of one workspace, when given). */
export async function liveSegmentTriggers(workspaceId?: WorkspaceId): Promise<SegmentTrigger[]> {
  return workspaceId
    ? query<SegmentTrigger>(workspaceId, `${LIVE_SEGMENT_TRIGGERS} AND t.workspace_id = $1`)
    : queryAcrossWorkspaces<SegmentTrigger>(LIVE_SEGMENT_TRIGGERS);
}

/** The changes an event caused, in segments that triggers watch. */
export async function changesOfEvent(
  workspaceId: WorkspaceId,
  eventId: string,
  segmentIds: string[],
): Promise<LogChange[]> {
  return query<LogChange>(
    workspaceId,
    `SELECT id, workspace_id, segment_id, contact_id, change FROM segment_membership_log
      WHERE event_id = $2 AND workspace_id = $1 AND segment_id = ANY ($3::text[]) ORDER BY id`,
    [eventId, segmentIds],
  );
}

const PAGE = 5000;

/**
 * One pass of the background reader, by one replica at a time (an advisory
 * lock; the others skip): the changes in watched segments logged by
 * transactions between the cursor and the horizon (the oldest transaction
 * still running, before which no row can still appear), handed to `handle`
 * page by page; the cursor then moves to the horizon. The first pass starts
 * at the horizon: earlier changes are history. Answers the changes handled.
 */
export async function readSegmentLog(
  segmentIds: string[],
  handle: (changes: LogChange[]) => Promise<void>,
): Promise<number> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const ask = <T extends object>(sql: string, bind: unknown[]) =>
      queryAcrossWorkspaces<T>(sql, bind, transaction);
    const [{ locked }] = await ask<{ locked: boolean }>(
      `SELECT pg_try_advisory_xact_lock(hashtext('campaigns.segment_log')) AS locked`,
      [],
    );
    if (!locked) return 0;
    const [{ horizon }] = await ask<{ horizon: string }>(
      `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`,
      [],
    );
    await ask(
      `INSERT INTO campaign_cursors (name, position) VALUES ('segment_log', $1::xid8) ON CONFLICT DO NOTHING RETURNING name`,
      [horizon],
    );
    const [{ position }] = await ask<{ position: string }>(
      `SELECT position::text AS position FROM campaign_cursors WHERE name = 'segment_log'`,
      [],
    );
    let handled = 0;
    if (segmentIds.length) {
      for (let after = "0"; ;) {
        const changes = await ask<LogChange>(
          `SELECT id, workspace_id, segment_id, contact_id, change FROM segment_membership_log
            WHERE txid >= $1::xid8 AND txid < $2::xid8 AND segment_id = ANY ($3::text[]) AND id > $4
            ORDER BY id LIMIT ${PAGE}`,
          [position, horizon, segmentIds, after],
        );
        if (!changes.length) break;
        await handle(changes);
        handled += changes.length;
        after = changes[changes.length - 1].id;
      }
    }
    await ask(
      `UPDATE campaign_cursors SET position = GREATEST(position, $1::xid8), updated_at = now()
        WHERE name = 'segment_log' RETURNING name`,
      [horizon],
    );
    return handled;
  });
}
