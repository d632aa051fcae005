import { Errors, type ServiceSchema } from "moleculer";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { systemCall } from "../../../lib/system-call";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * A chain step whose service is unreachable after the event was stored (a
 * transporter outage, a node gone): the request answers 503, and the stored
 * event's chain runs again (`events.retryChains`) until it completes, each
 * step once in effect. The campaigns step here is a stand-in that can be
 * made unreachable; segments and scoring are the real services.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let campaignsDown = false;
const campaignsSaw: string[] = [];
const campaignsStandIn: ServiceSchema = {
  name: "campaigns",
  actions: {
    handleEvent(call) {
      if (campaignsDown) throw new Errors.ServiceNotAvailableError({ action: "campaigns.handleEvent" });
      campaignsSaw.push((call.params as { id: string }).id);
      return { enrolled: 0, resumed: 0, completed: 0 };
    },
  },
};

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "segments", "scoring", "events"],
    env: { EVENT_CHAIN_RETRY_DELAYS_MS: "100,200" },
  });
  app.broker.createService(campaignsStandIn);
  await app.broker.waitForServices(["campaigns"], 10_000);
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const sql = async <T>(text: string, bind: unknown[]) =>
  (await (await database()).query(text, { bind }))[0] as T[];
const retryOf = async (eventId: string) =>
  (
    await sql<{ attempts: number; last_error: string }>(
      `SELECT attempts, last_error FROM event_chain_retries WHERE event_id = $1`,
      [eventId],
    )
  )[0];

async function newContact(): Promise<string> {
  const contactId = newId();
  await sql(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, $3)`, [
    contactId,
    ctx.workspaceId,
    `${contactId}@example.test`,
  ]);
  return contactId;
}

test("an unreachable step: 503, the event kept, its chain run again until it completes, the score given once", async () => {
  const rule = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "renewals",
    eventType: "renewal",
    points: 7,
  });
  expect(rule.status).toBe(201);
  const contactId = await newContact();

  campaignsDown = true;
  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "renewal", contactId });
  expect(posted.status).toBe(503);
  expect(posted.body.code).toBe("SERVICE_UNAVAILABLE");
  const [stored] = await sql<{ id: string }>(`SELECT id FROM events WHERE contact_id = $1`, [contactId]);
  expect(stored).toBeDefined();
  // The chain stopped at campaigns: no score yet.
  expect((await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/scores`)).body.score).toBe(0);

  // Still down: the retries fail, counted, the error kept, and the queue's figures show the row.
  const failing = await waitFor(
    async () => {
      const row = await retryOf(stored.id);
      return row && row.attempts >= 2 ? row : undefined;
    },
    10_000,
    "two failed retries",
  );
  expect(failing.last_error).toMatch(/campaigns\.handleEvent/);
  const figures =
    await app.broker.call<Array<{ queue: string; due: number; waiting: number }>>("events.queueStats");
  const queue = figures.find((f) => f.queue === "event_chain_retries")!;
  expect(queue.due + queue.waiting).toBeGreaterThanOrEqual(1);

  campaignsDown = false;
  await waitFor(async () => !(await retryOf(stored.id)), 10_000, "the retry to complete");
  expect(campaignsSaw).toContain(stored.id);
  const scores = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/scores`);
  expect(scores.body.score).toBe(7);
  expect(scores.body.history.filter((h: { eventId: string }) => h.eventId === stored.id)).toHaveLength(1);
});

test("a chain that completes leaves nothing queued; a queued retry goes with its event", async () => {
  const contactId = await newContact();
  const ok = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "visit", contactId });
  expect(ok.status).toBe(201);
  expect(await retryOf(ok.body.id)).toBeUndefined();

  campaignsDown = true;
  const failed = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "visit", contactId });
  expect(failed.status).toBe(503);
  const [stored] = await sql<{ id: string }>(`SELECT id FROM events WHERE contact_id = $1 AND id <> $2`, [
    contactId,
    ok.body.id,
  ]);
  expect(await retryOf(stored.id)).toBeDefined();
  await sql(`DELETE FROM contacts WHERE id = $1`, [contactId]);
  expect(await retryOf(stored.id)).toBeUndefined();
  campaignsDown = false;
});

test("an event with its caller's own id recorded again (one by one or in a batch): stored once, its chain run once", async () => {
  const rule = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "replies",
    eventType: "reply",
    points: 3,
  });
  expect(rule.status).toBe(201);
  const contactId = await newContact();
  const [first, second] = [newId(), newId()];
  const record = (id: string) =>
    systemCall(app.broker, ctx.workspaceId, "events.record", { id, type: "reply", contactId });
  const stored = (await record(first)) as { id: string; timestamp: string };
  const again = (await record(first)) as { id: string; timestamp: string };
  expect(again).toEqual(stored);
  const batch = (await systemCall(app.broker, ctx.workspaceId, "events.recordBatch", {
    events: [
      { id: first, type: "reply", contactId },
      { id: second, type: "reply", contactId },
    ],
  })) as Array<{ id: string } | null>;
  expect(batch.map((e) => e?.id)).toEqual([first, second]);
  // A contact not in the workspace is still refused, with an id of its own or not.
  await expect(
    systemCall(app.broker, ctx.workspaceId, "events.record", {
      id: newId(),
      type: "reply",
      contactId: newId(),
    }),
  ).rejects.toMatchObject({ code: 404 });
  expect(
    (await sql<{ id: string }>(`SELECT id FROM events WHERE contact_id = $1 ORDER BY id`, [contactId]))
      .map((e) => e.id)
      .sort(),
  ).toEqual([first, second].sort());
  expect((await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/scores`)).body.score).toBe(6);
});

test("a step's service gone from the registry after the node saw it (NATS away, its nodes dropped): 503 and retried, not skipped", async () => {
  const contactId = await newContact();
  await app.broker.destroyService(app.broker.getLocalService("campaigns")!);
  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "visit", contactId });
  expect([posted.status, posted.body.code]).toEqual([503, "SERVICE_UNAVAILABLE"]);
  const [stored] = await sql<{ id: string }>(`SELECT id FROM events WHERE contact_id = $1`, [contactId]);
  await waitFor(async () => (await retryOf(stored.id))?.attempts >= 1, 10_000, "a failed retry");
  expect((await retryOf(stored.id)).last_error).toMatch(/campaigns\.handleEvent/);

  app.broker.createService(campaignsStandIn);
  await app.broker.waitForServices(["campaigns"], 10_000);
  await waitFor(async () => !(await retryOf(stored.id)), 10_000, "the retry to complete");
  expect(campaignsSaw).toContain(stored.id);
});
