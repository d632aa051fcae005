import { newId } from "../../lib/crypto";
import { query, queryAcrossWorkspaces } from "../../lib/database";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of inbound webhooks: the replay window (`webhook_inbound_replays`) and the inbound delivery record. */

/**
 * Replay window: a signed body already seen by this endpoint within the
 * window is refused. One statement: a fresh digest inserts, an old one is
 * renewed, a recent one returns nothing.
 */
export async function acceptOnce(
  endpointId: string,
  digest: string,
  windowSeconds: number,
): Promise<boolean> {
  const rows = await queryAcrossWorkspaces<{ digest: string }>(
    `INSERT INTO webhook_inbound_replays (endpoint_id, digest) VALUES ($1, $2)
     ON CONFLICT (endpoint_id, digest) DO UPDATE SET received_at = now()
       WHERE webhook_inbound_replays.received_at < now() - make_interval(secs => $3)
     RETURNING digest`,
    [endpointId, digest, windowSeconds],
  );
  return rows.length === 1;
}

export async function forgetReplay(endpointId: string, digest: string): Promise<void> {
  await queryAcrossWorkspaces(
    `DELETE FROM webhook_inbound_replays WHERE endpoint_id = $1 AND digest = $2 RETURNING digest`,
    [endpointId, digest],
  );
}

export async function pruneReplays(windowSeconds: number): Promise<number> {
  const rows = await queryAcrossWorkspaces(
    `DELETE FROM webhook_inbound_replays WHERE received_at < now() - make_interval(secs => $1) RETURNING digest`,
    [windowSeconds],
  );
  return rows.length;
}

export async function insertInboundDelivery(
  workspaceId: WorkspaceId,
  endpointId: string,
  event: string,
  payload: Record<string, unknown>,
  sourceEventId: string,
): Promise<string> {
  const id = newId();
  await query(
    workspaceId,
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, source_event_id, body,
                                     attempt, success, status_code, delivered_at)
     VALUES ($2, $1, $3, $4, 'INBOUND', $5, $6, 1, true, 200, now())
     RETURNING id`,
    [id, endpointId, event, sourceEventId, JSON.stringify(payload)],
  );
  return id;
}
