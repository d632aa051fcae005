import { countEventsIngested } from "../../lib/business-metrics";
import type { ServiceBroker } from "moleculer";
import { notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { probeVersions, type Versions } from "../../lib/versioned-cache";
import { insertEvent } from "./events.repo";
import type { EventRecord, RecordInput } from "./events.schemas";

/**
 * Store an event (with its fact for outbound webhooks, staged by the same
 * statement), then run the chain in order. An unknown contact is 404.
 */
export async function recordEvent(
  broker: ServiceBroker,
  ctx: AppContext,
  input: RecordInput,
): Promise<EventRecord> {
  const workspaceId = workspaceOf(ctx);
  // The chain's definitions are probed beside the insert, not one step after another; its
  // segment and score steps read them only for an event with a contact.
  const [event, configVersions] = await Promise.all([
    insertEvent(workspaceId, input),
    input.contactId ? probeVersions(workspaceId) : undefined,
  ]);
  if (!event) throw notFound("Contact");
  countEventsIngested(broker.metrics, 1);
  await runChain(broker, ctx, workspaceId, event, configVersions);
  return event;
}

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
  workspaceId: WorkspaceId,
  event: EventRecord,
  configVersions?: Versions,
): Promise<string[]> {
  const call = (action: string, params: object) =>
    systemCall(ctx, workspaceId, action, params, { configVersions });
  const ran: string[] = [];
  if (event.contactId && isServiceAvailable(broker, "segments")) {
    // The event type rides along so segments need not read the event back.
    await call("segments.evaluateContact", {
      contactId: event.contactId,
      eventId: event.id,
      eventType: event.type,
    });
    ran.push("segments.evaluateContact");
  }
  if (isServiceAvailable(broker, "campaigns")) {
    await call("campaigns.handleEvent", { ...event });
    ran.push("campaigns.handleEvent");
  }
  if (event.contactId && isServiceAvailable(broker, "scoring")) {
    await call("scoring.applyEvent", {
      eventId: event.id,
      contactId: event.contactId,
      type: event.type,
      metadata: event.metadata,
      timestamp: event.timestamp,
    });
    ran.push("scoring.applyEvent");
  }
  return ran;
}
