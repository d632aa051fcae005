import { Binds, database, isoTimeSql, query, queryAcrossWorkspaces } from "../../lib/database";
import { compileFilter } from "../segments/filter-compiler";
import type { FilterGroup } from "../segments/filter-schema";
import { emptyWorkflow } from "./workflow";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The queries of broadcasts: the campaign row that stands for one, its
 * audience taken once (a segment's members or a filter's matches, read with
 * the segments area's compiled filter), and the figures of its result.
 */

export type Audience = { segmentId: string } | { contactIds: string[] } | { filter: FilterGroup };

/**
 * The contact ids of an audience as one SELECT (binds: `$1` is the
 * workspace): a segment's members, the listed contacts of the workspace, or
 * a filter's matches through the segments area's compiled filter.
 */
export function audienceSource(audience: Audience, binds: Binds): string {
  if ("segmentId" in audience)
    return `SELECT sm.contact_id FROM segment_members sm JOIN segments s ON s.id = sm.segment_id
             WHERE s.workspace_id = $1 AND s.id = ${binds.p(audience.segmentId)}`;
  if ("contactIds" in audience)
    return `SELECT c.id FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY (${binds.p(audience.contactIds)}::text[])`;
  return `SELECT c.id FROM contacts c WHERE c.workspace_id = $1
             AND ${compileFilter(audience.filter, binds, { mode: "set", workspaceParam: "$1" })}`;
}

export interface BroadcastSpec {
  channel: string;
  templateId: string;
  audience: Audience;
  sendAt: string | null;
  variables: Record<string, unknown> | null;
  topic: string | null;
  transactional: boolean;
  /** When the audience was taken; null until it is. */
  audienceTakenAt?: string | null;
}

export interface BroadcastRow {
  id: string;
  workspace_id: WorkspaceId;
  broadcast: BroadcastSpec;
}

/** A broadcast is a campaign of type `broadcast`, active while it sends. */
export async function insertBroadcast(
  workspaceId: WorkspaceId,
  id: string,
  name: string,
  spec: BroadcastSpec,
) {
  await query(
    workspaceId,
    `INSERT INTO campaigns (id, workspace_id, name, type, status, workflow, broadcast, draft_changed)
     VALUES ($2, $1, $3, 'broadcast', 'active', $4::jsonb, $5::jsonb, false)`,
    [id, name, JSON.stringify(emptyWorkflow()), JSON.stringify(spec)],
  );
}

export async function setJob(campaignId: string, jobId: string): Promise<void> {
  await queryAcrossWorkspaces(`UPDATE campaigns SET job_id = $2, updated_at = now() WHERE id = $1`, [
    campaignId,
    jobId,
  ]);
}

/**
 * Take the audience once (later calls find it taken), in one statement per
 * source; answers the number of recipients.
 */
export async function takeAudience(
  workspaceId: WorkspaceId,
  campaignId: string,
  spec: BroadcastSpec,
): Promise<number> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const [campaign] = await queryAcrossWorkspaces<{ broadcast: BroadcastSpec }>(
      `SELECT broadcast FROM campaigns WHERE id = $1 FOR UPDATE`,
      [campaignId],
      transaction,
    );
    if (!campaign.broadcast.audienceTakenAt) {
      const binds = Binds.inWorkspace([campaignId]);
      const source = audienceSource(spec.audience, binds);
      await query(
        workspaceId,
        `INSERT INTO broadcast_recipients (campaign_id, contact_id) SELECT $2, r.id FROM (${source}) AS r(id)
         ON CONFLICT DO NOTHING`,
        binds.values,
        transaction,
      );
      await queryAcrossWorkspaces(
        `UPDATE campaigns SET broadcast = broadcast || jsonb_build_object('audienceTakenAt', ${isoTimeSql("now()")}) WHERE id = $1`,
        [campaignId],
        transaction,
      );
    }
    const [{ n }] = await queryAcrossWorkspaces<{ n: string }>(
      `SELECT count(*) AS n FROM broadcast_recipients WHERE campaign_id = $1`,
      [campaignId],
      transaction,
    );
    return Number(n);
  });
}

/** The next recipients after `after`, in id order. */
export async function recipientsPage(campaignId: string, after: string, limit: number): Promise<string[]> {
  const rows = await queryAcrossWorkspaces<{ contact_id: string }>(
    `SELECT contact_id FROM broadcast_recipients WHERE campaign_id = $1 AND contact_id > $2 ORDER BY contact_id LIMIT $3`,
    [campaignId, after, limit],
  );
  return rows.map((r) => r.contact_id);
}

/** What the broadcast did: messages queued (or beyond), suppressed, and recipients without a message (no address, gone). */
export async function broadcastResult(campaignId: string) {
  const [row] = await queryAcrossWorkspaces<{ queued: string; suppressed: string; recipients: string }>(
    `SELECT count(*) FILTER (WHERE m.status <> 'suppressed') AS queued,
            count(*) FILTER (WHERE m.status = 'suppressed') AS suppressed,
            (SELECT count(*) FROM broadcast_recipients r WHERE r.campaign_id = $1) AS recipients
       FROM messages m WHERE m.campaign_id = $1`,
    [campaignId],
  );
  const queued = Number(row.queued);
  const suppressed = Number(row.suppressed);
  return { queued, suppressed, skipped: Math.max(0, Number(row.recipients) - queued - suppressed) };
}

/**
 * Active broadcasts whose job is not running (it failed when its process
 * stopped, or stopped at a pause since lifted) or that never got one (its
 * process stopped first), taken by this replica to send on: each is marked
 * so another replica leaves it for a minute.
 */
export async function claimStalledBroadcasts(): Promise<BroadcastRow[]> {
  return queryAcrossWorkspaces<BroadcastRow>(
    `UPDATE campaigns c SET job_id = NULL, updated_at = now()
      WHERE c.id IN (SELECT b.id FROM campaigns b LEFT JOIN jobs j ON j.id = b.job_id
                      WHERE b.type = 'broadcast' AND b.status = 'active'
                        AND ((b.job_id IS NULL AND b.updated_at < now() - interval '1 minute') OR j.status IN ('failed', 'completed'))
                      FOR UPDATE OF b SKIP LOCKED)
      RETURNING c.id, c.workspace_id, c.broadcast`,
    [],
  );
}

/** Whether the broadcast should go on sending (not paused, completed or gone). */
export async function stillActive(campaignId: string): Promise<boolean> {
  const [row] = await queryAcrossWorkspaces<{ status: string }>(
    `SELECT status FROM campaigns WHERE id = $1`,
    [campaignId],
  );
  return row?.status === "active";
}

export async function finishBroadcast(campaignId: string, status: "completed" | "paused"): Promise<void> {
  await queryAcrossWorkspaces(`UPDATE campaigns SET status = $2, updated_at = now() WHERE id = $1`, [
    campaignId,
    status,
  ]);
}
