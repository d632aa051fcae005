import { database } from "../../lib/database";
import { found, notFound } from "../../lib/errors";
import { stageDomainEvents } from "../../lib/outbox";
import { contactView, getRow, lockContact, type ContactView } from "./contacts.repo";
import { contactFacts } from "./effects";
import { contactRowsElsewhere, conversationsOf, eraseContactEverywhere, type ContactRows } from "./gdpr.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Everything held about one contact, and its erasure. */

export type GdprExport = {
  contact: ContactView;
  consent: ContactView["consent"];
  /** Inbox threads, each with its messages. */
  conversations: Array<Record<string, unknown> & { messages: Array<Record<string, unknown>> }>;
} & ContactRows;

/** snake_case keys of a generic row → camelCase, as the API speaks. */
export function camelRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row))
    out[k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())] = v;
  return out;
}

export async function gdprExport(workspaceId: WorkspaceId, contactId: string): Promise<GdprExport> {
  const contact = contactView(found(await getRow(workspaceId, contactId), "Contact"));
  const [elsewhere, conversations] = await Promise.all([
    contactRowsElsewhere(contactId),
    conversationsOf(workspaceId, contactId),
  ]);
  const strip = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) => {
      const rest = { ...r };
      delete rest.workspace_id;
      return camelRow(rest);
    });
  const sections = Object.entries(elsewhere).map(([section, rows]) => [section, strip(rows)]);
  return {
    contact,
    consent: contact.consent,
    ...(Object.fromEntries(sections) as ContactRows),
    conversations: conversations.map(({ messages, ...thread }) => ({
      ...camelRow(thread),
      messages: messages.map(camelRow),
    })),
  };
}

/**
 * Erase the contact: its events, messages, form submissions and segment
 * membership log go, the contact row goes (notes, scores, stage history, memberships and
 * link tokens cascade; deals and tasks keep their business data without the
 * link). The do-not-contact list is kept: it is what stops further messages.
 * Its `contact.deleted` fact is staged in the same transaction.
 */
export async function gdprDelete(
  workspaceId: WorkspaceId,
  contactId: string,
): Promise<{ id: string; email: string | null }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const locked = await lockContact(workspaceId, contactId, transaction);
    if (!locked) throw notFound("Contact");
    await eraseContactEverywhere(workspaceId, contactId, transaction);
    await stageDomainEvents(transaction, workspaceId, contactFacts({ deleted: [locked] }));
    return locked;
  });
}
