import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, finishedJob } from "../../helpers/http";

/**
 * Scoring rules on a contact condition, through the real contacts service:
 * a contact holds the rule's points while it matches (given once per rule
 * and contact, taken back when it stops), current when the write is
 * answered; the segments see the old score first, score segments follow.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
const meta = () => ({ meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } });

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "jobs", "contacts", "segments", "scoring", "events"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const plan = (value: string) => ({
  match: "all",
  conditions: [{ field: "attributes.plan", operator: "eq", value }],
});
const scoreOf = async (id: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body.score as number;
const memberIds = async (segmentId: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/segments/${segmentId}/members?limit=100`)).body.data.map(
    (m: { id: string }) => m.id,
  );
async function newContact(attributes: Record<string, unknown>, email?: string): Promise<string> {
  const res = await ctx.owner.client.post(`${ctx.ws}/contacts`, {
    email: email ?? `c-${Math.random().toString(36).slice(2)}@example.test`,
    attributes,
  });
  expect(res.status).toBe(201);
  return res.body.id;
}
const setPlan = async (id: string, value: string) => {
  const res = await ctx.owner.client.patch(`${ctx.ws}/contacts/${id}`, { attributes: { plan: value } });
  expect(res.status).toBe(200);
};
const waitForJob = (jobId: string) => finishedJob(ctx.owner.client, ctx.ws, jobId);

test("a rule has exactly one of eventType and condition; a bad condition is 400 with its path", async () => {
  const post = (body: Record<string, unknown>) =>
    ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "R", points: 1, ...body });
  const both = await post({ eventType: "x", condition: plan("pro") });
  expect(both.status).toBe(400);
  expect(both.body.details[0].field).toBe("condition");
  const neither = await post({});
  expect(neither.status).toBe(400);
  expect(neither.body.details[0].field).toBe("eventType");
  const unknown = await post({
    condition: { match: "all", conditions: [{ field: "nope", operator: "eq", value: 1 }] },
  });
  expect(unknown.status).toBe(400);
  expect(unknown.body.details[0].field).toBe("condition.conditions[0].field");
  const score = await post({
    condition: { match: "all", conditions: [{ field: "score", operator: "gt", value: 5 }] },
  });
  expect(score.status).toBe(400);
  expect(score.body.details[0].field).toBe("condition.conditions[0].field");
  const where = await post({
    condition: plan("pro"),
    where: [{ field: "metadata.a", operator: "eq", value: 1 }],
  });
  expect(where.status).toBe(400);
  expect(where.body.details).toEqual([{ field: "where", message: "applies only to event rules" }]);
  const notObject = await post({ condition: "plan = pro" });
  expect(notObject.status).toBe(400);

  // The kind of a rule does not change.
  const eventRule = await post({ eventType: "x" });
  const patched = await ctx.owner.client.patch(`${ctx.ws}/scoring-rules/${eventRule.body.id}`, {
    condition: plan("pro"),
  });
  expect(patched.status).toBe(400);
  expect(patched.body.details[0].field).toBe("condition");
});

test("points are given when the contact comes to match and taken back when it stops, before the answer", async () => {
  // A contact that matches before the rule exists gets the points when the rule is created.
  const early = await newContact({ plan: "pro" });
  const created = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Pro plan",
    condition: plan("pro"),
    points: 20,
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ eventType: null, condition: plan("pro"), points: 20, decay: null });
  expect(await scoreOf(early)).toBe(20);

  const id = await newContact({ plan: "pro" });
  expect(await scoreOf(id)).toBe(20);
  // Another write while it still matches gives nothing more.
  await ctx.owner.client.patch(`${ctx.ws}/contacts/${id}`, { firstName: "Ada" });
  expect(await scoreOf(id)).toBe(20);
  await setPlan(id, "free");
  expect(await scoreOf(id)).toBe(0);
  await setPlan(id, "pro");
  expect(await scoreOf(id)).toBe(20);

  const history = (await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body.history;
  expect(history.map((h: { points: number; reason: string }) => [h.points, h.reason])).toEqual([
    [20, "Pro plan"],
    [-20, "Pro plan (condition no longer met)"],
    [20, "Pro plan"],
  ]);
  expect(history.every((h: { ruleId: string }) => h.ruleId === created.body.id)).toBe(true);

  // Idempotent per (rule, contact): repeated and concurrent evaluations give the points once.
  await Promise.all(
    Array.from({ length: 5 }, () =>
      app.broker.call("scoring.applyContactRules", { contactIds: [id] }, meta()),
    ),
  );
  expect(await scoreOf(id)).toBe(20);
  expect((await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body.history).toHaveLength(3);
});

test("segments see the score from before the change; score segments follow before the answer", async () => {
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Team plan",
    condition: plan("team"),
    points: 30,
  });
  const teams = await ctx.owner.client.post(`${ctx.ws}/segments`, { name: "Team", filter: plan("team") });
  const hot = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "Hot team",
    filter: {
      match: "all",
      conditions: [
        { field: "attributes.plan", operator: "eq", value: "team" },
        { field: "score", operator: "gte", value: 30 },
      ],
    },
  });
  const id = await newContact({ plan: "free" });
  await setPlan(id, "team");
  expect(await memberIds(teams.body.id)).toEqual([id]);
  expect(await memberIds(hot.body.id)).toEqual([id]);
  // The contact step entered "Team" with the old score; "Hot team" entered only at the score step.
  const sequelize = await database();
  const log = await sequelize.query<{ segment_id: string; change: string }>(
    `SELECT segment_id, change FROM segment_membership_log WHERE contact_id = $1 ORDER BY id`,
    { bind: [id], type: QueryTypes.SELECT },
  );
  expect(log).toEqual([
    { segment_id: teams.body.id, change: "entered" },
    { segment_id: hot.body.id, change: "entered" },
  ]);

  await setPlan(id, "free");
  expect(await scoreOf(id)).toBe(0);
  expect(await memberIds(hot.body.id)).toEqual([]);
});

test("a condition on events follows the events of its type", async () => {
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Repeat buyer",
    condition: { match: "all", conditions: [{ event: "order-c", operator: "performed", count: { gte: 2 } }] },
    points: 15,
  });
  const id = await newContact({});
  const order = () => ctx.owner.client.post(`${ctx.ws}/events`, { type: "order-c", contactId: id });
  expect((await order()).status).toBe(201);
  expect(await scoreOf(id)).toBe(0);
  expect((await order()).status).toBe(201);
  expect(await scoreOf(id)).toBe(15);
  expect((await order()).status).toBe(201);
  expect(await scoreOf(id)).toBe(15);
});

test("changing a rule's condition moves the points; an inactive rule leaves holdings alone", async () => {
  const rule = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Gold",
    condition: plan("gold"),
    points: 7,
  });
  const gold = await newContact({ plan: "gold" });
  const silver = await newContact({ plan: "silver" });
  expect([await scoreOf(gold), await scoreOf(silver)]).toEqual([7, 0]);
  const patched = await ctx.owner.client.patch(`${ctx.ws}/scoring-rules/${rule.body.id}`, {
    condition: plan("silver"),
  });
  expect(patched.status).toBe(200);
  expect(patched.body.condition).toEqual(plan("silver"));
  expect([await scoreOf(gold), await scoreOf(silver)]).toEqual([0, 7]);

  await ctx.owner.client.patch(`${ctx.ws}/scoring-rules/${rule.body.id}`, { active: false });
  await setPlan(silver, "bronze");
  expect(await scoreOf(silver)).toBe(7);
});

test("recalculation gives the scores live scoring reached, on randomised changes", async () => {
  // A workspace of its own: recalculation drops the points of the inactive rule above, by design.
  ctx = await ownerWithWorkspace(app.baseUrl);
  const values = ["basic", "plus", "max"];
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Plus",
    condition: plan("plus"),
    points: 5,
  });
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Max in FR",
    condition: {
      match: "all",
      conditions: [
        { field: "attributes.plan", operator: "eq", value: "max" },
        { field: "country", operator: "eq", value: "FR" },
      ],
    },
    points: -3,
  });
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const ids: string[] = [];
  for (let i = 0; i < 12; i += 1) ids.push(await newContact({ plan: values[random(3)] }));
  for (let step = 0; step < 30; step += 1) {
    const id = ids[random(ids.length)];
    const body = random(2)
      ? { attributes: { plan: values[random(3)] } }
      : { country: random(2) ? "FR" : "DE" };
    expect((await ctx.owner.client.patch(`${ctx.ws}/contacts/${id}`, body)).status).toBe(200);
  }
  const sequelize = await database();
  const scores = async () =>
    sequelize.query<{ id: string; score: number }>(
      `SELECT id, score FROM contacts WHERE workspace_id = $1 ORDER BY id`,
      { bind: [ctx.workspaceId], type: QueryTypes.SELECT },
    );
  const live = await scores();
  expect(live.some((c) => c.score !== 0)).toBe(true);
  const job = await ctx.owner.client.post(`${ctx.ws}/scoring-rules/recalculate`);
  const done = await waitForJob(job.body.jobId);
  expect(done.status).toBe("completed");
  expect(done.result.contactsChanged).toBe(0);
  expect(await scores()).toEqual(live);
});

test("condition and decay are in the OpenAPI description of the rule routes", async () => {
  const doc = (await app.http().get("/api/openapi")).body;
  const path = doc.paths["/api/workspaces/{workspaceId}/scoring-rules"].post;
  const body = path.requestBody.content["application/json"].schema;
  expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(["eventType", "condition", "decay"]));
  expect(body.required).toEqual(expect.arrayContaining(["name", "points"]));
  expect(body.required).not.toContain("eventType");
  expect(body.properties.decay.type).toEqual(["object", "null"]);
  expect(body.properties.decay.properties.days).toMatchObject({ type: "integer", minimum: 1 });
  expect(path.description).toMatch(/Exactly one of `eventType` and `condition`/);
  const patch = doc.paths["/api/workspaces/{workspaceId}/scoring-rules/{ruleId}"].patch;
  expect(Object.keys(patch.requestBody.content["application/json"].schema.properties)).toEqual(
    expect.arrayContaining(["condition", "decay"]),
  );
});
