import { query, queryAcrossWorkspaces } from "../../lib/database";
import type { TriggerType, TriggerView } from "./campaigns.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of a campaign's triggers (`campaign_triggers`). Workspace id first. */

interface TriggerRow {
  id: string;
  campaign_id: string;
  type: TriggerType;
  config: Record<string, unknown>;
  reentry: "once" | "always" | "cooldown";
  cooldown_hours: number | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const triggerView = (r: TriggerRow): TriggerView => ({
  id: r.id,
  type: r.type,
  config: r.config,
  reentry: r.reentry,
  cooldownHours: r.cooldown_hours,
  active: r.active,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function listTriggers(workspaceId: WorkspaceId, campaignId: string): Promise<TriggerView[]> {
  const rows = await query<TriggerRow>(
    workspaceId,
    `SELECT * FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 ORDER BY created_at, id`,
    [campaignId],
  );
  return rows.map(triggerView);
}

export async function getTrigger(
  workspaceId: WorkspaceId,
  campaignId: string,
  id: string,
): Promise<TriggerView | null> {
  const [row] = await query<TriggerRow>(
    workspaceId,
    `SELECT * FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3`,
    [campaignId, id],
  );
  return row ? triggerView(row) : null;
}

export interface TriggerFields {
  type: TriggerType;
  config: Record<string, unknown>;
  reentry: "once" | "always" | "cooldown";
  cooldownHours: number | null;
  active: boolean;
}

export async function insertTrigger(
  workspaceId: WorkspaceId,
  campaignId: string,
  id: string,
  t: TriggerFields,
) {
  await query(
    workspaceId,
    `INSERT INTO campaign_triggers (id, workspace_id, campaign_id, type, config, reentry, cooldown_hours, active)
     VALUES ($2, $1, $3, $4, $5::jsonb, $6, $7, $8)`,
    [id, campaignId, t.type, JSON.stringify(t.config), t.reentry, t.cooldownHours, t.active],
  );
}

export async function updateTrigger(
  workspaceId: WorkspaceId,
  campaignId: string,
  id: string,
  t: TriggerFields,
) {
  await query(
    workspaceId,
    `UPDATE campaign_triggers SET config = $4::jsonb, reentry = $5, cooldown_hours = $6, active = $7, updated_at = now()
      WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3`,
    [campaignId, id, JSON.stringify(t.config), t.reentry, t.cooldownHours, t.active],
  );
}

export async function deleteTrigger(
  workspaceId: WorkspaceId,
  campaignId: string,
  id: string,
): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM campaign_triggers WHERE workspace_id = $1 AND campaign_id = $2 AND id = $3 RETURNING id`,
    [campaignId, id],
  );
  return rows.length > 0;
}

/** Active triggers of `types` on active campaigns with a published version (of one workspace, or of all). */
export async function liveTriggers(workspaceId: WorkspaceId | null, types: TriggerType[]) {
  type LiveTrigger = TriggerRow & { workspace_id: WorkspaceId; published_version: number };
  const statement = (scope: string, typesParam: string) =>
    `SELECT t.*, c.published_version FROM campaign_triggers t JOIN campaigns c ON c.id = t.campaign_id
      WHERE ${scope} t.type = ANY (${typesParam}::text[]) AND t.active
        AND c.status = 'active' AND c.published_version IS NOT NULL`;
  return workspaceId
    ? query<LiveTrigger>(workspaceId, statement("t.workspace_id = $1 AND", "$2"), [types])
    : queryAcrossWorkspaces<LiveTrigger>(statement("", "$1"), [types]);
}
