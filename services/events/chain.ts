import { countEventsIngested } from "../../lib/business-metrics";
import type { LoggerInstance, ServiceBroker } from "moleculer";
import { config } from "../../lib/config";
import { notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { optionalStepRuns } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { probeVersions, type Versions } from "../../lib/versioned-cache";
import * as retries from "./chain-retries.repo";
import { insertEvent, insertEventBatch, storedEvents } from "./events.repo";
import type { EventRecord, RecordInput } from "./events.schemas";

/**
 * Store an event (with its fact for outbound webhooks, staged by the same
 * statement), then run the chain in order. An unknown contact is 404. A
 * chain that fails after the store (a step's service unreachable, a timeout)
 * answers its error and is queued to run again until it completes.
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
  if (!event) {
    // Its own id stored before: the call that stored it ran (or queued) its chain.
    const [stored] = input.id ? await storedEvents(workspaceId, [input.id]) : [];
    if (stored) return stored;
    throw notFound("Contact");
  }
  countEventsIngested(broker.metrics, 1);
  try {
    await runChain(broker, ctx, workspaceId, event, configVersions);
  } catch (err) {
    await queueChain(broker, workspaceId, event, err);
    throw err;
  }
  return event;
}

/** The event is stored and its webhooks go out: its chain must complete too, later if not now. */
function queueChain(broker: ServiceBroker, workspaceId: WorkspaceId, event: EventRecord, err: unknown) {
  return retries
    .queueChainRetry(workspaceId, event.id, errorText(err), chainRetryDelay(0, config().chainRetryDelaysMs))
    .catch((queueErr: unknown) =>
      broker.logger.error(
        `Event ${event.id}: chain failed and could not be queued again: ${errorText(queueErr)}`,
      ),
    );
}

/**
 * The batch form of `recordEvent` (an inbound batch's `*.message_received`):
 * the events stored in one statement, then each stored event's chain run
 * (side by side; its steps batch their own statements). A chain that fails
 * is queued to run again, as `recordEvent` does, but does not fail the
 * batch: its event is stored. Answers per input, in order; null: its
 * contact is not in the workspace.
 */
export async function recordEvents(
  broker: ServiceBroker,
  ctx: AppContext,
  inputs: RecordInput[],
): Promise<Array<EventRecord | null>> {
  const workspaceId = workspaceOf(ctx);
  const [events, configVersions] = await Promise.all([
    insertEventBatch(workspaceId, inputs),
    inputs.some((i) => i.contactId) ? probeVersions(workspaceId) : undefined,
  ]);
  const stored = events.filter((e): e is EventRecord => e !== null);
  countEventsIngested(broker.metrics, stored.length);
  // Those with their own id stored before are answered as stored; the call that stored them ran (or queued) their chains.
  const again = inputs.flatMap((input, at) => (!events[at] && input.id ? [input.id] : []));
  const before = new Map(
    (again.length ? await storedEvents(workspaceId, again) : []).map((e) => [e.id, e] as const),
  );
  await Promise.all(
    stored.map((event) =>
      runChain(broker, ctx, workspaceId, event, configVersions).catch((err: unknown) => {
        broker.logger.warn(`Event ${event.id}: chain failed, queued to run again: ${errorText(err)}`);
        return queueChain(broker, workspaceId, event, err);
      }),
    ),
  );
  return events.map((event, at) => event ?? before.get(inputs[at].id ?? "") ?? null);
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The wait before the chain's run after `attempts` runs from the queue: the delays in turn, then the last. */
export function chainRetryDelay(attempts: number, delays: number[]): number {
  return delays.length ? delays[Math.min(attempts, delays.length - 1)] : 0;
}

/** How long a claimed retry is held: its three steps, each within the request timeout, with room. */
const RETRY_LEASE_MS = 60_000;
const RETRY_BATCH = 50;

/**
 * One pass of the chain retries (`events.retryChains`): each due event's chain
 * runs again, as the system, oldest event first; a completed one leaves the
 * queue, a failed one waits its next delay. True when the batch was full.
 */
export async function retryChains(broker: ServiceBroker, logger: LoggerInstance): Promise<boolean> {
  const due = await retries.claimChainRetries(RETRY_BATCH, RETRY_LEASE_MS);
  for (const { workspaceId, event, attempts } of due) {
    try {
      await runChain(broker, broker, workspaceId, event);
      await retries.finishChainRetry(workspaceId, event.id);
    } catch (err) {
      const delay = chainRetryDelay(attempts, config().chainRetryDelaysMs);
      logger.warn(
        `Event ${event.id}: chain failed again (retry ${attempts}), next in ${delay} ms: ${errorText(err)}`,
      );
      await retries.postponeChainRetry(workspaceId, event.id, errorText(err), delay);
    }
  }
  return due.length === RETRY_BATCH;
}

/**
 * The chain of spec 6.3, in order and awaited: segment re-evaluation, then
 * campaign triggers, then lead score. A step whose service is not deployed
 * is skipped; one whose service this node has seen and that has gone fails
 * the chain (it is retried, not lost). Each step is idempotent per event id,
 * so a retried event is safe.
 * Returns the steps that ran, in the order they ran. `configVersions`, probed
 * when the event arrived, spare every step its own probe of its cached
 * definitions (lib/versioned-cache.ts).
 */
export async function runChain(
  broker: ServiceBroker,
  from: AppContext | ServiceBroker,
  workspaceId: WorkspaceId,
  event: EventRecord,
  configVersions?: Versions,
): Promise<string[]> {
  const call = (action: string, params: object) =>
    systemCall(from, workspaceId, action, params, { configVersions });
  const ran: string[] = [];
  if (event.contactId && optionalStepRuns(broker, "segments.evaluateContact")) {
    // The event type rides along so segments need not read the event back.
    await call("segments.evaluateContact", {
      contactId: event.contactId,
      eventId: event.id,
      eventType: event.type,
    });
    ran.push("segments.evaluateContact");
  }
  if (optionalStepRuns(broker, "campaigns.handleEvent")) {
    await call("campaigns.handleEvent", { ...event });
    ran.push("campaigns.handleEvent");
  }
  if (event.contactId && optionalStepRuns(broker, "scoring.applyEvent")) {
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
