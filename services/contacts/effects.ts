import type { ServiceBroker } from "moleculer";
import { SYSTEM } from "../../lib/access";
import { publishDomainEvent } from "../../lib/domain-events";
import { isServiceAvailable } from "../../lib/registry";

/**
 * What follows every contact write, whatever its origin (API, import, ingest,
 * merge, bulk, GDPR delete): segments re-evaluated (awaited, so a following
 * read sees memberships) and the spec 6.2 facts published.
 */

interface Named {
  id: string;
  email: string | null;
  firstName?: string | null;
  lastName?: string | null;
}

export interface ContactChanges {
  created?: Named[];
  updated?: Named[];
  deleted?: Array<{ id: string; email: string | null }>;
}

const EVALUATE_BATCH = 1000;

export async function evaluateSegments(
  broker: ServiceBroker,
  workspaceId: string,
  contactIds: string[],
): Promise<void> {
  if (!contactIds.length || !isServiceAvailable(broker, "segments")) return;
  for (let i = 0; i < contactIds.length; i += EVALUATE_BATCH) {
    await broker.call(
      "segments.evaluateContacts",
      { contactIds: contactIds.slice(i, i + EVALUATE_BATCH) },
      { meta: { principal: SYSTEM, workspaceId } },
    );
  }
}

export async function contactsChanged(
  broker: ServiceBroker,
  workspaceId: string,
  changes: ContactChanges,
): Promise<void> {
  const created = changes.created ?? [];
  const updated = changes.updated ?? [];
  await evaluateSegments(
    broker,
    workspaceId,
    [...created, ...updated].map((c) => c.id),
  );
  const named = (c: Named) => ({
    contactId: c.id,
    email: c.email,
    firstName: c.firstName ?? null,
    lastName: c.lastName ?? null,
  });
  for (const c of created) await publishDomainEvent(broker, workspaceId, "contact.created", named(c));
  for (const c of updated) await publishDomainEvent(broker, workspaceId, "contact.updated", named(c));
  for (const c of changes.deleted ?? []) {
    await publishDomainEvent(broker, workspaceId, "contact.deleted", { contactId: c.id, email: c.email });
  }
}

/** An opt-out fact (spec 6.2 `unsubscribe.*`). */
export async function publishOptOut(
  broker: ServiceBroker,
  workspaceId: string,
  contact: { id: string; email: string | null; externalId: string | null },
  channel: string,
  source: string,
): Promise<void> {
  await publishDomainEvent(broker, workspaceId, `unsubscribe.${channel}`, {
    contactId: contact.id,
    email: contact.email,
    externalId: contact.externalId,
    channel,
    source,
  });
}
