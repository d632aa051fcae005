import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** The chain with the real segments and scoring services: its effects are visible as soon as POST answers. */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "segments", "scoring", "events", "webhooks"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

test("a scoring rule and an event segment see the event before POST {ws}/events answers", async () => {
  const contactId = newId();
  await (
    await database()
  ).query(`INSERT INTO contacts (id, workspace_id, email) VALUES (:id, :ws, 'chain@example.test')`, {
    replacements: { id: contactId, ws: ctx.workspaceId },
  });
  const rule = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "buyers",
    eventType: "purchase",
    points: 10,
  });
  expect(rule.status).toBe(201);
  const segment = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "purchasers",
    type: "dynamic",
    filter: { match: "all", conditions: [{ event: "purchase", operator: "performed" }] },
  });
  expect(segment.status).toBe(201);
  expect(segment.body.memberCount).toBe(0);

  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, {
    type: "purchase",
    contactId,
    metadata: { amount: 5 },
  });
  expect(posted.status).toBe(201);

  const scores = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/scores`);
  expect(scores.status).toBe(200);
  expect(scores.body.score).toBe(10);
  expect(scores.body.history[0]).toMatchObject({ points: 10, eventId: posted.body.id });
  const members = await ctx.owner.client.get(`${ctx.ws}/segments/${segment.body.id}/members`);
  expect(members.body.data.map((m: { id: string }) => m.id)).toEqual([contactId]);
});

test("events posted together each move their own contact, score and log their own cause", async () => {
  const sequelize = await database();
  const contactIds = Array.from({ length: 12 }, () => newId());
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email) SELECT id, :ws, id || '@example.test' FROM unnest(ARRAY[:ids]::text[]) AS id`,
    { replacements: { ids: contactIds, ws: ctx.workspaceId } },
  );
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "signups",
    eventType: "signup",
    points: 3,
    where: [{ field: "metadata.plan", operator: "eq", value: "pro" }],
  });
  const segment = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "signed up",
    type: "dynamic",
    filter: { match: "all", conditions: [{ event: "signup", operator: "performed" }] },
  });
  // Sent at once, so they share the batched probes, transactions and scoring statements.
  const posted = await Promise.all(
    contactIds.map((contactId, i) =>
      ctx.owner.client.post(`${ctx.ws}/events`, {
        type: "signup",
        contactId,
        metadata: { plan: i % 2 ? "pro" : "free" },
      }),
    ),
  );
  expect(posted.map((p) => p.status)).toEqual(contactIds.map(() => 201));
  const log = await sequelize.query<{ contact_id: string; event_id: string }>(
    `SELECT contact_id, event_id FROM segment_membership_log WHERE segment_id = $1 AND change = 'entered'`,
    { bind: [segment.body.id], type: "SELECT" as never },
  );
  expect(new Map(log.map((r) => [r.contact_id, r.event_id]))).toEqual(
    new Map(contactIds.map((id, i) => [id, posted[i].body.id])),
  );
  const scores = await sequelize.query<{ id: string; score: number }>(
    `SELECT id, score FROM contacts WHERE id = ANY($1::text[])`,
    { bind: [contactIds], type: "SELECT" as never },
  );
  expect(new Map(scores.map((r) => [r.id, r.score]))).toEqual(
    new Map(contactIds.map((id, i) => [id, i % 2 ? 3 : 0])),
  );
});

test("rules and segments written anywhere, even straight into the tables, are seen by the very next event", async () => {
  const sequelize = await database();
  const contactId = newId();
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email) VALUES (:id, :ws, 'next@example.test')`,
    {
      replacements: { id: contactId, ws: ctx.workspaceId },
    },
  );
  const post = () => ctx.owner.client.post(`${ctx.ws}/events`, { type: "renewal", contactId });
  const score = async () =>
    (
      await sequelize.query<{ score: number }>(`SELECT score FROM contacts WHERE id = $1`, {
        bind: [contactId],
        type: "SELECT" as never,
      })
    )[0].score;
  // The chain's caches are warm and say: nothing reads `renewal`.
  expect((await post()).status).toBe(201);
  expect(await score()).toBe(0);

  // As another node would write them: no request to this one, no broadcast.
  const ruleId = newId();
  await sequelize.query(
    `INSERT INTO scoring_rules (id, workspace_id, name, event_type, points) VALUES ($1, $2, 'Renewal', 'renewal', 7)`,
    { bind: [ruleId, ctx.workspaceId] },
  );
  const segment = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "renewed",
    type: "dynamic",
    filter: { match: "all", conditions: [{ event: "renewal", operator: "performed", count: { gte: 2 } }] },
  });
  expect(segment.status).toBe(201);
  const second = await post();
  expect(second.status).toBe(201);
  expect(await score()).toBe(7);
  const members = await ctx.owner.client.get(`${ctx.ws}/segments/${segment.body.id}/members`);
  expect(members.body.data.map((m: { id: string }) => m.id)).toEqual([contactId]);

  await sequelize.query(`UPDATE scoring_rules SET active = false, updated_at = now() WHERE id = $1`, {
    bind: [ruleId],
  });
  expect((await post()).status).toBe(201);
  expect(await score()).toBe(7);
});
