import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { startDispatchHarness, type DispatchHarness } from "./dispatch-harness";
import { waitFor } from "../../helpers/wait";

/**
 * One dispatcher with 6 slots, 2 per endpoint; slots no one else needs are lent to endpoints answering fast
 * (every answer within a 20th of the 10 s timeout, 500 ms), up to 4 in flight (one cap's worth stays free).
 * Each test uses its own endpoints; the borrowing one of the second keeps sending (at its cap or less) during
 * the later ones, whose assertions allow for it.
 */
let h: DispatchHarness;
let dispatcher: DispatchHarness["dispatcher"];

const hits = (path: string) => h.hits(path);
const maxConcurrent = (path: string) => Math.max(...hits(path).map((r) => r.concurrent));
const endpoint = (path: string) => h.endpoint(path);
const queue = (endpointId: string, n: number) => h.queue(endpointId, n);

beforeAll(async () => {
  h = await startDispatchHarness(
    (req) => {
      if (req.path === "/held") return "hang";
      if (req.path === "/slow") return { status: 200, afterMs: 700 };
      if (req.path.startsWith("/broken")) return { status: 500, afterMs: 100 };
      return { status: 200, afterMs: req.path === "/busy" ? 100 : 30 };
    },
    { WEBHOOK_RETRY_DELAYS_MS: "100,100" },
  );
  ({ dispatcher } = h);
});
afterAll(() => h.stop());

async function counts(endpointId: string) {
  const [row] = await (
    await database()
  ).query<{ sent: string; queued: string }>(
    `SELECT count(*) FILTER (WHERE success) AS sent, count(*) FILTER (WHERE next_attempt_at IS NOT NULL) AS queued
       FROM webhook_deliveries WHERE endpoint_id = :endpointId`,
    { type: QueryTypes.SELECT, replacements: { endpointId } },
  );
  return { sent: Number(row.sent), queued: Number(row.queued) };
}

test("an endpoint alone and answering fast borrows the idle slots beyond its cap, all but one cap's worth", async () => {
  const alone = await endpoint("/alone");
  await queue(alone, 40);
  await waitFor(async () => (await counts(alone)).sent === 40, 10_000, "the lone endpoint's deliveries");
  expect(hits("/alone")).toHaveLength(40);
  expect(maxConcurrent("/alone")).toBe(4);
});

test("borrowed slots go back: an endpoint with new deliveries gets its cap at once beside a borrowing one", async () => {
  // 4 in flight at 100 ms: about 10 s of work for the borrowing endpoint, which keeps it busy throughout.
  const busy = await endpoint("/busy");
  await queue(busy, 400);
  await waitFor(() => hits("/busy").some((r) => r.concurrent === 4), 5000, "the busy endpoint to borrow");

  const newcomer = await endpoint("/newcomer");
  const queuedAt = Date.now();
  await queue(newcomer, 20);
  await waitFor(async () => (await counts(newcomer)).sent === 20, 5000, "the newcomer's deliveries");
  // 20 answers of 30 ms, 2 at a time: it never waited for the busy endpoint's borrowed slots.
  expect(Date.now() - queuedAt).toBeLessThan(2500);
  expect(maxConcurrent("/newcomer")).toBe(2);
  expect((await counts(busy)).queued).toBeGreaterThan(0);
});

test("a failing endpoint leaves the failing set once its deliveries are out of attempts, or once it is deleted", async () => {
  const exhausted = await endpoint("/broken-a");
  await queue(exhausted, 2);
  await waitFor(() => dispatcher.failingEndpoints.has(exhausted), 5000, "the endpoint to be failing");
  // 3 attempts each (100 ms apart), then nothing is queued for it any more.
  await waitFor(
    async () => (await counts(exhausted)).queued === 0,
    5000,
    "its deliveries to run out of attempts",
  );
  await waitFor(
    () => !dispatcher.failingEndpoints.has(exhausted),
    2000,
    "the endpoint to leave the failing set",
  );

  const deleted = await endpoint("/broken-b");
  await queue(deleted, 50);
  await waitFor(() => dispatcher.failingEndpoints.has(deleted), 5000, "the endpoint to be failing");
  expect((await counts(deleted)).queued).toBeGreaterThan(0);
  expect((await h.ctx.owner.client.delete(`${h.ctx.ws}/webhooks/${deleted}`)).status).toBe(200);
  await waitFor(
    () => !dispatcher.failingEndpoints.has(deleted),
    2000,
    "the deleted endpoint to leave the failing set",
  );
  expect(dispatcher.failingEndpoints.size).toBe(0);
});

test("an endpoint that answers slowly or not at all stays at its cap, even with slots idle", async () => {
  const slow = await endpoint("/slow");
  const held = await endpoint("/held");
  await queue(slow, 6);
  await queue(held, 6);
  // 700 ms answers at 1, then 2 in flight (slow start); borrowing would have sent them in two rounds.
  await waitFor(async () => (await counts(slow)).sent === 6, 5000, "the slow endpoint's deliveries");
  expect(maxConcurrent("/slow")).toBe(2);
  // Never answered: slow start keeps it at its first request.
  expect(hits("/held")).toHaveLength(1);
});
