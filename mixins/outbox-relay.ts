import type { Middleware, ServiceBroker } from "moleculer";
import { defineMixin } from "../lib/define-service";
import { holdOutboxRelay, outboxChannels, releaseOutboxRelay } from "../lib/outbox";

/**
 * The outbox relay (lib/outbox.ts) runs in every process with a service that
 * stages domain facts (events, contacts, webhooks): a fact is sent at once
 * where it was written, and every such replica also polls for facts a dead
 * one left. Those services take the mixin; the middleware, placed after the
 * channels middleware, tells the relay when the channel can take its sends.
 */
export const OutboxRelayMixin = defineMixin({
  started() {
    return holdOutboxRelay(this.broker);
  },
  stopped() {
    return releaseOutboxRelay(this.broker);
  },
});

/** `started` runs after the channels middleware's (adapter connected, channels subscribed), `stopped` before its. */
export const OutboxRelayMiddleware: Middleware = {
  started(broker: ServiceBroker) {
    outboxChannels(broker, true);
  },
  stopped(broker: ServiceBroker) {
    outboxChannels(broker, false);
  },
};
