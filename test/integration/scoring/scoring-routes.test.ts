import { SYSTEM } from "../../../lib/access";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { insertContact } from "../../helpers/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, finishedJob } from "../../helpers/http";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs", "segments", "scoring"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const contact = () => insertContact(ctx.workspaceId);

/** Store an event and score it as the chain would. */
async function scoreEvent(
  contactId: string,
  type: string,
  metadata: Record<string, unknown> = {},
  timestamp = new Date(),
) {
  const sequelize = await database();
  const id = newId();
  await sequelize.query(
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata, timestamp) VALUES ($1, $2, $3, $4, $5::jsonb, $6)`,
    { bind: [id, ctx.workspaceId, contactId, type, JSON.stringify(metadata), timestamp.toISOString()] },
  );
  await app.broker.call(
    "scoring.applyEvent",
    { eventId: id, contactId, type, metadata, timestamp },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  return id;
}

const scoreOf = async (id: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body.score as number;

const waitForJob = (jobId: string) => finishedJob(ctx.owner.client, ctx.ws, jobId);

test("rules CRUD", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Big purchase",
    eventType: "purchase",
    where: [{ field: "metadata.amount", operator: "gte", value: 100 }],
    points: 25,
    maxPerContact: 3,
    periodCap: { max: 1, days: 7 },
    workspaceId: "ignored",
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    name: "Big purchase",
    eventType: "purchase",
    where: [{ field: "metadata.amount", operator: "gte", value: 100 }],
    points: 25,
    maxPerContact: 3,
    periodCap: { max: 1, days: 7 },
    active: true,
  });
  const id = created.body.id;
  expect((await ctx.owner.client.get(`${ctx.ws}/scoring-rules/${id}`)).body.id).toBe(id);
  const list = await ctx.owner.client.get(`${ctx.ws}/scoring-rules`);
  expect(list.body.data.map((r: { id: string }) => r.id)).toContain(id);
  expect(list.body.pagination).toMatchObject({ page: 1, limit: 50 });

  const patched = await ctx.owner.client.patch(`${ctx.ws}/scoring-rules/${id}`, {
    points: -5,
    active: false,
    periodCap: null,
    where: null,
  });
  expect(patched.status).toBe(200);
  expect(patched.body).toMatchObject({
    points: -5,
    active: false,
    periodCap: null,
    where: null,
    maxPerContact: 3,
  });

  const bad = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Bad",
    eventType: "purchase",
    points: 1,
    where: [{ field: "email", operator: "eq", value: "x" }],
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("where[0].field");
  expect(
    (await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "No points", eventType: "x" })).status,
  ).toBe(400);

  expect((await ctx.owner.client.delete(`${ctx.ws}/scoring-rules/${id}`)).body).toEqual({ success: true });
  expect((await ctx.owner.client.get(`${ctx.ws}/scoring-rules/${id}`)).status).toBe(404);
});

test("rules match on where, respect caps, may subtract, and are idempotent per event", async () => {
  const cap = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Visit",
    eventType: "visit",
    points: 2,
    maxPerContact: 2,
  });
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Daily login",
    eventType: "login",
    points: 5,
    periodCap: { max: 1, days: 1 },
  });
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Expensive",
    eventType: "order",
    points: 30,
    where: [{ field: "metadata.amount", operator: "gt", value: 100 }],
  });
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "Refund", eventType: "refund", points: -7 });
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Off",
    eventType: "order",
    points: 1000,
    active: false,
  });

  const id = await contact();
  for (let i = 0; i < 3; i += 1) await scoreEvent(id, "visit");
  expect(await scoreOf(id)).toBe(4);

  const day = new Date("2030-01-01T10:00:00Z");
  await scoreEvent(id, "login", {}, day);
  await scoreEvent(id, "login", {}, new Date(day.getTime() + 3600_000));
  await scoreEvent(id, "login", {}, new Date(day.getTime() + 86_400_000));
  expect(await scoreOf(id)).toBe(14);

  await scoreEvent(id, "order", { amount: 50 });
  const big = await scoreEvent(id, "order", { amount: 150 });
  await scoreEvent(id, "refund");
  expect(await scoreOf(id)).toBe(37);

  // The same event again: nothing changes.
  await app.broker.call(
    "scoring.applyEvent",
    { eventId: big, contactId: id, type: "order", metadata: { amount: 150 } },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  const scores = await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`);
  expect(scores.body.score).toBe(37);
  expect(scores.body.history).toHaveLength(6);
  expect(scores.body.history[0]).toMatchObject({ points: -7, reason: "Refund" });
  expect(scores.body.history.filter((h: { ruleId: string }) => h.ruleId === cap.body.id)).toHaveLength(2);

  // Concurrent events for one contact respect the cap exactly.
  const other = await contact();
  await Promise.all(Array.from({ length: 6 }, () => scoreEvent(other, "visit")));
  expect(await scoreOf(other)).toBe(4);
});

