import { QueryTypes } from "sequelize";
import { newId, randomBase62, sha256Hex } from "../../lib/crypto";
import { database } from "../../lib/database";
import { found, validationError } from "../../lib/errors";
import { getRow } from "./contacts.repo";

/**
 * One-time tokens binding a contact to a chat bot (chatapp1 deep links). The
 * token goes into the link; only its SHA-256 is stored. Redeeming it (the
 * bot's inbound handler) works once, before it expires.
 */

export const LINK_TTL_MS = 24 * 60 * 60 * 1000;

/** Pure: the bot URL with the token as its `start` parameter. */
export function deepLink(botUrl: string, token: string): string {
  const url = new URL(botUrl);
  url.searchParams.set("start", token);
  return url.toString();
}

export async function issueLinkToken(
  workspaceId: string,
  contactId: string,
  channel: string,
  now = new Date(),
): Promise<{ token: string; expiresAt: string }> {
  found(await getRow(workspaceId, contactId), "Contact");
  const token = randomBase62(32);
  const expiresAt = new Date(now.getTime() + LINK_TTL_MS);
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO contact_link_tokens (id, workspace_id, contact_id, channel, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    { bind: [newId(), workspaceId, contactId, channel, sha256Hex(token), expiresAt] },
  );
  return { token, expiresAt: expiresAt.toISOString() };
}

/** The contact a token binds, once: a used, expired or unknown token gives null. */
export async function redeemLinkToken(
  token: string,
  channel: string,
): Promise<{ workspaceId: string; contactId: string } | null> {
  const sequelize = await database();
  const rows = await sequelize.query<{ workspace_id: string; contact_id: string }>(
    `UPDATE contact_link_tokens SET used_at = now()
      WHERE token_hash = $1 AND channel = $2 AND used_at IS NULL AND expires_at > now()
      RETURNING workspace_id, contact_id`,
    { bind: [sha256Hex(token), channel], type: QueryTypes.SELECT },
  );
  return rows[0] ? { workspaceId: rows[0].workspace_id, contactId: rows[0].contact_id } : null;
}

/** The chatapp1 deep link for a contact; 400 naming the setting when the workspace has no bot URL. */
export async function chatapp1Link(
  workspaceId: string,
  contactId: string,
  settings: { chatapp1?: { botUrl?: unknown } } | undefined,
): Promise<{ url: string; token: string; expiresAt: string }> {
  const botUrl = settings?.chatapp1?.botUrl;
  if (typeof botUrl !== "string" || !/^https?:\/\//.test(botUrl)) {
    throw validationError("The chatapp1 bot is not configured: set the workspace setting chatapp1.botUrl", [
      { field: "settings.chatapp1.botUrl", message: "must be the bot's http(s) URL" },
    ]);
  }
  const { token, expiresAt } = await issueLinkToken(workspaceId, contactId, "chatapp1");
  return { url: deepLink(botUrl, token), token, expiresAt };
}
