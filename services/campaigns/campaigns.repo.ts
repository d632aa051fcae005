import type { Transaction } from "sequelize";
import { Binds, database, likeEscape, query, queryAcrossWorkspaces } from "../../lib/database";
import { sqlProbe } from "../../lib/versioned-cache";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { QueueFigures } from "../../lib/business-metrics";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";
import type { CampaignDetail, CampaignStatus, CampaignView } from "./campaigns.schemas";
import type { Workflow } from "./workflow";
import { listTriggers } from "./triggers.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** The campaigns' own queries (the campaign rows); triggers, versions, enrollments, logs, A/B and broadcasts have their repos beside it. Workspace id first. */

interface CampaignRow {
  id: string;
  name: string;
  type: "workflow" | "broadcast";
  status: CampaignStatus;
  scheduled_at: Date | null;
  priority: number;
  workflow: Workflow;
  draft_changed: boolean;
  published_version: number | null;
  enrolled: string;
  active: string;
  completed: string;
  exited: string;
  created_at: Date;
  updated_at: Date;
}

const SELECT_CAMPAIGN = `
  SELECT c.*, s.*
    FROM campaigns c
    CROSS JOIN LATERAL (
      SELECT count(*) AS enrolled,
             count(*) FILTER (WHERE e.status IN ('active', 'waiting')) AS active,
             count(*) FILTER (WHERE e.status = 'completed') AS completed,
             count(*) FILTER (WHERE e.status IN ('exited', 'failed')) AS exited
        FROM campaign_enrollments e WHERE e.campaign_id = c.id) s`;

