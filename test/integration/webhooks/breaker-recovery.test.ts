import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { startDispatchHarness, type DispatchHarness } from "./dispatch-harness";
import { waitFor } from "../../helpers/wait";

/**
 * The circuit breaker's probes take the oldest due delivery, retries
 * included (claims go by age, so a retry keeps its place ahead of the
 * deliveries queued after it), and an endpoint that recovers drains its
 * backlog at its full cap at once. Retries come 200 ms and 400 ms after a
 * failure; probes of a failing endpoint 100 ms, 200 ms, 400 ms apart.
 */
let harness: DispatchHarness;
let down = true;

beforeAll(async () => {
  harness = await startDispatchHarness(
    (req) => {
      if (req.path === "/first-fails")
        return { status: req.headers["x-webhook-attempt"] === "1" ? 500 : 200 };
      if (req.path === "/down") return { status: down ? 503 : 200, afterMs: 100 };
      return { status: 200 };
    },
    { WEBHOOK_RETRY_DELAYS_MS: "200,400" },
  );
});
afterAll(() => harness.stop());

async function delivered(endpointId: string): Promise<number> {
  const [row] = await (
    await database()
  ).query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = :endpointId AND success`,
    { replacements: { endpointId }, type: QueryTypes.SELECT },
  );
  return row.n;
}

test("an endpoint that fails every first attempt gets its whole backlog through on the retries", async () => {
  const id = await harness.endpoint("/first-fails");
  await harness.queue(id, 40);
  await waitFor(async () => (await delivered(id)) === 40, 30_000, "all 40 delivered");
  const attempts = harness.hits("/first-fails").map((r) => Number(r.headers["x-webhook-attempt"]));
  expect(attempts.filter((a) => a === 2)).toHaveLength(40);
  expect(attempts.filter((a) => a === 3)).toHaveLength(0);
  // The first retry went out within the first few probes, not after the whole backlog's first attempts.
  expect(attempts.indexOf(2)).toBeLessThan(10);
});

test("a recovered endpoint drains its backlog at its full cap, not one probe at a time", async () => {
  const id = await harness.endpoint("/down");
  await harness.queue(id, 30);
  await waitFor(() => harness.dispatcher.failingEndpoints.has(id), 5000, "the endpoint marked failing");
  await waitFor(() => harness.hits("/down").length >= 3, 5000, "a few probes, all refused");
  down = false;
  const recoveredAt = Date.now();
  await waitFor(async () => (await delivered(id)) === 30, 15_000, "the backlog delivered");
  const after = harness.hits("/down").filter((r) => r.at >= recoveredAt);
  // Two in flight at a time (the cap) from the first success on, each answer 100 ms: well under
  // the 30 × (100 ms + probe gap) one probe at a time would take.
  expect(Math.max(...after.map((r) => r.concurrent))).toBeGreaterThanOrEqual(2);
  expect(Date.now() - recoveredAt).toBeLessThan(3 * 1000);
});
