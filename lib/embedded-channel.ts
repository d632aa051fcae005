import { Adapters } from "@moleculer/channels";
import type { Channel } from "@moleculer/channels/types/src";
import { factsNotHandled, failedFactIdsOf } from "./domain-events";

/**
 * The channel adapter of the embedded shape (no NATS): one process, so a
 * message goes straight to this process's subscribers, one per consumer
 * group, and `publish` settles when they all have handled it, rejecting with
 * a failure (when every failure names the facts of an envelope its consumer
 * did not handle, with all of those: lib/domain-events.ts). The package's own
 * in-memory adapter (`Fake`) emits and forgets, so a consumer that failed, or
 * a process that died mid-handling, lost the message. Here the outbox relay
 * (lib/outbox.ts) deletes a fact only after its consumers committed: that is
 * their acknowledgement, as a JetStream ack is with NATS, and stages again
 * the facts named as not handled. The relay sends one batch at a time, which
 * bounds the messages in flight.
 */
export class EmbeddedChannelAdapter extends Adapters.Base {
  /** Subscriptions by channel name, then by consumer group (several services of one group take turns). */
  private readonly subscribers = new Map<string, Map<string, Channel[]>>();
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  private turn = 0;

  constructor() {
    super({});
  }

  async connect(): Promise<void> {
    this.connected = true;
  }

  async disconnect(): Promise<void> {
    this.connected = false;
  }

  async subscribe(chan: Channel): Promise<void> {
    const groups = this.subscribers.get(chan.name) ?? new Map<string, Channel[]>();
    this.subscribers.set(chan.name, groups);
    groups.set(chan.group, [...(groups.get(chan.group) ?? []), chan]);
    this.inFlight.set(chan.id, new Set());
  }

  /** No new messages reach `chan`; the ones it is handling finish first (a service stopping drains). */
  async unsubscribe(chan: Channel): Promise<void> {
    const groups = this.subscribers.get(chan.name);
    const remaining = (groups?.get(chan.group) ?? []).filter((c) => c.id !== chan.id);
    if (remaining.length) groups!.set(chan.group, remaining);
    else groups?.delete(chan.group);
    await Promise.allSettled(this.inFlight.get(chan.id) ?? []);
    this.inFlight.delete(chan.id);
  }

  /** Resolves once every consumer group handled the message; a channel nobody subscribes to takes it as handled. */
  async publish(channelName: string, payload: unknown, opts: { headers?: Record<string, string> } = {}) {
    const groups = [...(this.subscribers.get(channelName)?.values() ?? [])];
    const turn = this.turn++;
    const outcomes = await Promise.allSettled(
      groups.map((chans) => {
        const chan = chans[turn % chans.length];
        const handled = Promise.resolve(chan.handler(payload, { payload, headers: opts.headers }));
        const tracked = this.inFlight.get(chan.id)!;
        tracked.add(handled);
        return handled.finally(() => tracked.delete(handled));
      }),
    );
    const reasons = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as unknown] : []));
    if (!reasons.length) return;
    if (reasons.length === 1) throw reasons[0];
    // Several groups failed: the facts any of them did not handle, unless one failed as a whole.
    const named = reasons.map(failedFactIdsOf);
    if (named.some((ids) => ids === null)) throw reasons[named.findIndex((ids) => ids === null)];
    const ids = [...new Set(named.flatMap((list) => list ?? []))];
    throw factsNotHandled(ids.map((id) => ({ id, reason: reasons[0] })));
  }
}
