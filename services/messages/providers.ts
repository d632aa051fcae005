import { LRUCache } from "lru-cache";
import type { LoggerInstance } from "moleculer";
import { config } from "../../lib/config";
import { takeTurn } from "../../lib/rate-limit";
import { type Channel, PROVIDER_CHANNELS, type ProviderChannel } from "../../lib/channels";
import { logClient, ProviderError, type ProviderClient } from "../providers/clients";
import type { PushClient, PushSubscriptionType } from "../providers/clients/push";
import { clientFor, pushClientFor } from "../providers/kinds";
import { providersForSend, type OpenedProvider } from "../providers/for-send";
import { SUBSCRIPTION_TYPE_OF } from "./push";
import type { WorkspaceId } from "../../lib/tenancy";

/** How long a sender keeps a workspace's providers without hearing of a change (a missed event's bound). */
const PROVIDERS_TTL_MS = 30_000;

/**
 * Which client a send goes through: the message's provider, else its
 * channel's default, else `log` (none configured, or a channel whose
 * providers arrive later). This process reads and opens its providers
 * itself (`providersForSend`): no credential crosses the broker. They are
 * kept briefly per workspace and channel, dropped on PROVIDERS_CHANGED_EVENT;
 * clients are kept per provider and replaced when the provider changes, so
 * SMTP pools and keep-alive connections live across batches.
 */
export class ProviderDirectory {
  private readonly clients = new LRUCache<string, { updatedAt: string; client: ProviderClient }>({
    max: 1_000,
    // One pushed out lets its connections go (one replaced, or all at close, is closed where that happens).
    dispose: ({ client }, _id, reason) => {
      if (reason === "evict") void client.close?.();
    },
  });
  private readonly pushClients = new LRUCache<string, { updatedAt: string; client: PushClient }>({
    max: 1_000,
    dispose: ({ client }, _id, reason) => {
      if (reason === "evict") void client.close?.();
    },
  });
  private readonly providers = new LRUCache<string, OpenedProvider[]>({ max: 10_000, ttl: PROVIDERS_TTL_MS });
  private readonly log: ProviderClient;

  constructor(
    logger: LoggerInstance,
    /** The providers area's read (tests pass their own). */
    private readonly read: typeof providersForSend = providersForSend,
  ) {
    this.log = logClient(logger);
  }

  /** The client for a workspace's send on `channel`; a named provider that is gone fails the send. */
  async clientFor(
    workspaceId: WorkspaceId,
    channel: Channel,
    providerId: string | null,
  ): Promise<ProviderClient> {
    if (channel === "push") return this.log;
    let providers = await this.providersOf(workspaceId, channel);
    // A provider added since the copy was read (its event still on the way) is read again before it is missed.
    if (providerId && !providers.some((p) => p.id === providerId)) {
      this.forget(workspaceId);
      providers = await this.providersOf(workspaceId, channel);
    }
    if (providerId) {
      const named = providers.find((p) => p.id === providerId);
      if (!named) throw new ProviderError(`Provider ${providerId} no longer exists`, false);
      return this.cached(named, workspaceId);
    }
    if (!providers.length) return this.log;
    return this.cached(firstUsable(providers, Date.now()), workspaceId);
  }

  /**
   * The workspace's push clients by the subscription type each serves (web:
   * its VAPID pair; pushgw1, pushgw2: their gateway's). A type without a
   * provider, or whose provider type has no push client here, is absent.
   */
  async pushClientsFor(workspaceId: WorkspaceId): Promise<Map<PushSubscriptionType, PushClient>> {
    const clients = new Map<PushSubscriptionType, PushClient>();
    for (const provider of await this.providersOf(workspaceId, "push")) {
      const type = SUBSCRIPTION_TYPE_OF[provider.type];
      if (!type || clients.has(type)) continue;
      const client = this.cachedPush(provider);
      if (client) clients.set(type, client);
    }
    return clients;
  }

  /** Drop the workspace's kept providers (they changed, or a health report switched one). */
  forget(workspaceId: WorkspaceId): void {
    for (const channel of PROVIDER_CHANNELS) this.providers.delete(`${workspaceId}\n${channel}`);
  }

  /**
   * A batch's health report answered: when the provider is failing (its
   * probe time moved) or no longer as kept, the next batch reads again,
   * without waiting for the event.
   */
  healthReported(workspaceId: WorkspaceId, providerId: string, status: "active" | "failing"): void {
    const kept = PROVIDER_CHANNELS.flatMap(
      (channel) => this.providers.peek(`${workspaceId}\n${channel}`) ?? [],
    );
    const was = kept.find((p) => p.id === providerId)?.status;
    if (status === "failing" || (was && was !== status)) this.forget(workspaceId);
  }

  private async providersOf(workspaceId: WorkspaceId, channel: ProviderChannel): Promise<OpenedProvider[]> {
    const key = `${workspaceId}\n${channel}`;
    const kept = this.providers.get(key);
    if (kept) return kept;
    let providers: OpenedProvider[];
    try {
      providers = await this.read(workspaceId, channel);
    } catch (err) {
      throw new ProviderError(`Providers could not be read: ${(err as Error).message}`, true);
    }
    this.providers.set(key, providers);
    return providers;
  }

  private cached(provider: OpenedProvider, workspaceId: WorkspaceId): ProviderClient {
    const updatedAt = new Date(provider.updatedAt).toISOString();
    const known = this.clients.get(provider.id);
    if (known?.updatedAt === updatedAt) return known.client;
    void known?.client.close?.();
    const client = clientFor(provider, workspaceId);
    this.clients.set(provider.id, { updatedAt, client });
    return client;
  }

  private cachedPush(provider: OpenedProvider): PushClient | null {
    const updatedAt = new Date(provider.updatedAt).toISOString();
    const known = this.pushClients.get(provider.id);
    if (known?.updatedAt === updatedAt) return known.client;
    void known?.client.close?.();
    let client: PushClient;
    try {
      client = pushClientFor(provider);
    } catch {
      return null;
    }
    this.pushClients.set(provider.id, { updatedAt, client });
    return client;
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.clients.values(), ...this.pushClients.values()].map(({ client }) => client.close?.()),
    );
    this.clients.clear();
    this.pushClients.clear();
    this.providers.clear();
  }
}

/**
 * Failover (providers in the channel's order, the default first): the first
 * that is active or whose probe is due; when every one is failing, the
 * default still (nothing better is known).
 */
export function firstUsable(providers: OpenedProvider[], now: number): OpenedProvider {
  return (
    providers.find(
      (p) => p.status === "active" || (p.probeAt !== null && new Date(p.probeAt).getTime() <= now),
    ) ?? providers[0]
  );
}

/**
 * Wait until the provider type's rate limit (PROVIDER_RATE_LIMITS, sends per
 * second, counted across replicas in Redis when configured) allows one more
 * send; at most `maxWaitMs`, else the wait it would need.
 */
export async function providerTurn(type: string, maxWaitMs: number): Promise<number> {
  const perSecond = config().providerRateLimits[type];
  if (!perSecond) return 0;
  const spec = { name: "provider-send", points: perSecond, durationSeconds: 1 };
  for (let waited = 0; ;) {
    const wait = await takeTurn(spec, type);
    if (wait === 0) return 0;
    if (waited + wait > maxWaitMs) return wait;
    await new Promise((resolve) => setTimeout(resolve, wait));
    waited += wait;
  }
}
