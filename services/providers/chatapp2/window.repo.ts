import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";

/** The queries of chatapp2's customer service windows: when each phone last wrote. Workspace id first. */

/** A message from `phone` arrived at `at` (a late, older one leaves a newer time as it is). */
export async function noteInbound(workspaceId: string, phone: string, at: Date): Promise<void> {
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO chatapp2_windows (workspace_id, phone, last_inbound_at) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, phone)
       DO UPDATE SET last_inbound_at = greatest(chatapp2_windows.last_inbound_at, EXCLUDED.last_inbound_at)`,
    { bind: [workspaceId, phone, at] },
  );
}

/** When `phone` last wrote to the workspace; null when it never did. */
export async function lastInbound(workspaceId: string, phone: string): Promise<Date | null> {
  const sequelize = await database();
  const [row] = await sequelize.query<{ last_inbound_at: Date }>(
    `SELECT last_inbound_at FROM chatapp2_windows WHERE workspace_id = $1 AND phone = $2`,
    { bind: [workspaceId, phone], type: QueryTypes.SELECT },
  );
  return row?.last_inbound_at ?? null;
}
