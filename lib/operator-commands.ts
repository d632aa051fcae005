import type { ServiceBroker } from "moleculer";
import type { QueueFigures } from "./business-metrics";
import { QUEUE_OWNERS } from "./queue-stats";
import { isServiceAvailable } from "./registry";
import { systemCall } from "./system-call";
import { asWorkspaceId, type WorkspaceId } from "./tenancy";

/**
 * The operators' REPL commands (moleculer-repl `replCommands`, wired in
 * moleculer.config.ts; `npm run repl`, or a `SERVICES=none` node in a
 * cluster). Each command's work is a plain function of the broker that calls
 * the owning areas' actions as the system, so it runs wherever those
 * services are deployed and is tested without a REPL.
 */

export interface QueuesAnswer {
  queues: QueueFigures[];
  /** Owners with no node running them: their queues are not known. */
  notDeployed: string[];
}

/** Every durable queue's depth (due now, waiting) and the age of its oldest due row, from each owner. */
export async function queues(broker: ServiceBroker): Promise<QueuesAnswer> {
  const deployed = QUEUE_OWNERS.filter((owner) => isServiceAvailable(broker, owner));
  const answers = await Promise.all(
    deployed.map((owner) => broker.call<QueueFigures[]>(`${owner}.queueStats`)),
  );
  return {
    queues: answers.flat(),
    notDeployed: QUEUE_OWNERS.filter((owner) => !deployed.includes(owner)),
  };
}

export interface DeliveryAnswer {
  id: string;
  success: boolean;
  attempt: number;
  statusCode: number | null;
  error: string | null;
}

/** Send an outbound webhook delivery again now (webhooks.retryDelivery); its outcome. */
export function retryWebhook(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  deliveryId: string,
): Promise<DeliveryAnswer> {
  return systemCall(broker, workspaceId, "webhooks.retryDelivery", { workspaceId, deliveryId });
}

export interface MessageAnswer {
  id: string;
  status: string;
  channel: string;
  to: string;
}

/** A failed message back in the send queue, attempts reset (messages.requeueFailed); 409 for any other status. */
export function retryMessage(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  messageId: string,
): Promise<MessageAnswer> {
  return systemCall(broker, workspaceId, "messages.requeueFailed", { messageId });
}

/** The workspace's given-up inbound messages back in the filing queue, attempts reset (providers.requeueFailedInbound). */
export function retryInbound(broker: ServiceBroker, workspaceId: WorkspaceId): Promise<{ requeued: number }> {
  return systemCall(broker, workspaceId, "providers.requeueFailedInbound", {});
}

/** Recompute a dynamic segment as a job (segments.recompute); the job's id (`jobs list` in the API shows it). */
export function recomputeSegment(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  segmentId: string,
): Promise<{ jobId: string }> {
  return systemCall(broker, workspaceId, "segments.recompute", { workspaceId, segmentId });
}

export interface UsageAnswer {
  workspaceId: WorkspaceId;
  contacts: number;
  eventsToday: number;
  messagesToday: { sent: number; failed: number; suppressed: number };
}

/**
 * A workspace's usage: contacts held, and today's events and messages, today
 * being the workspace's day in its zone. The analytics area answers (its
 * overview over a range from now to now covers the day's buckets in the
 * workspace's zone).
 */
export async function usage(broker: ServiceBroker, workspaceId: WorkspaceId): Promise<UsageAnswer> {
  const now = new Date().toISOString();
  const overview = await systemCall<{
    contacts: { total: number };
    counts: { sent: number; failed: number; suppressed: number };
    events: number;
  }>(broker, workspaceId, "analytics.overview", { workspaceId, from: now, to: now });
  return {
    workspaceId,
    contacts: overview.contacts.total,
    eventsToday: overview.events,
    messagesToday: {
      sent: overview.counts.sent,
      failed: overview.counts.failed,
      suppressed: overview.counts.suppressed,
    },
  };
}

/** Each source's UTC days rebuilt (`to` exclusive), null where left as they were. */
export type RebuildAnswer = Record<string, { from: string | Date; to: string | Date } | null>;

/**
 * Rebuild a workspace's analytics rollups and per-contact facts from its raw rows, every UTC day retention
 * left whole (analytics.rebuildRollups, which takes no request timeout).
 */
export function rebuildAnalytics(broker: ServiceBroker, workspaceId: WorkspaceId): Promise<RebuildAnswer> {
  return systemCall(broker, workspaceId, "analytics.rebuildRollups", {});
}

/** What moleculer-repl hands a command's action besides the broker and its params. */
interface ReplHelpers {
  table: (rows: unknown[][]) => string;
}

