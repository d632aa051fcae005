import pLimit from "p-limit";
import type { ServiceBroker } from "moleculer";
import type { WorkspaceId } from "./tenancy";

/**
 * Domain facts (spec 6.2: `contact.created`, `unsubscribe.email`, ...) travel
 * on one durable channel (@moleculer/channels: JetStream with NATS, the
 * in-process adapter of lib/embedded-channel.ts embedded). Consumers
 * (webhooks fan-out, campaigns' contact triggers) subscribe with their own
 * group, so each gets every fact once. A write stages its facts in its own
 * transaction (lib/outbox.ts) and the outbox relay sends them here, a relay
 * pass's facts as envelopes: one channel message (one publish, one ack) for
 * many facts instead of one each.
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

/** One channel message: facts in staging order. A redelivered envelope redelivers every fact of it. */
export interface DomainEnvelope {
  facts: DomainEvent[];
}

/** An envelope's serialized size at most (JetStream takes 1 MB a message by default). */
export const ENVELOPE_MAX_BYTES = 256 * 1024;

/** The facts of a channel message: an envelope, or a lone fact as messages were before envelopes. */
export function factsOf(payload: DomainEnvelope | DomainEvent): DomainEvent[] {
  return Array.isArray((payload as DomainEnvelope).facts)
    ? (payload as DomainEnvelope).facts
    : [payload as DomainEvent];
}

/** Put facts on the channel as one message (the outbox relay's send). */
export async function sendDomainEnvelope(broker: ServiceBroker, facts: DomainEvent[]): Promise<void> {
  const envelope: DomainEnvelope = { facts };
  await (
    broker as ServiceBroker & { sendToChannel(name: string, payload: unknown): Promise<void> }
  ).sendToChannel(DOMAIN_EVENTS_CHANNEL, envelope);
}

/** Put one fact on the channel (an envelope of one). */
export function sendDomainEvent(broker: ServiceBroker, event: DomainEvent): Promise<void> {
  return sendDomainEnvelope(broker, [event]);
}

/**
 * A consumer's failure on some facts of an envelope: the others were handled.
 * Embedded, the relay stages again only these (lib/embedded-channel.ts passes
 * it on); over JetStream the whole envelope is redelivered and the handled
 * facts are no-ops for the idempotent consumers.
 */
export interface FactsNotHandled extends Error {
  failedFactIds: string[];
}

/** The ids of the facts an error says were not handled, or null when it says nothing of the kind (all failed). */
export function failedFactIdsOf(err: unknown): string[] | null {
  const ids = (err as Partial<FactsNotHandled> | null)?.failedFactIds;
  return Array.isArray(ids) ? ids : null;
}

export function factsNotHandled(failed: Array<{ id: string; reason: unknown }>): FactsNotHandled {
  const first = failed[0].reason as Error | undefined;
  const err = new Error(
    `${failed.length} facts of the envelope were not handled (first: ${failed[0].id}: ${first?.message ?? String(first)})`,
  ) as FactsNotHandled;
  err.failedFactIds = failed.map((f) => f.id);
  return err;
}

/**
 * Handle each fact of an envelope on its own, as a message each was handled
 * before: one fact's failure neither stops nor undoes the others, and the
 * call then fails naming the facts that failed. Facts with the same `keyOf`
 * (a contact) are handled one after another in staging order; at most
 * `concurrency` at a time.
 */
export async function handleFacts(
  facts: DomainEvent[],
  handle: (fact: DomainEvent) => Promise<unknown>,
  opts: { concurrency: number; keyOf?: (fact: DomainEvent) => string | undefined },
): Promise<void> {
  // Chains of facts that must keep their order; a fact with no key is a chain of its own.
  const chains: DomainEvent[][] = [];
  const byKey = new Map<string, DomainEvent[]>();
  for (const fact of facts) {
    const key = opts.keyOf?.(fact);
    const chain = key === undefined ? undefined : byKey.get(key);
    if (chain) chain.push(fact);
    else {
      const fresh = [fact];
      chains.push(fresh);
      if (key !== undefined) byKey.set(key, fresh);
    }
  }
  const failed: Array<{ id: string; reason: unknown }> = [];
  const limit = pLimit(opts.concurrency);
  await Promise.all(
    chains.map((chain) =>
      limit(async () => {
        for (const fact of chain) {
          try {
            await handle(fact);
          } catch (reason) {
            failed.push({ id: fact.id, reason });
          }
        }
      }),
    ),
  );
  if (failed.length) throw factsNotHandled(failed);
}
