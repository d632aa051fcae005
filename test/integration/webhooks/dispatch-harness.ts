import { database } from "../../../lib/database";
import type { Dispatcher } from "../../../services/webhooks/dispatcher";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { startReceiver, type Behaviour } from "../../helpers/receiver";

/**
 * A webhooks service with a small dispatcher (6 slots, 2 per endpoint, a 10 s
 * timeout, so a 500 ms "fast" threshold), a real receiver answering by
 * `behaviour`, and a workspace owner: for tests of how the dispatcher shares
 * its slots. Rows are queued straight in the table, due at once.
 */
export async function startDispatchHarness(behaviour: Behaviour, env: Record<string, string> = {}) {
  const app: TestApp = await startApp({
    services: ["api", "auth", "workspaces", "webhooks"],
    env: {
      WEBHOOK_CONCURRENCY: "6",
      WEBHOOK_ENDPOINT_CONCURRENCY: "2",
      WEBHOOK_TIMEOUT_MS: "10000",
      WEBHOOK_POLL_MS: "200",
      ...env,
    },
  });
  const receiver = await startReceiver(behaviour);
  const ctx = await ownerWithWorkspace(app.baseUrl);
  const { dispatcher } = app.broker.getLocalService("webhooks") as unknown as { dispatcher: Dispatcher };
  return {
    ctx,
    receiver,
    dispatcher,
    hits: (path: string) => receiver.received.filter((r) => r.path === path),

    /** An OUTBOUND endpoint to the receiver's `path` (subscribed to nothing: its rows are queued by `queue`). */
    async endpoint(path: string): Promise<string> {
      const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
        url: receiver.url(path),
        events: ["none.test"],
      });
      if (res.status !== 201) throw new Error(`endpoint ${path}: ${res.status}`);
      return res.body.id;
    },

    /** Queue `n` deliveries for an endpoint, due now, oldest first, and wake the dispatcher. */
    async queue(endpointId: string, n: number, event = "dispatch.test") {
      await (
        await database()
      ).query(
        `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at, created_at)
         SELECT gen_random_uuid()::text, :ws, :endpointId, :event, 'OUTBOUND',
                json_build_object('event', :event, 'timestamp', 't', 'data', '{}'::json)::text,
                now() - interval '1 minute' + g * interval '1 millisecond',
                now() - interval '1 minute' + g * interval '1 millisecond'
           FROM generate_series(1, :n) g`,
        { replacements: { ws: ctx.workspaceId, endpointId, n, event } },
      );
      dispatcher.wake();
    },

    async stop() {
      await receiver.close();
      await app.stop();
    },
  };
}

export type DispatchHarness = Awaited<ReturnType<typeof startDispatchHarness>>;
