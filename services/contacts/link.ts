import type { ServiceBroker } from "moleculer";
import { randomBase62 } from "../../lib/crypto";
import { found, validationError } from "../../lib/errors";
import { updateContact } from "./contact-write";
import { contactsWithChat, getRow, type ContactView } from "./contacts.repo";
import { insertLinkToken, redeemLinkToken } from "./link.repo";
import { mergeContacts } from "./merge";
import type { WorkspaceId } from "../../lib/tenancy";

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
  workspaceId: WorkspaceId,
  contactId: string,
  channel: string,
  now = new Date(),
): Promise<{ token: string; expiresAt: string }> {
  found(await getRow(workspaceId, contactId), "Contact");
  const token = randomBase62(32);
  const expiresAt = new Date(now.getTime() + LINK_TTL_MS);
  await insertLinkToken(workspaceId, contactId, channel, token, expiresAt);
  return { token, expiresAt: expiresAt.toISOString() };
}

/** The chatapp1 deep link for a contact; 400 naming the setting when the workspace has no bot URL. */
export async function chatapp1Link(
  workspaceId: WorkspaceId,
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

const SYSTEM_ACTOR = { actorType: "system", actorId: null };

/**
 * The bot's `/start <token>`: the token's contact gets the chat
 * (`attributes.chatapp1ChatId`), once; null when the token is unknown, used,
 * expired or another workspace's. The chat leaves any other contact: one the
 * bot made for it before the link was used (known by nothing else) is the
 * same person and is merged into the linked one, history and all; another
 * keeps its own addresses and loses only the chat.
 */
export async function linkChat(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  token: string,
  chatId: string,
): Promise<ContactView | null> {
  const contactId = await redeemLinkToken(workspaceId, token, "chatapp1");
  if (!contactId) return null;
  const others = (await contactsWithChat(workspaceId, chatId)).filter((c) => c.id !== contactId);
  const chatOnly = others.filter((c) => !c.email && !c.phone && !c.external_id);
  if (chatOnly.length)
    await mergeContacts(
      workspaceId,
      contactId,
      chatOnly.map((c) => c.id),
    );
  for (const other of others.filter((c) => !chatOnly.includes(c)))
    await updateContact(
      broker,
      workspaceId,
      other.id,
      { attributes: { chatapp1ChatId: null } },
      SYSTEM_ACTOR,
    );
  const { after } = await updateContact(
    broker,
    workspaceId,
    contactId,
    { attributes: { chatapp1ChatId: chatId } },
    SYSTEM_ACTOR,
  );
  return after;
}
