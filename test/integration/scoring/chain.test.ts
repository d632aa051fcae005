import type { Context } from "moleculer";
import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * The activity chain of spec 6.3 through the real `events.record`:
 * segments see the score from before the event, then the score rules run,
 * then segments that use `score` are evaluated once more. Retries of the
 * same event change nothing.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
const calls: string[] = [];
const seenByCampaigns: Array<{ eventId: string; score: number; segments: string[] }> = [];

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs", "segments", "scoring", "events"] });
  // Record the order in which the chain's steps are called (Context.call goes through broker.call).
  const call = app.broker.call.bind(app.broker);
  app.broker.call = ((actionName: string, params?: { scoreChanged?: boolean }, opts?: object) => {
    if (actionName === "segments.evaluateContact")
      calls.push(params?.scoreChanged ? "segments(score)" : "segments(event)");
    if (actionName === "campaigns.handleEvent") calls.push("campaigns");
    if (actionName === "scoring.applyEvent") calls.push("scoring");
    return call(actionName, params, opts);
  }) as typeof app.broker.call;
  // A stand-in for the campaigns step (no campaigns service exists yet): it records what a
  // campaign trigger would see when the chain reaches it.
  app.broker.createService({
    name: "campaigns",
    actions: {
      async handleEvent(c: Context<{ id: string; contactId: string }>) {
        const sequelize = await database();
        const [row] = await sequelize.query<{ score: number; segments: string[] }>(
          `SELECT score, ARRAY(SELECT segment_id FROM segment_members WHERE contact_id = $1 ORDER BY segment_id) AS segments
             FROM contacts WHERE id = $1`,
          { bind: [c.params.contactId], type: QueryTypes.SELECT },
        );
        seenByCampaigns.push({ eventId: c.params.id, ...row });
      },
    },
  });
  await app.broker.waitForServices(["campaigns"], 5000);
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

async function contact(score = 0): Promise<string> {
  const sequelize = await database();
  const id = newId();
  await sequelize.query(`INSERT INTO contacts (id, workspace_id, email, score) VALUES ($1, $2, $3, $4)`, {
    bind: [id, ctx.workspaceId, `${id}@example.test`, score],
  });
  return id;
}

const segment = async (name: string, conditions: unknown[]) => {
  const res = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name,
    filter: { match: "all", conditions },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
};

async function logOf(eventId: string) {
  const sequelize = await database();
  return sequelize.query<{ segment_id: string; change: string }>(
    `SELECT segment_id, change FROM segment_membership_log WHERE event_id = $1 ORDER BY id`,
    { bind: [eventId], type: QueryTypes.SELECT },
  );
}

test("segments see the score from before the event; score segments follow before the answer", async () => {
  const rule = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Purchase",
    eventType: "purchase",
    points: 10,
  });
  expect(rule.status).toBe(201);
  const buyers = await segment("Buyers", [{ event: "purchase", operator: "performed" }]);
  const high = await segment("High", [{ field: "score", operator: "gte", value: 10 }]);
  // Evaluated at the event step with the old score (no), then at the score step (yes).
  const both = await segment("Buyer at 10", [
    { event: "purchase", operator: "performed" },
    { field: "score", operator: "gte", value: 10 },
  ]);
  const id = await contact();

  calls.length = 0;
  const res = await ctx.owner.client.post(`${ctx.ws}/events`, {
    type: "purchase",
    contactId: id,
    metadata: { amount: 5 },
  });
  expect(res.status).toBe(201);
  expect(calls).toEqual(["segments(event)", "campaigns", "scoring", "segments(score)"]);
  // The campaign trigger saw the new membership (Buyers) and the score from before the event.
  expect(seenByCampaigns.find((s) => s.eventId === res.body.id)).toEqual({
    eventId: res.body.id,
    score: 0,
    segments: [buyers],
  });

  // The log, in insertion order: the event step entered Buyers only; the score step entered the score segments.
  const log = await logOf(res.body.id);
  expect(log[0]).toEqual({ segment_id: buyers, change: "entered" });
  expect(
    log
      .slice(1)
      .map((l) => l.segment_id)
      .sort(),
  ).toEqual([high, both].sort());
  expect(log.slice(1).every((l) => l.change === "entered")).toBe(true);

  // The answer came after the chain: a following read sees every effect.
  const scores = await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`);
  expect(scores.body.score).toBe(10);
  expect(scores.body.history).toEqual([
    {
      points: 10,
      ruleId: rule.body.id,
      eventId: res.body.id,
      reason: "Purchase",
      createdAt: expect.any(String),
    },
  ]);
  for (const s of [buyers, high, both])
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${s}`)).body.memberCount).toBe(1);

  // A retried event (same id through the chain's steps) changes nothing.
  const meta = { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } };
  const again = await app.broker.call(
    "scoring.applyEvent",
    {
      eventId: res.body.id,
      contactId: id,
      type: "purchase",
      metadata: { amount: 5 },
      timestamp: res.body.timestamp,
    },
    meta,
  );
  expect(again).toMatchObject({ scoreBefore: 10, score: 10, applied: [] });
  expect(
    await app.broker.call("segments.evaluateContact", { contactId: id, eventId: res.body.id }, meta),
  ).toEqual({
    entered: [],
    exited: [],
  });
  expect((await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body.history).toHaveLength(1);
  expect(await logOf(res.body.id)).toHaveLength(3);
});

test("a score drop through the chain makes the contact exit score segments", async () => {
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Complaint",
    eventType: "complaint",
    points: -15,
  });
  const high = await segment("High 2", [{ field: "score", operator: "gte", value: 10 }]);
  const id = await contact(12);
  await app.broker.call(
    "segments.evaluateContacts",
    { contactIds: [id] },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  expect(
    (await ctx.owner.client.get(`${ctx.ws}/segments/${high}/members`)).body.data.map(
      (m: { id: string }) => m.id,
    ),
  ).toContain(id);

  calls.length = 0;
  const res = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "complaint", contactId: id });
  expect(res.status).toBe(201);
  expect(calls).toEqual(["segments(event)", "campaigns", "scoring", "segments(score)"]);
  const log = await logOf(res.body.id);
  expect(log).toContainEqual({ segment_id: high, change: "exited" });
  expect(log.every((l) => l.change === "exited")).toBe(true);
  expect((await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body.score).toBe(-3);
});
