import type { Middleware, ServiceBroker } from "moleculer";

/**
 * Moleculer 0.14 tells the other nodes which services a node runs in an
 * INFO packet debounced by a second after the last of them registers. For
 * that second the started node can call its peers, but they do not list
 * its event handlers, and their broadcasts to it (a session revoked, a
 * membership changed) are dropped without a word. Once every local service
 * has started, the node announces them at once.
 */
export const AnnounceServicesMiddleware = {
  name: "AnnounceServices",
  started(broker: ServiceBroker) {
    if (!broker.transit) return;
    // The registry's discoverer (what the broker itself calls on stop) is missing from Moleculer's typings.
    const { discoverer } = broker.registry as unknown as {
      discoverer: { sendLocalNodeInfo(): Promise<void> };
    };
    return discoverer.sendLocalNodeInfo();
  },
} as unknown as Middleware;
