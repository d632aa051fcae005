import { safeEqual } from "../../lib/crypto";
import { open } from "../../lib/secret-box";
import type { PushSubscriptionView, WebPushKeys } from "./push.schemas";
import * as repo from "./subscriptions.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * A browser's subscription stored by the website script. A push service
 * may renew a subscription (a new endpoint and keys; the worker's
 * `pushsubscriptionchange`): the renewed one names the one it replaces with
 * that one's auth secret, which only the browser and we hold. With a
 * matching secret it takes the old one's contact (unless a visitor token
 * names one) and the old one stops receiving; without, it is stored as any
 * new subscription and the old one is left alone.
 */
export async function saveWebSubscription(
  workspaceId: WorkspaceId,
  input: {
    contactId: string | null;
    endpoint: string;
    keys: WebPushKeys;
    previous?: { endpoint: string; auth: string };
  },
): Promise<{ subscription: PushSubscriptionView; created: boolean }> {
  const previous =
    input.previous && (await repo.webSubscriptionByEndpoint(workspaceId, input.previous.endpoint));
  const replaced =
    previous && input.previous!.endpoint !== input.endpoint && sameAuth(previous.keys, input.previous!.auth)
      ? previous
      : null;
  const saved = await repo.saveSubscription(workspaceId, {
    contactId: input.contactId ?? replaced?.contact_id ?? null,
    type: "web",
    endpoint: input.endpoint,
    token: null,
    keys: input.keys,
  });
  if (replaced) await repo.deactivate(workspaceId, [replaced.id]);
  return saved;
}

/** Whether `auth` is the auth secret of the stored (sealed) keys. */
export function sameAuth(sealedKeys: string | null, auth: string): boolean {
  if (!sealedKeys) return false;
  return safeEqual((JSON.parse(open(sealedKeys)) as WebPushKeys).auth, auth);
}
