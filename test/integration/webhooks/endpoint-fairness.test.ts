import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/**
 * One dispatcher with 6 slots, 2 per endpoint (lent beyond only while fewer than 4 are in flight, see
 * endpoint-borrowing.test.ts); a new endpoint starts at 1 in flight and gains one per 2xx. Attempts time out after
 * 10 s, longer than any wait here, so a held request stays open for the whole file (its slot goes back after
 * 500 ms, a 20th of the timeout); retries come 1 s and 2 s after a failure, and a failing endpoint's probes 0.5 s,
 * 1 s, 2 s, ... apart.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let failing = true;

const hits = (path: string) => receiver.received.filter((r) => r.path === path);

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "webhooks"],
    env: {
      WEBHOOK_CONCURRENCY: "6",
      WEBHOOK_ENDPOINT_CONCURRENCY: "2",
      WEBHOOK_TIMEOUT_MS: "10000",
      WEBHOOK_RETRY_DELAYS_MS: "1000,2000",
      WEBHOOK_POLL_MS: "200",
    },
  });
  receiver = await startReceiver((req) => {
    if (req.path === "/held") return "hang";
    if (req.path === "/flaky") return { status: failing ? 500 : 200, afterMs: 50 };
    return { status: 200 };
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(async () => {
  await receiver.close();
  await app.stop();
});

async function endpoint(path: string): Promise<string> {
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    url: receiver.url(path),
    events: ["none.test"],
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** Queue `n` deliveries per endpoint in one statement, the first endpoint's the oldest. */
async function queue(endpointIds: string[], n: number) {
  await (
    await database()
  ).query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at, created_at)
     SELECT gen_random_uuid()::text, :ws, ep.id, 'fair.test', 'OUTBOUND', '{"event":"fair.test","timestamp":"t","data":{}}',
            now() - interval '1 minute' + ep.n * interval '10 seconds' + g * interval '1 millisecond',
            now() - interval '1 minute' + ep.n * interval '10 seconds' + g * interval '1 millisecond'
       FROM unnest(CAST(:ids AS text[])) WITH ORDINALITY AS ep(id, n), generate_series(1, :n) g`,
    { replacements: { ws: ctx.workspaceId, ids: `{${endpointIds.join(",")}}`, n } },
  );
}

async function rows(endpointId: string) {
  return (await database()).query<{ success: boolean; attempt: number; claimed: boolean }>(
    `SELECT d.success, d.attempt, coalesce(q.claimed_until > now(), false) AS claimed
       FROM webhook_deliveries d LEFT JOIN webhook_delivery_queue q ON q.delivery_id = d.id WHERE d.endpoint_id = :endpointId`,
    { type: QueryTypes.SELECT, replacements: { endpointId } },
  );
}

test("an endpoint that holds its requests open has one of them open (it never answered); another endpoint's deliveries all go out meanwhile", async () => {
  const held = await endpoint("/held");
  const other = await endpoint("/other");
  // The held endpoint's 12 deliveries are the oldest: without the caps they would fill every slot for 10 s.
  await queue([held, other], 12);

  await waitFor(
    async () => (await rows(other)).every((r) => r.success),
    5000,
    "the other endpoint's deliveries",
  );
  expect(hits("/other")).toHaveLength(12);
  expect(hits("/held")).toHaveLength(1);
  // Claimed at most one row beyond the one in flight; the rest stays unclaimed for later claims or other replicas.
  const heldRows = await rows(held);
  expect(heldRows.filter((r) => r.claimed).length).toBeLessThanOrEqual(2);
  expect(heldRows.filter((r) => !r.claimed && r.attempt === 0).length).toBeGreaterThanOrEqual(10);
});

test("a failing endpoint is sent one delivery at a time, ever further apart, until it answers 2xx, then gets its 2 slots back", async () => {
  const flaky = await endpoint("/flaky");
  const steady = await endpoint("/steady");
  await queue([flaky, steady], 10);

  // Its requests never overlap, and each wait is about twice the one before (0.5 s, 1 s, 2 s).
  await waitFor(() => hits("/flaky").length >= 4, 8000, "four attempts at the failing endpoint");
  failing = false;
  const recoveredAt = hits("/flaky").length;
  const whileFailing = hits("/flaky").slice(0, recoveredAt);
  expect(whileFailing.map((r) => r.concurrent)).toEqual(whileFailing.map(() => 1));
  const gaps = whileFailing.slice(1, 4).map((r, i) => r.at - whileFailing[i].at);
  gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(500 * 2 ** i));
  gaps.forEach((gap, i) => expect(gap).toBeLessThan(500 * 2 ** i + 1000));
  await waitFor(
    async () => (await rows(steady)).every((r) => r.success),
    5000,
    "the steady endpoint's deliveries",
  );

  // Probes take the oldest due row, retries included: a row may have spent its three attempts during the outage.
  await waitFor(
    async () => (await rows(flaky)).every((r) => r.success || r.attempt === 3),
    8000,
    "the failing endpoint's deliveries after it recovered",
  );
  expect((await rows(flaky)).filter((r) => r.success).length).toBeGreaterThanOrEqual(8);
  // The first 2xx lifts the limit: requests overlap again.
  expect(
    hits("/flaky")
      .slice(recoveredAt)
      .some((r) => r.concurrent === 2),
  ).toBe(true);
});
