import { query } from "../../lib/database";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Realtime (contract-messaging 12): the last 30 minutes read from the raw
 * events (the one answer allowed to), by the events' timestamp index.
 */

export interface RecentEvent {
  id: string;
  type: string;
  contactId: string | null;
  occurredAt: string;
}

/** Events per minute since `since` (minute starts in UTC) and the distinct visitors (contact, else session). */
export async function minuteCounts(
  workspaceId: WorkspaceId,
  since: Date,
  until: Date,
): Promise<{ perMinute: Map<number, number>; visitors: number }> {
  const rows = await query<{ minute: Date | null; n: string; visitors: string }>(
    workspaceId,
    `SELECT date_trunc('minute', timestamp) AS minute, count(*) AS n,
            count(DISTINCT coalesce('c:' || contact_id, 's:' || session_id)) AS visitors
       FROM events
      WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3
      GROUP BY ROLLUP (1)`,
    [since, until],
  );
  const perMinute = new Map<number, number>();
  let visitors = 0;
  for (const row of rows) {
    if (row.minute === null) visitors = Number(row.visitors);
    else perMinute.set(new Date(row.minute).getTime(), Number(row.n));
  }
  return { perMinute, visitors };
}

/** The newest events since `since`, newest first. */
export async function recentEvents(
  workspaceId: WorkspaceId,
  since: Date,
  until: Date,
  limit: number,
): Promise<RecentEvent[]> {
  const rows = await query<{ id: string; type: string; contact_id: string | null; timestamp: Date }>(
    workspaceId,
    `SELECT id, type, contact_id, timestamp FROM events
      WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3
      ORDER BY timestamp DESC, id DESC LIMIT $4`,
    [since, until, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    contactId: row.contact_id,
    occurredAt: new Date(row.timestamp).toISOString(),
  }));
}
