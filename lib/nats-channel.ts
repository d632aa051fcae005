import { Adapters } from "@moleculer/channels";

/**
 * JetStream's refusal when a consumer's name is taken by one of another
 * configuration. Every node of a consumer group creates the group's durable
 * consumer with its own deliver subject (@moleculer/channels names it after
 * the node), so two nodes that subscribe at once to a group whose consumer
 * does not exist yet both create it, and the second is refused, which
 * stopped its service from starting (seen as two webhooks workers started
 * together on a fresh NATS). Once the consumer exists a node attaches to it,
 * so the refused node subscribes again.
 */
const CONSUMER_NAME_IN_USE = 10013;
const SUBSCRIBE_ATTEMPTS = 5;

interface JetStreamError {
  api_error?: { err_code?: number };
}

/** The package's NATS (JetStream) adapter, subscribing again when another node created the group's consumer first. */
export class NatsChannelAdapter extends Adapters.NATS {
  async subscribe(chan: Parameters<InstanceType<typeof Adapters.NATS>["subscribe"]>[0]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await super.subscribe(chan);
      } catch (err) {
        if (
          (err as JetStreamError)?.api_error?.err_code !== CONSUMER_NAME_IN_USE ||
          attempt >= SUBSCRIBE_ATTEMPTS
        )
          throw err;
        // The failed attempt began tracking the channel's messages; the next one begins again.
        this.activeMessages.delete(chan.id);
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }
}
