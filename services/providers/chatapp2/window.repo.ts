import { query } from "../../../lib/database";
import type { WorkspaceId } from "../../../lib/tenancy";

/** The queries of chatapp2's customer service windows: when each phone last wrote. Workspace id first. */

/** A message from `phone` arrived at `at` (a late, older one leaves a newer time as it is). */
export async function noteInbound(workspaceId: WorkspaceId, phone: string, at: Date): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO chatapp2_windows (workspace_id, phone, last_inbound_at) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, phone)
       DO UPDATE SET last_inbound_at = greatest(chatapp2_windows.last_inbound_at, EXCLUDED.last_inbound_at)`,
    [phone, at],
  );
}

/** When `phone` last wrote to the workspace; null when it never did. */
export async function lastInbound(workspaceId: WorkspaceId, phone: string): Promise<Date | null> {
  const [row] = await query<{ last_inbound_at: Date }>(
    workspaceId,
    `SELECT last_inbound_at FROM chatapp2_windows WHERE workspace_id = $1 AND phone = $2`,
    [phone],
  );
  return row?.last_inbound_at ?? null;
}
