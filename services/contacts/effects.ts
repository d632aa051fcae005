import type { ServiceBroker } from "moleculer";
import type { Fact } from "../../lib/outbox";
import { optionalStepRuns } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * What every contact write (API, import, ingest, merge, bulk, GDPR delete)
 * brings about: its spec 6.2 facts, which the write stages in its own
 * transaction (lib/outbox.ts), and once it committed, segments re-evaluated
 * (awaited, so a following read sees memberships).
 */

interface Named {
  id: string;
  email: string | null;
  firstName?: string | null;
  lastName?: string | null;
}

export interface ContactChanges {
  created?: Named[];
  /** With the fields each write changed (fields.ts changedFields). */
  updated?: Array<Named & { changedFields: string[] }>;
  deleted?: Array<{ id: string; email: string | null }>;
}

const EVALUATE_BATCH = 1000;

export async function evaluateSegments(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  contactIds: string[],
): Promise<void> {
  // Segments gone (an outage) fail the write's answer rather than leave memberships stale unseen.
  if (!contactIds.length || !optionalStepRuns(broker, "segments.evaluateContacts")) return;
  for (let i = 0; i < contactIds.length; i += EVALUATE_BATCH) {
    await systemCall(broker, workspaceId, "segments.evaluateContacts", {
      contactIds: contactIds.slice(i, i + EVALUATE_BATCH),
    });
  }
}

/** `contact.created`, `contact.updated` and `contact.deleted` facts, in that order. */
export function contactFacts(changes: ContactChanges): Fact[] {
  const named = (c: Named) => ({
    contactId: c.id,
    email: c.email,
    firstName: c.firstName ?? null,
    lastName: c.lastName ?? null,
  });
  return [
    ...(changes.created ?? []).map((c) => ({ type: "contact.created", data: named(c) })),
    ...(changes.updated ?? []).map((c) => ({
      type: "contact.updated",
      data: named(c),
      changedFields: c.changedFields,
    })),
    ...(changes.deleted ?? []).map((c) => ({
      type: "contact.deleted",
      data: { contactId: c.id, email: c.email },
    })),
  ];
}

/** An opt-out fact (spec 6.2 `unsubscribe.*`). */
export function optOutFact(
  contact: { id: string; email: string | null; externalId: string | null },
  channel: string,
  source: string,
): Fact {
  return {
    type: `unsubscribe.${channel}`,
    data: { contactId: contact.id, email: contact.email, externalId: contact.externalId, channel, source },
  };
}
