import { QueryTypes } from "sequelize";
import { newId, sha256Hex } from "../../lib/crypto";
import { database } from "../../lib/database";

/** One-time chat link tokens; only a token's SHA-256 is stored. */

export async function insertLinkToken(
  workspaceId: string,
  contactId: string,
  channel: string,
  token: string,
  expiresAt: Date,
): Promise<void> {
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO contact_link_tokens (id, workspace_id, contact_id, channel, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    { bind: [newId(), workspaceId, contactId, channel, sha256Hex(token), expiresAt] },
  );
}

/** The contact a token of the workspace binds, once: a used, expired, unknown or other workspace's token gives null. */
export async function redeemLinkToken(
  workspaceId: string,
  token: string,
  channel: string,
): Promise<string | null> {
  const sequelize = await database();
  const rows = await sequelize.query<{ contact_id: string }>(
    `UPDATE contact_link_tokens SET used_at = now()
      WHERE workspace_id = $1 AND token_hash = $2 AND channel = $3 AND used_at IS NULL AND expires_at > now()
      RETURNING contact_id`,
    { bind: [workspaceId, sha256Hex(token), channel], type: QueryTypes.SELECT },
  );
  return rows[0]?.contact_id ?? null;
}
