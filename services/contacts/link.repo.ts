import { newId, sha256Hex } from "../../lib/crypto";
import { query } from "../../lib/database";
import type { WorkspaceId } from "../../lib/tenancy";

/** One-time chat link tokens; only a token's SHA-256 is stored. */

export async function insertLinkToken(
  workspaceId: WorkspaceId,
  contactId: string,
  channel: string,
  token: string,
  expiresAt: Date,
): Promise<void> {
  await query(
    workspaceId,
    `INSERT INTO contact_link_tokens (id, workspace_id, contact_id, channel, token_hash, expires_at) VALUES ($2, $1, $3, $4, $5, $6)`,
    [newId(), contactId, channel, sha256Hex(token), expiresAt],
  );
}

/** The contact a token of the workspace binds, once: a used, expired, unknown or other workspace's token gives null. */
export async function redeemLinkToken(
  workspaceId: WorkspaceId,
  token: string,
  channel: string,
): Promise<string | null> {
  const rows = await query<{ contact_id: string }>(
    workspaceId,
    `UPDATE contact_link_tokens SET used_at = now()
      WHERE workspace_id = $1 AND token_hash = $2 AND channel = $3 AND used_at IS NULL AND expires_at > now()
      RETURNING contact_id`,
    [sha256Hex(token), channel],
  );
  return rows[0]?.contact_id ?? null;
}
