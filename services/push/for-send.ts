import { open } from "../../lib/secret-box";
import type { PushTarget } from "../providers/clients/push";
import * as repo from "./subscriptions.repo";
import type { SendableRow } from "./subscriptions.repo";
import type { WebPushKeys } from "./push.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** A subscription the sender pushes to: the push client's target and whose it is. */
export type SendTarget = PushTarget & { contactId: string | null };

const target = (r: SendableRow): SendTarget => ({
  subscriptionId: r.id,
  contactId: r.contact_id,
  type: r.type,
  endpoint: r.endpoint,
  token: r.token,
  keys: r.keys ? (JSON.parse(open(r.keys)) as WebPushKeys) : null,
});

/**
 * The push area's read for the process that sends: the contacts' active
 * subscriptions, their browser keys opened here, in the caller's own
 * process (no action answers them, so they never cross the broker).
 */
export async function subscriptionsForSend(
  workspaceId: WorkspaceId,
  contactIds: string[],
): Promise<SendTarget[]> {
  return (await repo.activeSubscriptions(workspaceId, contactIds)).map(target);
}

/** The named subscriptions, active or not, opened alike (push/test). */
export async function subscriptionsByIdForSend(
  workspaceId: WorkspaceId,
  ids: string[],
): Promise<SendTarget[]> {
  return (await repo.subscriptionsById(workspaceId, ids)).map(target);
}
