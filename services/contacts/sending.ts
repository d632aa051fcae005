import { database } from "../../lib/database";
import { found } from "../../lib/errors";
import { stageDomainEvents, type Fact } from "../../lib/outbox";
import { CONSENT_CHANNELS } from "../../lib/channels";
import type { ConsentEntry } from "../../models";
import { contactView, getRow, type ContactView } from "./contacts.repo";
import { changedFields } from "./fields";
import { writePreferences } from "./consent.repo";
import { contactFacts, optOutFact } from "./effects";
import type { WorkspaceId } from "../../lib/tenancy";

/** A contact's own consent and topic choices, as the send path's links and pages make them. */

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
  workspaceId: WorkspaceId,
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
    const updated = await writePreferences(workspaceId, contactId, consent, attributes, transaction);
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