const campaignView = (r: CampaignRow): CampaignView => ({
  id: r.id,
  name: r.name,
  type: r.type,
  status: r.status,
  scheduledAt: r.scheduled_at,
  priority: r.priority,
  publishedVersion: r.published_version,
  stats: {
    enrolled: Number(r.enrolled),
    active: Number(r.active),
    completed: Number(r.completed),
    exited: Number(r.exited),
  },
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function listCampaigns(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { status?: string; type?: string; search?: string },
): Promise<Page<CampaignView>> {
  const binds = Binds.inWorkspace();
  const where = ["c.workspace_id = $1"];
  if (filter.status) where.push(`c.status = ${binds.p(filter.status)}`);
  if (filter.type) where.push(`c.type = ${binds.p(filter.type)}`);
  if (filter.search) where.push(`c.name ILIKE ${binds.p(`%${likeEscape(filter.search)}%`)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    {
      select: `${SELECT_CAMPAIGN} WHERE ${clause}`,
      orderBy: "c.created_at DESC, c.id DESC",
      countFrom: `FROM campaigns c WHERE ${clause}`,
    },
    binds.values,
    page,
    campaignView,
  );
}

export async function getCampaign(workspaceId: WorkspaceId, id: string): Promise<CampaignDetail | null> {
  const [row] = await query<CampaignRow>(
    workspaceId,
    `${SELECT_CAMPAIGN} WHERE c.workspace_id = $1 AND c.id = $2`,
    [id],
  );
  if (!row) return null;
  return {
    ...campaignView(row),
    workflow: row.workflow as CampaignDetail["workflow"],
    draftChanged: row.draft_changed,
    triggers: await listTriggers(workspaceId, id),
  };
}

export async function insertCampaign(
  workspaceId: WorkspaceId,
  c: { id: string; name: string; type: "workflow" | "broadcast"; workflow: Workflow; priority: number },
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO campaigns (id, workspace_id, name, type, workflow, priority) VALUES ($2, $1, $3, $4, $5::jsonb, $6)`,
    [c.id, c.name, c.type, JSON.stringify(c.workflow), c.priority],
  );
}

/** Set the given fields (a new workflow marks the draft changed); false when the campaign does not exist. */
export async function updateCampaign(
  workspaceId: WorkspaceId,
  id: string,
  fields: {
    name?: string;
    status?: CampaignStatus;
    scheduledAt?: string | null;
    priority?: number;
    workflow?: Workflow;
  },
  transaction?: Transaction,
): Promise<boolean> {
  const binds = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  if (fields.name !== undefined) sets.push(`name = ${binds.p(fields.name)}`);
  if (fields.status !== undefined) sets.push(`status = ${binds.p(fields.status)}`);
  if (fields.scheduledAt !== undefined)
    sets.push(`scheduled_at = ${binds.p(fields.scheduledAt)}::timestamptz`);
  if (fields.priority !== undefined) sets.push(`priority = ${binds.p(fields.priority)}`);
  if (fields.workflow !== undefined)
    sets.push(`workflow = ${binds.p(JSON.stringify(fields.workflow))}::jsonb`, "draft_changed = true");
  const rows = await query<{ id: string }>(
    workspaceId,
    `UPDATE campaigns SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    binds.values,
    transaction,
  );
  return rows.length > 0;
}

export async function deleteCampaign(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM campaigns WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/** A copy of a campaign's draft, triggers and priority as a new draft. */
export async function cloneCampaign(
  workspaceId: WorkspaceId,
  id: string,
  newCampaignId: string,
  name: string,
) {
  const sequelize = await database();
  await sequelize.transaction(async (transaction) => {
    await query(
      workspaceId,
      `INSERT INTO campaigns (id, workspace_id, name, type, workflow, priority)
       SELECT $3, workspace_id, $4, type, workflow, priority FROM campaigns WHERE workspace_id = $1 AND id = $2`,
      [id, newCampaignId, name],
      transaction,
    );
    await query(
      workspaceId,
      `INSERT INTO campaign_triggers (id, workspace_id, campaign_id, type, config, reentry, cooldown_hours, active)
       SELECT gen_random_uuid()::text, workspace_id, $3, type, config, reentry, cooldown_hours, active
         FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 ORDER BY created_at`,
      [id, newCampaignId],
      transaction,
    );
  });
}

/** Names of the campaigns, not archived, whose versions send `templateId`, and of broadcasts sending it now. */
export async function campaignsUsingTemplate(
  workspaceId: WorkspaceId,
  templateId: string,
): Promise<string[]> {
  const rows = await query<{ name: string }>(
    workspaceId,
    `SELECT c.name FROM campaigns c
      WHERE c.workspace_id = $1 AND c.status <> 'archived'
        AND (EXISTS (SELECT 1 FROM campaign_versions v WHERE v.campaign_id = c.id
                      AND v.workflow -> 'nodes' @> jsonb_build_array(jsonb_build_object('type', 'send',
                            'config', jsonb_build_object('templateId', $2::text))))
             OR (c.type = 'broadcast' AND c.status IN ('active', 'paused') AND c.broadcast ->> 'templateId' = $2))
      ORDER BY c.name`,
    [templateId],
  );
  return rows.map((r) => r.name);
}

/** Scheduled campaigns across workspaces as a queue (lib/queue-stats.ts): due once their time has come. */
export async function scheduledQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("scheduled_at <= now()", "scheduled_at")} FROM campaigns
      WHERE status = 'scheduled' AND published_version IS NOT NULL`,
    [],
  );
  return queueFigures("scheduled_campaigns", row);
}

/** Scheduled campaigns whose time has come become active; answers how many. */
export async function activateScheduled(): Promise<number> {
  const rows = await queryAcrossWorkspaces<{ id: string }>(
    `UPDATE campaigns SET status = 'active', updated_at = now()
      WHERE status = 'scheduled' AND scheduled_at <= now() AND published_version IS NOT NULL RETURNING id`,
    [],
  );
  return rows.length;
}

/**
 * The event types that goals and event waits of any version of the
 * workspace's active or paused campaigns name (an older version's too: its
 * enrollments may still be in it).
 */
export async function awaitedEventTypes(
  workspaceId: WorkspaceId,
): Promise<{ goals: string[]; waits: string[] }> {
  const [row] = await query<{ goals: string[] | null; waits: string[] | null }>(
    workspaceId,
    `SELECT array_agg(DISTINCT n -> 'config' ->> 'event') FILTER (WHERE n ->> 'type' = 'goal') AS goals,
            array_agg(DISTINCT n -> 'config' -> 'event' ->> 'type') FILTER (WHERE n ->> 'type' = 'wait' AND n -> 'config' ? 'event') AS waits
       FROM campaigns c JOIN campaign_versions v ON v.campaign_id = c.id
       CROSS JOIN LATERAL jsonb_array_elements(v.workflow -> 'nodes') n
      WHERE c.workspace_id = $1 AND c.status IN ('active', 'paused')`,
  );
  return { goals: row?.goals ?? [], waits: row?.waits ?? [] };
}

/** Whether the workspace has a campaign that is active or paused (the only ones with live enrollments). */
export async function hasLiveCampaigns(workspaceId: WorkspaceId): Promise<boolean> {
  const [row] = await query<{ live: boolean }>(
    workspaceId,
    `SELECT EXISTS (SELECT 1 FROM campaigns WHERE workspace_id = $1 AND status IN ('active', 'paused')) AS live`,
  );
  return row.live;
}

/** The version of a workspace's live campaigns and their triggers, for live-state.ts's cache. */
export const liveStateProbe = sqlProbe(
  "campaigns",
  `SELECT c.workspace_id,
            count(*) FILTER (WHERE c.status IN ('active', 'paused')) || '/' || max(c.updated_at)::text || '/' ||
            COALESCE((SELECT count(*) || '/' || max(t.updated_at)::text
                        FROM campaign_triggers t WHERE t.workspace_id = c.workspace_id), '') AS version
       FROM campaigns c WHERE c.workspace_id = ANY($1::text[]) GROUP BY c.workspace_id`,
);
