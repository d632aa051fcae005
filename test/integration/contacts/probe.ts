import type { ServiceBroker } from "moleculer";
import { DOMAIN_EVENTS_CHANNEL, type DomainEvent } from "../../../lib/domain-events";

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
        async handler(payload: DomainEvent) {
          seen.push(payload);
        },
      },
    },
  } as never);
  /** Wait (with a deadline) for events matching `match`. */
  async function waitFor(
    match: (e: DomainEvent) => boolean,
    count = 1,
    timeoutMs = 5000,
  ): Promise<DomainEvent[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = seen.filter(match);
      if (found.length >= count) return found;
      if (Date.now() > deadline)
        throw new Error(
          `expected ${count} domain events, saw ${found.length}: ${JSON.stringify(seen.map((e) => e.type))}`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return { seen, waitFor };
}

/** Poll until `check` returns a value (not undefined), or fail at the deadline. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not met before the deadline");
    await new Promise((r) => setTimeout(r, 50));
  }
}
