import type { Channel } from "@moleculer/channels/types/src";
import { factsNotHandled, failedFactIdsOf } from "../../lib/domain-events";
import { EmbeddedChannelAdapter } from "../../lib/embedded-channel";

/** A subscription as the channels middleware hands it to an adapter. */
function channel(id: string, group: string, handler: (payload: unknown) => Promise<void>): Channel {
  return {
    id,
    name: "facts",
    group,
    handler,
    context: false,
    unsubscribing: false,
    maxInFlight: null,
    maxRetries: 0,
    deadLettering: null,
  };
}

describe("EmbeddedChannelAdapter", () => {
  it("settles a publish only once every consumer group has handled the message", async () => {
    const adapter = new EmbeddedChannelAdapter();
    const handled: string[] = [];
    let finishSlow!: () => void;
    await adapter.subscribe(channel("w", "webhooks", async () => void handled.push("webhooks")));
    await adapter.subscribe(
      channel("a", "analytics", () =>
        new Promise<void>((r) => (finishSlow = r)).then(() => void handled.push("analytics")),
      ),
    );
    let settled = false;
    const published = adapter.publish("facts", { n: 1 }).then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(handled).toEqual(["webhooks"]);
    expect(settled).toBe(false);
    finishSlow();
    await published;
    expect(handled).toEqual(["webhooks", "analytics"]);
  });

  it("rejects with a consumer's failure, so the sender keeps the message", async () => {
    const adapter = new EmbeddedChannelAdapter();
    await adapter.subscribe(channel("w", "webhooks", async () => Promise.reject(new Error("insert failed"))));
    await expect(adapter.publish("facts", {})).rejects.toThrow("insert failed");
  });

  it("names the facts of an envelope any group did not handle, once every group has settled", async () => {
    const adapter = new EmbeddedChannelAdapter();
    const fail = (ids: string[]) => async () =>
      Promise.reject(factsNotHandled(ids.map((id) => ({ id, reason: new Error("x") }))));
    await adapter.subscribe(channel("w", "webhooks", fail(["f1", "f3"])));
    await adapter.subscribe(channel("c", "campaigns", fail(["f3", "f4"])));
    const err = await adapter.publish("facts", {}).catch((e: unknown) => e);
    expect(failedFactIdsOf(err)?.sort()).toEqual(["f1", "f3", "f4"]);
  });

  it("a group failing as a whole fails the whole envelope", async () => {
    const adapter = new EmbeddedChannelAdapter();
    await adapter.subscribe(
      channel("w", "webhooks", async () =>
        Promise.reject(factsNotHandled([{ id: "f1", reason: new Error("x") }])),
      ),
    );
    await adapter.subscribe(channel("c", "campaigns", async () => Promise.reject(new Error("pool closed"))));
    const err = await adapter.publish("facts", {}).catch((e: unknown) => e);
    expect(failedFactIdsOf(err)).toBeNull();
    expect((err as Error).message).toBe("pool closed");
  });

  it("gives each message to one subscriber per group, in turn", async () => {
    const adapter = new EmbeddedChannelAdapter();
    const by: string[] = [];
    await adapter.subscribe(channel("w1", "webhooks", async () => void by.push("w1")));
    await adapter.subscribe(channel("w2", "webhooks", async () => void by.push("w2")));
    for (let i = 0; i < 4; i++) await adapter.publish("facts", {});
    expect(by.sort()).toEqual(["w1", "w1", "w2", "w2"]);
  });

  it("hands the payload and its headers over; a channel nobody subscribes to takes the message as handled", async () => {
    const adapter = new EmbeddedChannelAdapter();
    const seen: unknown[] = [];
    const chan = channel("w", "webhooks", async () => undefined);
    chan.handler = async (payload: unknown, raw: unknown) => void seen.push(payload, raw);
    await adapter.subscribe(chan);
    await adapter.publish("facts", { n: 2 }, { headers: { h: "1" } });
    expect(seen).toEqual([{ n: 2 }, { payload: { n: 2 }, headers: { h: "1" } }]);
    await expect(adapter.publish("nobody-listens", {})).resolves.toBeUndefined();
  });

  it("unsubscribes after the messages in hand are finished, and sends none after", async () => {
    const adapter = new EmbeddedChannelAdapter();
    let finish!: () => void;
    const calls: number[] = [];
    const chan = channel("w", "webhooks", (payload) => {
      calls.push((payload as { n: number }).n);
      return new Promise<void>((r) => (finish = r));
    });
    await adapter.subscribe(chan);
    const inHand = adapter.publish("facts", { n: 1 });
    let unsubscribed = false;
    const leaving = adapter.unsubscribe(chan).then(() => (unsubscribed = true));
    await new Promise((r) => setImmediate(r));
    expect(unsubscribed).toBe(false);
    finish();
    await Promise.all([inHand, leaving]);
    await adapter.publish("facts", { n: 2 });
    expect(calls).toEqual([1]);
  });
});
