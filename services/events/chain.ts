import type { ServiceBroker } from "moleculer";
import { SYSTEM } from "../../lib/access";
import type { AppContext } from "../../lib/moleculer-types";
import { isServiceAvailable } from "../../lib/registry";
import type { Versions } from "../../lib/versioned-cache";
import type { EventRecord } from "./events.schemas";

/**
 * The chain of spec 6.3, in order and awaited: segment re-evaluation, then
 * campaign triggers, then lead score. A step whose service is not deployed
 * is skipped; each step is idempotent per event id, so a retried event is safe.
 * Returns the steps that ran, in the order they ran. `configVersions`, probed
 * when the event arrived, spare every step its own probe of its cached
 * definitions (lib/versioned-cache.ts).
 */
export async function runChain(
  broker: ServiceBroker,
  ctx: AppContext,
  workspaceId: string,
  event: EventRecord,
  configVersions?: Versions,
): Promise<string[]> {
  const opts = { meta: { principal: SYSTEM, workspaceId, configVersions } };
  const ran: string[] = [];
  if (event.contactId && isServiceAvailable(broker, "segments")) {
    // The event type rides along so segments need not read the event back.
    await ctx.call(
      "segments.evaluateContact",
      { contactId: event.contactId, eventId: event.id, eventType: event.type },
      opts,
    );
    ran.push("segments.evaluateContact");
  }
  if (isServiceAvailable(broker, "campaigns")) {
    await ctx.call("campaigns.handleEvent", { ...event }, opts);
    ran.push("campaigns.handleEvent");
  }
  if (event.contactId && isServiceAvailable(broker, "scoring")) {
    await ctx.call(
      "scoring.applyEvent",
      {
        eventId: event.id,
        contactId: event.contactId,
        type: event.type,
        metadata: event.metadata,
        timestamp: event.timestamp,
      },
      opts,
    );
    ran.push("scoring.applyEvent");
  }
  return ran;
}
