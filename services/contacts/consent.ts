import { database } from "../../lib/database";
import { stageDomainEvents } from "../../lib/outbox";
import { found } from "../../lib/errors";
import { CONSENT_CHANNELS, type ConsentChannel } from "../../lib/channels";
import type { ConsentEntry } from "../../models";
import { contactView, getRow, type ContactView } from "./contacts.repo";
import { writeConsent } from "./consent.repo";
import { changedFields } from "./fields";
import { contactFacts, optOutFact } from "./effects";
import type { WorkspaceId } from "../../lib/tenancy";

/** Per-channel consent: the pure state change and its one UPDATE. */

export type ConsentTarget = ConsentChannel | "all";

/** The new stored consent and the opt-out facts to emit (one `all`, or the channel's). */
export function applyConsent(
  stored: Record<string, ConsentEntry>,
  channel: ConsentTarget,
  status: "opted_in" | "opted_out",
  source: string,
  now: Date,
): { consent: Record<string, ConsentEntry>; optOuts: string[] } {
  const entry: ConsentEntry = { status, source, updatedAt: now.toISOString() };
  const channels = channel === "all" ? CONSENT_CHANNELS : [channel];
  const consent = { ...stored };
  for (const c of channels) consent[c] = { ...entry };
  const optOuts = status === "opted_out" ? [channel] : [];
  return { consent, optOuts };
}

/** Set consent in one transaction, staging `contact.updated` and the opt-out facts with it. */
export async function setConsent(
  workspaceId: WorkspaceId,
  contactId: string,
  channel: ConsentTarget,
  status: "opted_in" | "opted_out",
  source: string,
): Promise<ContactView> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const row = found(await getRow(workspaceId, contactId, transaction, true), "Contact");
    const { consent, optOuts } = applyConsent(row.consent ?? {}, channel, status, source, new Date());
    const written = await writeConsent(workspaceId, contactId, consent, transaction);
    const contact = contactView(written);
    await stageDomainEvents(transaction, workspaceId, [
      ...contactFacts({ updated: [{ ...contact, changedFields: changedFields(row, written) }] }),
      ...optOuts.map((c) => optOutFact(contact, c, source)),
    ]);
    return contact;
  });
}
