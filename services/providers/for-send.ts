import type { ProviderChannel } from "../../lib/channels";
import * as repo from "./providers.repo";
import type { OpenedProvider } from "./providers.repo";
import type { WorkspaceId } from "../../lib/tenancy";

export type { OpenedProvider } from "./providers.repo";

/**
 * Broadcast with `{ workspaceId }` when a workspace's providers change
 * (written, removed, or their health switched): a sender's copies of them
 * are stale.
 */
export const PROVIDERS_CHANGED_EVENT = "providers.changed";

/**
 * The providers area's read for the process that sends: a channel's
 * providers in failover order (the default first), their secrets opened
 * here, in the caller's own process. No action answers them, so a
 * decrypted credential is never in a broker message.
 */
export async function providersForSend(
  workspaceId: WorkspaceId,
  channel: ProviderChannel,
): Promise<OpenedProvider[]> {
  return (await repo.listProviders(workspaceId, channel)).map(repo.opened);
}