test("manual adjustments re-evaluate score segments; recalculation rebuilds from events", async () => {
  const seg = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "Hot",
    filter: { match: "all", conditions: [{ field: "score", operator: "gte", value: 50 }] },
  });
  const id = await contact();
  const adjusted = await ctx.owner.client.post(`${ctx.ws}/contacts/${id}/scores`, {
    points: 60,
    reason: "met at fair",
  });
  expect(adjusted.status).toBe(201);
  expect(adjusted.body.score).toBe(60);
  expect(adjusted.body.history[0]).toMatchObject({
    points: 60,
    ruleId: null,
    eventId: null,
    reason: "met at fair",
  });
  expect((await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}`)).body.memberCount).toBe(1);
  const down = await ctx.owner.client.post(`${ctx.ws}/contacts/${id}/scores`, { points: -20 });
  expect(down.body.score).toBe(40);
  expect((await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}`)).body.memberCount).toBe(0);

  expect((await ctx.owner.client.post(`${ctx.ws}/contacts/${id}/scores`, { points: 0 })).status).toBe(400);
  expect((await ctx.owner.client.post(`${ctx.ws}/contacts/missing/scores`, { points: 1 })).status).toBe(404);
  expect((await ctx.owner.client.get(`${ctx.ws}/contacts/missing/scores`)).status).toBe(404);

  // A rule created after the events: recalculation scores the past (and keeps the manual entries).
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata) SELECT gen_random_uuid()::text, $1, $2, 'webinar', '{}' FROM generate_series(1, 3)`,
    { bind: [ctx.workspaceId, id] },
  );
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Webinar",
    eventType: "webinar",
    points: 5,
    maxPerContact: 2,
  });
  // Drift: someone wrote the score column directly.
  await sequelize.query(`UPDATE contacts SET score = 999 WHERE id = $1`, { bind: [id] });
  const job = await ctx.owner.client.post(`${ctx.ws}/scoring-rules/recalculate`);
  expect(job.status).toBe(202);
  const done = await waitForJob(job.body.jobId);
  expect(done).toMatchObject({ type: "scoring.recalculate", status: "completed" });
  expect(done.result.contactsChanged).toBeGreaterThanOrEqual(1);
  expect(await scoreOf(id)).toBe(50);
  expect((await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}`)).body.memberCount).toBe(1);
});

test("scopes: rules need segments.*, scores need contacts.*", async () => {
  const id = await contact();
  const key = await ctx.owner.client.post(`${ctx.ws}/keys`, {
    name: "seg",
    scopes: ["segments.read", "segments.write"],
  });
  const client = app.http();
  client.bearer = key.body.key;
  expect((await client.get(`${ctx.ws}/scoring-rules`)).status).toBe(200);
  expect((await client.get(`${ctx.ws}/contacts/${id}/scores`)).status).toBe(403);
  const contactsKey = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "c", scopes: ["contacts.read"] });
  client.bearer = contactsKey.body.key;
  expect((await client.get(`${ctx.ws}/contacts/${id}/scores`)).status).toBe(200);
  expect((await client.post(`${ctx.ws}/contacts/${id}/scores`, { points: 1 })).status).toBe(403);
  expect((await client.get(`${ctx.ws}/scoring-rules`)).status).toBe(403);
});
