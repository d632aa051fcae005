import { newId } from "../../lib/crypto";
import { Binds, query } from "../../lib/database";
import type { InboxChannel } from "../../lib/channels";
import type { CannedResponseView } from "./inbox.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on canned responses; each takes the workspace id first. */

export interface CannedRow {
  id: string;
  workspace_id: WorkspaceId;
  name: string;
  shortcode: string;
  body: string;
  channel: InboxChannel | null;
  created_at: Date;
  updated_at: Date;
}

export interface CannedInput {
  name?: string;
  shortcode?: string;
  body?: string;
  channel?: InboxChannel | null;
}

export const cannedView = (row: CannedRow): CannedResponseView => ({
  id: row.id,
  name: row.name,
  shortcode: row.shortcode,
  body: row.body,
  channel: row.channel,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export function listCanned(workspaceId: WorkspaceId): Promise<CannedRow[]> {
  return query<CannedRow>(
    workspaceId,
    `SELECT * FROM inbox_canned_responses WHERE workspace_id = $1 ORDER BY shortcode`,
  );
}

export async function findCanned(workspaceId: WorkspaceId, id: string): Promise<CannedRow | null> {
  const [row] = await query<CannedRow>(
    workspaceId,
    `SELECT * FROM inbox_canned_responses WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ?? null;
}

/** A taken shortcode raises the unique violation (the action's 409). */
export async function insertCanned(
  workspaceId: WorkspaceId,
  input: CannedInput & { name: string; shortcode: string; body: string },
): Promise<CannedRow> {
  const [row] = await query<CannedRow>(
    workspaceId,
    `INSERT INTO inbox_canned_responses (id, workspace_id, name, shortcode, body, channel)
     VALUES ($2, $1, $3, $4, $5, $6) RETURNING *`,
    [newId(), input.name, input.shortcode, input.body, input.channel ?? null],
  );
  return row;
}

export async function updateCanned(
  workspaceId: WorkspaceId,
  id: string,
  input: CannedInput,
): Promise<CannedRow | null> {
  const b = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  for (const key of ["name", "shortcode", "body", "channel"] as const)
    if (input[key] !== undefined) sets.push(`${key} = ${b.p(input[key])}`);
  const [row] = await query<CannedRow>(
    workspaceId,
    `UPDATE inbox_canned_responses SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    b.values,
  );
  return row ?? null;
}

export async function deleteCanned(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM inbox_canned_responses WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}
