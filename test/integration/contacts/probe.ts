import type { ServiceBroker } from "moleculer";
import {
  DOMAIN_EVENTS_CHANNEL,
  factsOf,
  type DomainEnvelope,
  type DomainEvent,
} from "../../../lib/domain-events";
import { waitFor as poll } from "../../helpers/wait";

/** Collects the domain events published on the durable channel, for assertions. */
export function domainEventProbe(
  broker: ServiceBroker,
  name = `probe${Math.random().toString(36).slice(2, 8)}`,
) {
  const seen: DomainEvent[] = [];
  broker.createService({
    name,
    channels: {
      [DOMAIN_EVENTS_CHANNEL]: {
        group: name,
        context: false,
        async handler(payload: DomainEnvelope | DomainEvent) {
          seen.push(...factsOf(payload));
        },
      },
    },
  } as never);
  /** Wait (with a deadline) for `count` events matching `match`. */
  function waitFor(match: (e: DomainEvent) => boolean, count = 1, timeoutMs = 5000): Promise<DomainEvent[]> {
    return poll(
      () => {
        const found = seen.filter(match);
        return found.length >= count ? found : undefined;
      },
      timeoutMs,
      `${count} matching domain events (seen: ${seen.map((e) => e.type).join(", ")})`,
    );
  }
  return { seen, waitFor };
}
