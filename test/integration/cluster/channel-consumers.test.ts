import { Middleware as ChannelsMiddleware } from "@moleculer/channels";
import { ServiceBroker } from "moleculer";
import { randomHex } from "../../../lib/crypto";
import { NatsChannelAdapter } from "../../../lib/nats-channel";
import { dropStreams } from "../../helpers/nats";
import { waitFor } from "../../helpers/wait";

/**
 * Nodes of one consumer group started at once on a stream whose durable
 * consumer does not exist yet: each creates it with its own deliver subject,
 * JetStream refuses all but the first, and the refused ones subscribe again
 * (lib/nats-channel.ts). Every node starts, and each message is handled once.
 */
const NATS_URL = process.env.NATS_URL;
if (!NATS_URL) console.log("channel-consumers.test.ts: skipped: NATS_URL is not set");

(NATS_URL ? test : test.skip)(
  "nodes of one group subscribing at once to a fresh stream all start, and each message is handled once",
  async () => {
    const namespace = `race-${randomHex(4)}`;
    const channel = `${namespace}.race`;
    const handled: number[] = [];
    const brokers = Array.from(
      { length: 4 },
      (_, i) =>
        new ServiceBroker({
          nodeID: `${namespace}-${i}`,
          namespace,
          logger: false,
          middlewares: [
            // The package's typings mark every adapter option required (moleculer.config.ts says more).
            ChannelsMiddleware({
              adapter: new NatsChannelAdapter({ nats: { url: NATS_URL } }),
            } as any) as any,
          ],
        }),
    );
    for (const broker of brokers)
      broker.createService({
        name: "consumer",
        channels: {
          [channel]: {
            group: "race",
            handler(payload: { n: number }) {
              handled.push(payload.n);
            },
          },
        },
      } as never);
    try {
      await Promise.all(brokers.map((broker) => broker.start()));
      const send = brokers[0] as ServiceBroker & {
        sendToChannel(name: string, payload: unknown): Promise<void>;
      };
      for (let n = 0; n < 20; n++) await send.sendToChannel(channel, { n });
      await waitFor(() => handled.length >= 20, 10_000, "20 messages handled");
      expect([...handled].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    } finally {
      await Promise.all(brokers.map((broker) => broker.stop()));
      await dropStreams(NATS_URL!, namespace);
    }
  },
  30_000,
);
