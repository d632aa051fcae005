import { QueryTypes } from "sequelize";
import { database } from "../../lib/database";
import { found } from "../../lib/errors";
import { stageDomainEvents, type Fact } from "../../lib/outbox";
import type { ConsentEntry } from "../../models";
import { CONSENT_CHANNELS, contactView, getRow, type ContactRow, type ContactView } from "./contacts.repo";
import { changedFields } from "./fields";
import { contactFacts, optOutFact } from "./effects";
import { normalizeEmail, normalizePhone } from "./normalize";

/** What the send path asks of contacts: profiles in bulk, a contact by address, do-not-contact reasons, and preference changes. */

export async function contactsByIds(workspaceId: string, ids: string[]): Promise<ContactView[]> {
  if (!ids.length) return [];
  const sequelize = await database();
  const rows = await sequelize.query<ContactRow>(
    `SELECT * FROM contacts WHERE workspace_id = $1 AND id = ANY ($2::text[])`,
    { bind: [workspaceId, ids], type: QueryTypes.SELECT },
  );
  return rows.map(contactView);
}

/** The contact an address belongs to (email or phone, normalised), or null. */
export async function contactByAddress(
  workspaceId: string,
  channel: "email" | "phone",
  address: string,
): Promise<ContactView | null> {
  const value = channel === "email" ? normalizeEmail(address) : normalizePhone(address);
  if (!value) return null;
  const sequelize = await database();
  const [row] = await sequelize.query<ContactRow>(
    `SELECT * FROM contacts WHERE workspace_id = $1 AND ${channel === "email" ? "email" : "phone"} = $2 ORDER BY created_at LIMIT 1`,
    { bind: [workspaceId, value], type: QueryTypes.SELECT },
  );
  return row ? contactView(row) : null;
}

/** Do-not-contact reasons of the given addresses (normalised value → reason, `bounce` for a hard bounce). */
export async function dncReasons(
  workspaceId: string,
  addresses: Array<{ type: "email" | "phone"; value: string }>,
): Promise<Array<{ type: "email" | "phone"; value: string; reason: string | null }>> {
  const values = addresses
    .map((a) => ({
      type: a.type,
      value: a.type === "email" ? normalizeEmail(a.value) : normalizePhone(a.value),
    }))
    .filter((a): a is { type: "email" | "phone"; value: string } => a.value !== null);
  if (!values.length) return [];
  const sequelize = await database();
  return sequelize.query<{ type: "email" | "phone"; value: string; reason: string | null }>(
    `SELECT d.type, d.value, d.reason FROM dnc_entries d JOIN unnest($2::text[], $3::text[]) AS v(type, value)
        ON d.type = v.type AND d.value = v.value
      WHERE d.workspace_id = $1`,
    { bind: [workspaceId, values.map((v) => v.type), values.map((v) => v.value)], type: QueryTypes.SELECT },
  );
}

export interface PreferenceChanges {
  channels?: Partial<Record<string, "opted_in" | "opted_out">>;
  topics?: Record<string, boolean>;
  /** `all`: every channel opted out, one `unsubscribe.all`. */
  all?: "opted_out";
  source: string;
  /** The message whose link made the change (`unsubscribe.*` carries it for link, one_click, complaint). */
  messageId?: string | null;
}

/**
 * Apply a contact's own choices (unsubscribe link, preference centre, double
 * opt-in) in one transaction: only real changes are written and only they
 * emit `unsubscribe.<channel>` (an opt-out clicked twice emits once).
 */
export async function applyPreferences(
  workspaceId: string,
  contactId: string,
  changes: PreferenceChanges,
): Promise<{ contact: ContactView; optedOut: string[] }> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const row = found(await getRow(workspaceId, contactId, transaction, true), "Contact");
    const consent: Record<string, ConsentEntry> = { ...(row.consent ?? {}) };
    const now = new Date().toISOString();
    const optedOut: string[] = [];
    const wanted: Array<[string, "opted_in" | "opted_out"]> = changes.all
      ? CONSENT_CHANNELS.map((c) => [c, "opted_out"])
      : (Object.entries(changes.channels ?? {}) as Array<[string, "opted_in" | "opted_out"]>);
    for (const [channel, status] of wanted) {
      if (consent[channel]?.status === status) continue;
      consent[channel] = {
        status,
        source: changes.source,
        updatedAt: now,
        ...(changes.messageId ? { messageId: changes.messageId } : {}),
      };
      if (status === "opted_out") optedOut.push(channel);
    }
    const attributes = { ...(row.attributes ?? {}) } as Record<string, unknown>;
    const topics = { ...((attributes.topics as Record<string, boolean> | undefined) ?? {}) };
    let topicsChanged = false;
    for (const [key, subscribed] of Object.entries(changes.topics ?? {})) {
      if (topics[key] === subscribed) continue;
      topics[key] = subscribed;
      topicsChanged = true;
    }
    if (topicsChanged) attributes.topics = topics;
    if (!optedOut.length && !topicsChanged && wanted.every(([c, s]) => row.consent?.[c]?.status === s))
      return { contact: contactView(row), optedOut };
    const [updated] = await sequelize.query<ContactRow>(
      `UPDATE contacts SET consent = $3::jsonb, attributes = $4::jsonb, updated_at = now()
        WHERE workspace_id = $1 AND id = $2 RETURNING *`,
      {
        bind: [workspaceId, contactId, JSON.stringify(consent), JSON.stringify(attributes)],
        type: QueryTypes.SELECT,
        transaction,
      },
    );
    const contact = contactView(updated);
    const withMessage = (fact: Fact): Fact =>
      changes.messageId ? { ...fact, data: { ...fact.data, messageId: changes.messageId } } : fact;
    const optOuts = changes.all && optedOut.length ? ["all"] : optedOut;
    await stageDomainEvents(transaction, workspaceId, [
      ...contactFacts({ updated: [{ ...contact, changedFields: changedFields(row, updated) }] }),
      ...optOuts.map((c) => withMessage(optOutFact(contact, c, changes.source))),
    ]);
    return { contact, optedOut: optOuts };
  });
}
