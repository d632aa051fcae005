import { countMessages } from "../../lib/business-metrics";
import type { ServiceBroker } from "moleculer";
import type { ProviderEvent } from "../providers/callbacks";
import * as repo from "./messages.repo";
import type { MessageRow } from "./messages.repo";
import * as events from "./provider-events.repo";
import { countEngagement, recordActivity } from "./tracking";
import { systemCall } from "../../lib/system-call";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * What a provider's callback does to a message (contracts 3 and 7): status
 * forward only, a hard bounce puts the address on the do-not-contact list
 * (reason `bounce`, consent untouched), a complaint opts the email out
 * (source `complaint`, `unsubscribe.email` with the message). Opens and
 * clicks the provider reports count only where our own tracking of them is
 * off, so one open is never counted twice (email: other channels have none
 * of ours, so a chat's read receipt counts).
 */

type StatusEvent = Exclude<ProviderEvent, { kind: "inbound" }>;

/** Contract 3: which statuses each report may move a message from. */
const MOVES_FROM: Record<"delivered" | "failed" | "bounced" | "complained", readonly string[]> = {
  delivered: ["sent"],
  failed: ["queued", "sending", "sent"],
  bounced: ["sent", "delivered"],
  complained: ["sent", "delivered", "opened", "clicked"],
};

/** The status a report moves a message to, or null when it comes too late (history only). */
export function moveFor(current: string, event: StatusEvent): string | null {
  if (event.kind === "opened" || event.kind === "clicked") return null;
  const status = event.kind;
  return MOVES_FROM[status].includes(current) ? status : null;
}

export const bounceReason = (event: StatusEvent) =>
  event.kind === "bounced" ? (event.hard ? "hard_bounce" : "soft_bounce") : null;

export interface ApplyOutcome {
  applied: number;
  pending: number;
}

/** Apply a callback's events to the workspace's messages; early ones are kept for their send. */
export async function applyProviderEvents(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  providerId: string,
  reported: StatusEvent[],
): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { applied: 0, pending: 0 };
  for (const event of reported) {
    const row = await events.findMessage(workspaceId, providerId, event);
    if (!row) {
      await events.keepPending(workspaceId, providerId, event);
      outcome.pending += 1;
      continue;
    }
    await applyOne(broker, row, event);
    outcome.applied += 1;
  }
  return outcome;
}

/** Callbacks kept for sends just recorded: applied now, each once. */
export async function applyPending(
  broker: ServiceBroker,
  sends: Array<{ id: string; providerId: string | null; providerMessageId: string }>,
): Promise<void> {
  for (const kept of await events.takePending(sends))
    await applyProviderEvents(broker, kept.workspace_id, kept.provider_id, [kept.event]);
}

async function applyOne(broker: ServiceBroker, row: MessageRow, event: StatusEvent): Promise<void> {
  if (event.kind === "opened" || event.kind === "clicked") {
    // Only email has our own pixel and short links; on chat channels the provider's read receipt is the open.
    if (row.channel === "email") {
      const workspace = await systemCall<{
        settings?: { tracking?: { opens?: boolean; clicks?: boolean } | null };
      }>(broker, row.workspace_id, "workspaces.get", {
        workspaceId: row.workspace_id,
      });
      const tracking = workspace.settings?.tracking ?? {};
      if ((event.kind === "opened" ? tracking.opens : tracking.clicks) !== false) return;
    }
    const updated = event.kind === "opened" ? await repo.recordOpen(row.id) : await repo.recordClick(row.id);
    if (updated) countEngagement(broker, updated);
    if (updated)
      await recordActivity(broker, updated, event.kind === "opened" ? "message.open" : "message.click", {
        machine: false,
        ...(event.kind === "clicked" ? { url: event.url ?? null } : {}),
      });
    return;
  }
  const reason = bounceReason(event);
  const moveTo = moveFor(row.status, event);
  await events.recordReport(row, {
    status: event.kind,
    moveTo,
    reason,
    error: event.kind === "delivered" ? null : (event.reason ?? null),
  });
  if (moveTo) countMessages(broker.metrics, row.channel, moveTo);
  if (event.kind === "bounced" && event.hard && row.channel === "email")
    await systemCall(broker, row.workspace_id, "contacts.dncAdd", {
      workspaceId: row.workspace_id,
      type: "email",
      value: row.to_address,
      reason: "bounce",
    }).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err; // already on the list
    });
  if (event.kind === "complained" && row.contact_id)
    await systemCall(broker, row.workspace_id, "contacts.applyPreferences", {
      contactId: row.contact_id,
      channels: { email: "opted_out" },
      source: "complaint",
      messageId: row.id,
    });
}
