import type { LoggerInstance, ServiceBroker } from "moleculer";
import { SYSTEM } from "../../lib/access";
import { config } from "../../lib/config";
import { takeTurn } from "../../lib/rate-limit";
import { isServiceAvailable } from "../../lib/registry";
import { clientFor, logClient, ProviderError, type ProviderClient } from "../providers/clients";
import type { OpenedProvider } from "../providers/providers.schemas";
import type { Channel } from "../templates/render";

/**
 * Which client a send goes through: the message's provider, else its
 * channel's default, else `log` (none configured, or a channel whose
 * providers arrive later). Clients are kept per provider and replaced when
 * the provider changes, so SMTP pools and keep-alive connections live
 * across batches.
 */
export class ProviderDirectory {
  private readonly clients = new Map<string, { updatedAt: string; client: ProviderClient }>();
  private readonly log: ProviderClient;

  constructor(
    private readonly broker: ServiceBroker,
    logger: LoggerInstance,
  ) {
    this.log = logClient(logger);
  }

  /** The client for a workspace's send on `channel`; a named provider that is gone fails the send. */
  async clientFor(workspaceId: string, channel: Channel, providerId: string | null): Promise<ProviderClient> {
    if (channel !== "email" && channel !== "sms") return this.log;
    if (!isServiceAvailable(this.broker, "providers")) {
      if (providerId) throw new ProviderError("The providers service is not reachable", true);
      return this.log;
    }
    let providers: OpenedProvider[];
    try {
      providers = (await this.broker.call(
        "providers.forSend",
        { channel, providerId },
        { meta: { principal: SYSTEM, workspaceId } },
      )) as OpenedProvider[];
    } catch (err) {
      if ((err as { code?: number }).code === 404)
        throw new ProviderError(`Provider ${providerId} no longer exists`, false);
      throw new ProviderError(`Providers could not be read: ${(err as Error).message}`, true);
    }
    if (!providers.length) return this.log;
    return this.cached(providerId ? providers[0] : firstUsable(providers, Date.now()));
  }

  private cached(provider: OpenedProvider): ProviderClient {
    const updatedAt = new Date(provider.updatedAt).toISOString();
    const known = this.clients.get(provider.id);
    if (known?.updatedAt === updatedAt) return known.client;
    void known?.client.close?.();
    const client = clientFor(provider);
    this.clients.set(provider.id, { updatedAt, client });
    return client;
  }

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map(({ client }) => client.close?.()));
    this.clients.clear();
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
