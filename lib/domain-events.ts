import type { ServiceBroker } from "moleculer";
import type { WorkspaceId } from "./tenancy";

/**
 * Domain facts (spec 6.2: `contact.created`, `unsubscribe.email`, ...) travel
 * on one durable channel (@moleculer/channels: JetStream with NATS, the
 * in-process adapter of lib/embedded-channel.ts embedded). Consumers
 * (webhooks fan-out, analytics) subscribe with their own group, so each gets
 * every fact once. A write stages its facts in its own transaction
 * (lib/outbox.ts) and the outbox relay sends them here.
 */
export const DOMAIN_EVENTS_CHANNEL = "cms.domain-events";

export interface DomainEvent<T = Record<string, unknown>> {
  /** Unique per fact; consumers use it to stay idempotent under redelivery. */
  id: string;
  workspaceId: WorkspaceId;
  /** The specification's event name, e.g. `contact.created`. */
  type: string;
  /** The payload fields of spec 6.2 for this type. */
  data: T;
  occurredAt: string;
  /**
   * `contact.updated` only: the contact fields its write changed (`firstName`,
   * `customFields.plan`, `consent.email`), for campaigns' `contact_updated`
   * triggers. Not part of the payload: webhooks send `data` alone.
   */
  changedFields?: string[];
}

/** Put one fact on the channel (the outbox relay's send). */
export async function sendDomainEvent(broker: ServiceBroker, event: DomainEvent): Promise<void> {
  await (
    broker as ServiceBroker & { sendToChannel(name: string, payload: unknown): Promise<void> }
  ).sendToChannel(DOMAIN_EVENTS_CHANNEL, event);
}
