import { LRUCache } from "lru-cache";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import * as enrollRepo from "./enroll.repo";
import * as enrollmentsRepo from "./enrollments.repo";
import { enrollByChanges } from "./feed-triggers";
import { liveState } from "./live-state";
import { workflowOf } from "./runner";
import { changesOfEvent } from "./segment-log.repo";
import { triggerMatches } from "./triggers";

/**
 * Step 2 of the events chain (campaigns.handleEvent), before the event's
 * answer: goals on the event complete their enrollments, waits for it
 * resume, segment entries and exits it caused enroll, and matching event
 * triggers enroll (all the campaigns a contact enters by one statement).
 */

export interface ChainEvent {
  id: string;
  type: string;
  contactId: string | null;
  metadata?: unknown;
  timestamp?: unknown;
}

export async function handleChainEvent(ctx: AppContext, event: ChainEvent) {
  const none = { enrolled: 0, resumed: 0, completed: 0 };
  const ws = workspaceOf(ctx);
  const { contactId, type, metadata } = event;
  if (!contactId) return none;
  const state = await liveState.get(ws, ctx.meta.configVersions);
  if (!state.live) return none;
  // An event condition's `where` is asked of the stored event.
  const meets = async (where: unknown) =>
    where === undefined ||
    (
      await systemCall<{
        matches: boolean;
      }>(ctx, ws, "segments.eventMatches", { eventId: event.id, where })
    ).matches;

  // Goals and waits are looked for only where a live campaign's version names this event.
  const completed = state.goals.has(type) ? await enrollmentsRepo.completeGoals(ws, contactId, type) : 0;
  const waits = [];
  for (const waiting of state.waits.has(type) ? await enrollmentsRepo.waitingFor(ws, contactId, type) : []) {
    const workflow = await workflowOf(waiting.campaign_id, waiting.version);
    const node = workflow?.nodes.find((n) => n.id === waiting.current_node_id);
    if (await meets((node?.config.event as { where?: unknown } | undefined)?.where)) waits.push(waiting.id);
  }
  const resumed = await enrollmentsRepo.resumeWaits(ws, waits);

  // Segment entries and exits this event caused enroll now; the log reader finds them enrolled.
  const watching = state.triggers.flatMap((t) =>
    t.type === "segment_entered" || t.type === "segment_exited"
      ? [{ ...t, workspace_id: ws, type: t.type, segment_id: String(t.config.segmentId) }]
      : [],
  );
  let enrolled = watching.length
    ? await enrollByChanges(
        await changesOfEvent(ws, event.id, [...new Set(watching.map((t) => t.segment_id))]),
        watching,
      )
    : 0;
  const matched = [];
  for (const t of state.triggers)
    if (
      triggerMatches(t, { type, metadata }) &&
      !(t.reentry === "once" && enteredOnce.has(`${t.campaign_id}:${contactId}`)) &&
      (await meets(t.config.where))
    )
      matched.push(t);
  enrolled += await enrollRepo.enrollByTriggers(ws, contactId, matched, {
    id: event.id,
    type,
    metadata: metadata ?? null,
    timestamp: event.timestamp ?? null,
  });
  // After the statement the contact has (or had) an enrollment in each of these campaigns.
  for (const t of matched) if (t.reentry === "once") enteredOnce.set(`${t.campaign_id}:${contactId}`, true);
  return { enrolled, resumed, completed };
}

/**
 * `campaign:contact` pairs this process has seen enrolled by a trigger with
 * re-entry `once`: such a contact never enters that campaign by a trigger
 * again, so its later events skip the statement. Bounded: the least recently seen go first.
 */
const enteredOnce = new LRUCache<string, true>({ max: 200_000 });
