import { newId } from "../../lib/crypto";
import { Binds, selectRows } from "../../lib/database";
import type { InboxChannel } from "../../lib/channels";
import type { CannedResponseView } from "./inbox.schemas";

/** Every query on canned responses; each takes the workspace id first. */

export interface CannedRow {
  id: string;
  workspace_id: string;
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

export function listCanned(workspaceId: string): Promise<CannedRow[]> {
  return selectRows<CannedRow>(
    `SELECT * FROM inbox_canned_responses WHERE workspace_id = $1 ORDER BY shortcode`,
    [workspaceId],
  );
}

export async function findCanned(workspaceId: string, id: string): Promise<CannedRow | null> {
  const [row] = await selectRows<CannedRow>(
    `SELECT * FROM inbox_canned_responses WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return row ?? null;
}

/** A taken shortcode raises the unique violation (the action's 409). */
export async function insertCanned(
  workspaceId: string,
  input: CannedInput & { name: string; shortcode: string; body: string },
): Promise<CannedRow> {
  const [row] = await selectRows<CannedRow>(
    `INSERT INTO inbox_canned_responses (id, workspace_id, name, shortcode, body, channel)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [newId(), workspaceId, input.name, input.shortcode, input.body, input.channel ?? null],
  );
  return row;
}

export async function updateCanned(
  workspaceId: string,
  id: string,
  input: CannedInput,
): Promise<CannedRow | null> {
  const b = new Binds([workspaceId, id]);
  const sets = ["updated_at = now()"];
  for (const key of ["name", "shortcode", "body", "channel"] as const)
    if (input[key] !== undefined) sets.push(`${key} = ${b.p(input[key])}`);
  const [row] = await selectRows<CannedRow>(
    `UPDATE inbox_canned_responses SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    b.values,
  );
  return row ?? null;
}

export async function deleteCanned(workspaceId: string, id: string): Promise<boolean> {
  const rows = await selectRows<{ id: string }>(
    `DELETE FROM inbox_canned_responses WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [workspaceId, id],
  );
  return rows.length > 0;
}