/** A moleculer-repl custom command (its `CustomCommand`). */
export interface OperatorCommand {
  command: string;
  description: string;
  action: (broker: ServiceBroker, params: Record<string, string>, helpers: ReplHelpers) => Promise<void>;
}

/** The lines a command prints: a table, or the error's words (the REPL would only log it). */
async function printed(work: () => Promise<string>, print: (text: string) => void): Promise<void> {
  try {
    print(await work());
  } catch (err) {
    const { message, code, type } = err as { message?: string; code?: number; type?: string };
    print(`Failed${code ? ` (${code}${type ? ` ${type}` : ""})` : ""}: ${message ?? String(err)}`);
  }
}

const seconds = (value: number | null) => (value === null ? "-" : `${Math.round(value)} s`);

/** The `queues` table: one row per queue, then the owners not deployed. */
export function queuesTable(answer: QueuesAnswer, table: ReplHelpers["table"]): string {
  const rows = answer.queues.map((q) => [q.queue, q.due, q.waiting, seconds(q.oldestDueSeconds)]);
  const missing = answer.notDeployed.length ? `\nNot deployed: ${answer.notDeployed.join(", ")}` : "";
  return table([["Queue", "Due now", "Waiting", "Oldest due"], ...rows]) + missing;
}

/**
 * The commands, for `replCommands`. `print` is where their output goes
 * (the REPL's console; a test's collector).
 */
export function operatorCommands(print: (text: string) => void = console.log): OperatorCommand[] {
  return [
    {
      command: "queues",
      description: "Durable queues: rows due now, waiting for later, and the age of the oldest due row",
      action: (broker, _params, { table }) =>
        printed(async () => queuesTable(await queues(broker), table), print),
    },
    {
      command: "retry-webhook <workspaceId> <deliveryId>",
      description: "Send an outbound webhook delivery again now (a dead one included)",
      action: (broker, { workspaceId, deliveryId }, { table }) =>
        printed(async () => {
          const d = await retryWebhook(broker, asWorkspaceId(workspaceId), deliveryId);
          return table([
            ["Delivery", "Attempt", "Success", "Status", "Error"],
            [d.id, d.attempt, d.success, d.statusCode ?? "-", d.error ?? "-"],
          ]);
        }, print),
    },
    {
      command: "retry-message <workspaceId> <messageId>",
      description: "Put a failed message back in the send queue, its attempts reset",
      action: (broker, { workspaceId, messageId }, { table }) =>
        printed(async () => {
          const m = await retryMessage(broker, asWorkspaceId(workspaceId), messageId);
          return table([
            ["Message", "Channel", "To", "Status"],
            [m.id, m.channel, m.to, m.status],
          ]);
        }, print),
    },
    {
      command: "retry-inbound <workspaceId>",
      description:
        "File again the workspace's inbound messages given up on after their tries (their last error kept)",
      action: (broker, { workspaceId }) =>
        printed(async () => {
          const { requeued } = await retryInbound(broker, asWorkspaceId(workspaceId));
          return `${requeued} inbound message${requeued === 1 ? "" : "s"} back in the filing queue`;
        }, print),
    },
    {
      command: "recompute-segment <workspaceId> <segmentId>",
      description: "Recompute a dynamic segment's membership (a job)",
      action: (broker, { workspaceId, segmentId }) =>
        printed(async () => {
          const { jobId } = await recomputeSegment(broker, asWorkspaceId(workspaceId), segmentId);
          return `Recompute started: job ${jobId} (GET /api/workspaces/${workspaceId}/jobs?id=${jobId})`;
        }, print),
    },
    {
      command: "rebuild-analytics <workspaceId>",
      description:
        "Rebuild a workspace's analytics from its raw rows (each source's days retention left whole; opt-outs kept)",
      action: (broker, { workspaceId }, { table }) =>
        printed(async () => {
          const rebuilt = await rebuildAnalytics(broker, asWorkspaceId(workspaceId));
          const day = (t: string | Date) => new Date(t).toISOString().slice(0, 10);
          return table([
            ["Source", "Rebuilt from", "Until"],
            ...Object.entries(rebuilt).map(([source, days]) =>
              days ? [source, day(days.from), day(days.to)] : [source, "-", "-"],
            ),
          ]);
        }, print),
    },
    {
      command: "usage <workspaceId>",
      description: "A workspace's contacts, and its events and messages today (its own time zone)",
      action: (broker, { workspaceId }, { table }) =>
        printed(async () => {
          const u = await usage(broker, asWorkspaceId(workspaceId));
          return table([
            ["Contacts", "Events today", "Sent today", "Failed today", "Suppressed today"],
            [
              u.contacts,
              u.eventsToday,
              u.messagesToday.sent,
              u.messagesToday.failed,
              u.messagesToday.suppressed,
            ],
          ]);
        }, print),
    },
  ];
}
