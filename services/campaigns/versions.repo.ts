import { newId } from "../../lib/crypto";
import { database, query, queryAcrossWorkspaces } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import type { CampaignStatus, VersionView } from "./campaigns.schemas";
import type { Workflow } from "./workflow";
import { updateCampaign } from "./campaigns.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of a campaign's published versions (`campaign_versions`). Workspace id first. */

interface VersionRow {
  id: string;
  number: number;
  workflow: Workflow;
  triggers: Array<Record<string, unknown>>;
  note: string | null;
  published_at: Date;
}

const versionView = (r: VersionRow): VersionView => ({
  id: r.id,
  number: r.number,
  workflow: r.workflow as VersionView["workflow"],
  triggers: r.triggers,
  note: r.note,
  publishedAt: r.published_at,
});

/**
 * Freeze the draft and the triggers as the next version, in one
 * transaction with the campaign's move to it (and to `status`, if given).
 */
export async function publishVersion(
  workspaceId: WorkspaceId,
  campaignId: string,
  note: string | null,
  status?: CampaignStatus,
): Promise<VersionView> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const [row] = await query<VersionRow>(
      workspaceId,
      `WITH c AS (SELECT id, workflow FROM campaigns WHERE workspace_id = $1 AND id = $2 FOR UPDATE)
       INSERT INTO campaign_versions (id, workspace_id, campaign_id, number, workflow, triggers, note)
       SELECT $3, $1, c.id,
              COALESCE((SELECT max(number) FROM campaign_versions v WHERE v.campaign_id = c.id), 0) + 1,
              c.workflow,
              COALESCE((SELECT jsonb_agg(jsonb_build_object('id', t.id, 'type', t.type, 'config', t.config,
                          'reentry', t.reentry, 'cooldownHours', t.cooldown_hours, 'active', t.active) ORDER BY t.created_at)
                          FROM campaign_triggers t WHERE t.campaign_id = c.id), '[]'::jsonb),
              $4
         FROM c
       RETURNING *`,
      [campaignId, newId(), note],
      transaction,
    );
    await query(
      workspaceId,
      `UPDATE campaigns SET published_version = $3, draft_changed = false, status = COALESCE($4, status), updated_at = now()
        WHERE workspace_id = $1 AND id = $2`,
      [campaignId, row.number, status ?? null],
      transaction,
    );
    return versionView(row);
  });
}

export async function listVersions(
  workspaceId: WorkspaceId,
  campaignId: string,
  page: PageRequest,
): Promise<Page<VersionView>> {
  return selectPage(
    workspaceId,
    {
      select: "SELECT * FROM campaign_versions WHERE workspace_id = $1 AND campaign_id = $2",
      orderBy: "number DESC",
    },
    [campaignId],
    page,
    versionView,
  );
}

export async function getVersion(
  workspaceId: WorkspaceId,
  campaignId: string,
  id: string,
): Promise<VersionView | null> {
  const [row] = await query<VersionRow>(
    workspaceId,
    `SELECT * FROM campaign_versions WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3`,
    [campaignId, id],
  );
  return row ? versionView(row) : null;
}

/** A version's workflow; versions never change, so callers may keep it. */
export async function versionWorkflow(campaignId: string, number: number): Promise<Workflow | null> {
  const [row] = await queryAcrossWorkspaces<{ workflow: Workflow }>(
    `SELECT workflow FROM campaign_versions WHERE campaign_id = $1 AND number = $2`,
    [campaignId, number],
  );
  return row?.workflow ?? null;
}

/** Copy a version's workflow and triggers into the draft (the draft then differs from the newest version). */
export async function restoreVersion(
  workspaceId: WorkspaceId,
  campaignId: string,
  version: VersionView,
): Promise<void> {
  const sequelize = await database();
  await sequelize.transaction(async (transaction) => {
    await updateCampaign(workspaceId, campaignId, { workflow: version.workflow as Workflow }, transaction);
    await query(
      workspaceId,
      `DELETE FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2`,
      [campaignId],
      transaction,
    );
    await query(
      workspaceId,
      `INSERT INTO campaign_triggers (id, workspace_id, campaign_id, type, config, reentry, cooldown_hours, active)
       SELECT t.id, $1, $2, t.type, t.config, t.reentry, t."cooldownHours", t.active
         FROM jsonb_to_recordset($3::jsonb) AS t(id text, type text, config jsonb, reentry text, "cooldownHours" integer, active boolean)`,
      [campaignId, JSON.stringify(version.triggers)],
      transaction,
    );
  });
}
