import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { publishDomainEvent } from "../../helpers/facts";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/** Two brokers (two replicas of the webhooks service) on one database. */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let a: TestApp;
let b: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const stopped = new Set<TestApp>();
const env = {
  WEBHOOK_LEASE_MS: "2000",
  WEBHOOK_POLL_MS: "200",
  WEBHOOK_RETRY_DELAYS_MS: "200,400",
  WEBHOOK_TIMEOUT_MS: "10000",
};

async function deliveryRow(event: string) {
  const rows = await (
    await database()
  ).query<{ id: string; claimed_by: string | null; success: boolean; attempt: number }>(
    // The node holding the queued row's lease, or once settled, the one whose attempt was recorded.
    `SELECT d.id, coalesce(q.claimed_by, d.claimed_by) AS claimed_by, d.success, d.attempt
       FROM webhook_deliveries d LEFT JOIN webhook_delivery_queue q ON q.delivery_id = d.id WHERE d.event = :event`,
    { type: QueryTypes.SELECT, replacements: { event } },
  );
  return rows[0];
}

beforeAll(async () => {
  db = await createTestDatabase();
  a = await startApp({
    databaseUrl: db.url,
    services: ["api", "auth", "workspaces", "webhooks"],
    broker: { nodeID: "node-a" },
    env,
  });
  b = await startApp({
    databaseUrl: db.url,
    services: ["webhooks"],
    withoutGateway: true,
    broker: { nodeID: "node-b" },
    env,
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  for (const app of [b, a]) if (app && !stopped.has(app)) await app.broker.stop();
  await db.drop();
});

test("a broker stopped mid-delivery leaves the delivery to the other broker, which finishes it", async () => {
  const ctx = await ownerWithWorkspace(a.baseUrl);
  const ep = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    url: receiver.url(),
    events: ["failover.test"],
  });
  expect(ep.status).toBe(201);
  receiver.setBehaviour((_r, index) => (index === 0 ? "hang" : { status: 200, body: "done" }));

  await publishDomainEvent(b.broker, ctx.workspaceId, "failover.test", { n: 1 });
  await waitFor(() => receiver.received.length === 1, 5000, "the first request");
  const claimed = await deliveryRow("failover.test");
  const victim = claimed.claimed_by === "node-a" ? a : b;
  const survivor = victim === a ? "node-b" : "node-a";
  expect(["node-a", "node-b"]).toContain(claimed.claimed_by);

  await victim.broker.stop();
  stopped.add(victim);

  await waitFor(() => receiver.received.length === 2, 8000, "the survivor's request");
  const [first, second] = receiver.received;
  expect(second.headers["x-webhook-delivery"]).toBe(first.headers["x-webhook-delivery"]);
  expect(second.headers["x-webhook-delivery"]).toBe(claimed.id);
  // The interrupted attempt was never recorded, so the survivor makes it again.
  expect(second.headers["x-webhook-attempt"]).toBe("1");
  const done = await waitFor(
    async () => {
      const row = await deliveryRow("failover.test");
      return row.success ? row : null;
    },
    5000,
    "success recorded",
  );
  expect(done).toMatchObject({ claimed_by: survivor, success: true, attempt: 1 });
});

test("a claim left by a replica that died without giving it back is taken over when its lease ends", async () => {
  // The gateway may be the broker stopped above, so the claim is written directly.
  const sequelize = await database();
  const [{ workspace_id: workspaceId }] = await sequelize.query<{ workspace_id: string }>(
    `SELECT workspace_id FROM webhook_endpoints LIMIT 1`,
    { type: QueryTypes.SELECT },
  );
  receiver.setBehaviour(() => ({ status: 200 }));
  const before = receiver.received.length;
  // The delivery and its claimed queue row in one statement, so no dispatcher sees the row unclaimed.
  await sequelize.query(
    `WITH d AS (
       INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body)
       SELECT 'dead-claim', :workspaceId, id, 'lease.test', 'OUTBOUND', '{"event":"lease.test","timestamp":"t","data":{}}'
         FROM webhook_endpoints WHERE workspace_id = :workspaceId LIMIT 1
       RETURNING id, endpoint_id, created_at
     )
     INSERT INTO webhook_delivery_queue (delivery_id, endpoint_id, created_at, next_attempt_at, claimed_until, claim_token, claimed_by)
     SELECT id, endpoint_id, created_at, now(), now() + interval '1500 milliseconds', 'dead-token', 'node-dead' FROM d`,
    { replacements: { workspaceId } },
  );
  const insertedAt = Date.now();
  await waitFor(() => receiver.received.length === before + 1, 6000, "the takeover");
  const got = receiver.received.at(-1)!;
  expect(got.headers["x-webhook-delivery"]).toBe("dead-claim");
  expect(got.at - insertedAt).toBeGreaterThanOrEqual(1400);
  await waitFor(async () => (await deliveryRow("lease.test"))?.success, 3000, "success recorded");
});
