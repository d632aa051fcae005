import { query, queryAcrossWorkspaces } from "../../lib/database";
import type { ProviderEvent } from "../providers/callbacks";
import { historyAppend, type MessageRow } from "./messages.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** The queries of provider callbacks: finding their message, applying each once, keeping early ones. */

type StatusEvent = Exclude<ProviderEvent, { kind: "inbound" }>;

/** The message a callback names: by our id when the provider carried it back, else by the provider's id. */
export async function findMessage(
  workspaceId: WorkspaceId,
  providerId: string,
  event: StatusEvent,
): Promise<MessageRow | null> {
  if (!event.messageId && !event.providerMessageId) return null;
  const [row] = await query<MessageRow>(
    workspaceId,
    event.messageId
      ? `SELECT * FROM messages WHERE id = $2 AND workspace_id = $1`
      : `SELECT * FROM messages WHERE provider_message_id = $3 AND provider_id = $2 AND workspace_id = $1 LIMIT 1`,
    event.messageId ? [event.messageId] : [providerId, event.providerMessageId],
  );
  return row ?? null;
}

/**
 * A provider's report on a message: `status` when the contract's order
 * allows the move (else null: history only), the report in the history
 * either way. Answers the message as it is now.
 */
export async function recordReport(
  row: MessageRow,
  report: { status: string; moveTo: string | null; reason: string | null; error: string | null },
): Promise<MessageRow> {
  const [updated] = await query<MessageRow>(
    row.workspace_id,
    `UPDATE messages SET updated_at = now(), history = ${historyAppend("$3::text", "$4::text")},
            status = coalesce($5::text, status),
            reason = CASE WHEN $5::text IS NULL THEN reason ELSE coalesce($4::text, reason) END,
            error = CASE WHEN $5::text IS NULL THEN error ELSE coalesce($6::text, error) END,
            delivered_at = CASE WHEN $5::text = 'delivered' THEN coalesce(delivered_at, now()) ELSE delivered_at END
      WHERE id = $2 AND workspace_id = $1 RETURNING *`,
    [row.id, report.status, report.reason, report.moveTo, report.error],
  );
  return updated;
}

/** A callback for a send not recorded yet (the provider answered the callback before our batch committed). */
export async function keepPending(
  workspaceId: WorkspaceId,
  providerId: string,
  event: StatusEvent,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO provider_callbacks_pending (workspace_id, provider_id, message_id, provider_message_id, event)
     VALUES ($1, $2, $3, $4, $5::jsonb)`,
    [providerId, event.messageId, event.providerMessageId, JSON.stringify(event)],
  );
}

/** The kept callbacks of these just-recorded sends, taken (deleted) so each applies once. */
export async function takePending(
  sends: Array<{ id: string; providerId: string | null; providerMessageId: string }>,
): Promise<Array<{ workspace_id: WorkspaceId; provider_id: string; event: StatusEvent }>> {
  const named = sends.filter((s) => s.providerId);
  if (!named.length) return [];
  return queryAcrossWorkspaces(
    `DELETE FROM provider_callbacks_pending p USING unnest($1::text[], $2::text[], $3::text[]) AS s(id, provider_id, provider_message_id)
      WHERE p.message_id = s.id OR (p.provider_id = s.provider_id AND p.provider_message_id = s.provider_message_id)
      RETURNING p.workspace_id, p.provider_id, p.event`,
    [named.map((s) => s.id), named.map((s) => s.providerId), named.map((s) => s.providerMessageId)],
  );
}

/** Kept callbacks no send claimed in `days` (sends of another system, or lost): dropped. Answers how many. */
export async function dropStalePending(days: number): Promise<number> {
  const rows = await queryAcrossWorkspaces(
    `DELETE FROM provider_callbacks_pending WHERE created_at < now() - $1 * interval '1 day' RETURNING 1`,
    [days],
  );
  return rows.length;
}
