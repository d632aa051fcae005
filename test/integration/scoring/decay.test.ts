import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { insertContact } from "../../helpers/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, finishedJob } from "../../helpers/http";

/**
 * Score decay: an event rule's points expire `decay.days` after their event,
 * by the claimed pass `scoring.applyDecay` (service timer and cron tick).
 * Time is moved by moving the stored times back, never by waiting.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
const CRON_SECRET = "cron-secret-for-decay-tests-0123456789";
const DAY = 86_400_000;
const meta = () => ({ meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } });

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "jobs", "segments", "scoring", "cron"],
    env: { CRON_SECRET },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const contact = () => insertContact(ctx.workspaceId);

/** Store an event and score it as the chain would. */
async function scoreEvent(contactId: string, type: string, timestamp = new Date()) {
  const sequelize = await database();
  const id = newId();
  await sequelize.query(
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata, timestamp) VALUES ($1, $2, $3, $4, '{}', $5)`,
    { bind: [id, ctx.workspaceId, contactId, type, timestamp.toISOString()] },
  );
  await app.broker.call("scoring.applyEvent", { eventId: id, contactId, type, timestamp }, meta());
  return id;
}

/** Pretend `days` passed for a contact: its events and score entries move back in time. */
async function age(contactId: string, days: number) {
  const sequelize = await database();
  const shift = { bind: [contactId, days] };
  await sequelize.query(
    `UPDATE events SET timestamp = timestamp - make_interval(days => $2) WHERE contact_id = $1`,
    shift,
  );
  await sequelize.query(
    `UPDATE score_history SET event_at = event_at - make_interval(days => $2),
                              decays_at = decays_at - make_interval(days => $2) WHERE contact_id = $1`,
    shift,
  );
}

const scores = async (id: string) => (await ctx.owner.client.get(`${ctx.ws}/contacts/${id}/scores`)).body;
const rule = async (body: Record<string, unknown>) => {
  const res = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, body);
  expect(res.status).toBe(201);
  return res.body;
};

const waitForJob = (jobId: string) => finishedJob(ctx.owner.client, ctx.ws, jobId);

test("decay is part of a rule, shown and validated", async () => {
  const created = await rule({ name: "Visit", eventType: "visit-d", points: 3, decay: { days: 30 } });
  expect(created).toMatchObject({ eventType: "visit-d", condition: null, decay: { days: 30 } });
  const patched = await ctx.owner.client.patch(`${ctx.ws}/scoring-rules/${created.id}`, { decay: null });
  expect(patched.body.decay).toBeNull();
  const bad = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Bad",
    eventType: "x",
    points: 1,
    decay: { days: 0 },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("decay.days");
  const onCondition = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Bad",
    condition: { match: "all", conditions: [{ field: "email", operator: "is_set" }] },
    points: 1,
    decay: { days: 3 },
  });
  expect(onCondition.status).toBe(400);
  expect(onCondition.body.details).toEqual([{ field: "decay", message: "applies only to event rules" }]);
});

test("points expire N days after their event, once; score segments follow; recalculation agrees", async () => {
  const purchase = await rule({ name: "Purchase", eventType: "purchase-d", points: 10, decay: { days: 7 } });
  await rule({ name: "Signup", eventType: "signup-d", points: 5 });
  const hot = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "Hot (decay)",
    filter: { match: "all", conditions: [{ field: "score", operator: "gte", value: 15 }] },
  });
  const id = await contact();
  const event = await scoreEvent(id, "purchase-d");
  await scoreEvent(id, "signup-d");
  expect((await scores(id)).score).toBe(15);
  expect((await ctx.owner.client.get(`${ctx.ws}/segments/${hot.body.id}`)).body.memberCount).toBe(1);

  // Not due yet: nothing happens.
  await app.broker.call("scoring.applyDecay");
  expect((await scores(id)).score).toBe(15);

  // Six days later: still not due; eight days later: the purchase's points are gone, the signup's stay.
  await age(id, 6);
  await app.broker.call("scoring.applyDecay");
  expect((await scores(id)).score).toBe(15);
  await age(id, 2);
  const pass = (await app.broker.call("scoring.applyDecay")) as { contacts: number; points: number };
  expect(pass.contacts).toBeGreaterThanOrEqual(1);
  const after = await scores(id);
  expect(after.score).toBe(5);
  expect(after.history[0]).toMatchObject({ points: -10, ruleId: purchase.id, reason: "decay: Purchase" });
  expect(after.history).toHaveLength(3);
  // The score segment saw the drop before the pass answered.
  expect((await ctx.owner.client.get(`${ctx.ws}/segments/${hot.body.id}`)).body.memberCount).toBe(0);

  // Never twice: another pass (here through the cron tick) and a retried event change nothing.
  const tick = await app.http().get("/api/cron/tick", { bearer: CRON_SECRET });
  expect(tick.status).toBe(200);
  expect(tick.body.results["scoring.applyDecay"]).toEqual({ contacts: 0, points: 0 });
  await app.broker.call("scoring.applyEvent", { eventId: event, contactId: id, type: "purchase-d" }, meta());
  expect((await scores(id)).score).toBe(5);
  expect((await scores(id)).history).toHaveLength(3);

  // Recalculation rebuilds the same score and the same entries, the expired one included.
  const sequelize = await database();
  const entries = async () =>
    sequelize.query<{ points: number; reason: string; decayed: boolean }>(
      `SELECT points, reason, decayed_at IS NOT NULL AS decayed FROM score_history WHERE contact_id = $1
        ORDER BY reason, points`,
      { bind: [id], type: QueryTypes.SELECT },
    );
  const live = await entries();
  const job = await ctx.owner.client.post(`${ctx.ws}/scoring-rules/recalculate`);
  const done = await waitForJob(job.body.jobId);
  expect(done.status).toBe("completed");
  expect(done.result.decayed).toBeGreaterThanOrEqual(1);
  expect((await scores(id)).score).toBe(5);
  expect(await entries()).toEqual(live);
});

test("an event older than the decay is scored, then expired by the next pass", async () => {
  await rule({ name: "Webinar", eventType: "webinar-d", points: 4, decay: { days: 3 } });
  const id = await contact();
  await scoreEvent(id, "webinar-d", new Date(Date.now() - 5 * DAY));
  expect((await scores(id)).score).toBe(4);
  await app.broker.call("scoring.applyDecay");
  expect((await scores(id)).score).toBe(0);
});

test("caps count awards that decayed: expiry does not free a slot", async () => {
  await rule({ name: "Demo", eventType: "demo-d", points: 8, maxPerContact: 1, decay: { days: 2 } });
  const id = await contact();
  await scoreEvent(id, "demo-d");
  await age(id, 3);
  await app.broker.call("scoring.applyDecay");
  expect((await scores(id)).score).toBe(0);
  await scoreEvent(id, "demo-d");
  expect((await scores(id)).score).toBe(0);
});

test("concurrent passes (two replicas) expire every entry exactly once", async () => {
  await rule({ name: "Click", eventType: "click-d", points: 1, decay: { days: 1 } });
  const ids = await Promise.all(Array.from({ length: 30 }, () => contact()));
  for (const id of ids) for (let k = 0; k < 3; k += 1) await scoreEvent(id, "click-d");
  const sequelize = await database();
  await sequelize.query(
    `UPDATE score_history SET decays_at = now() - interval '1 minute' WHERE contact_id = ANY($1::text[])`,
    { bind: [ids] },
  );
  await Promise.all([
    app.broker.call("scoring.applyDecay"),
    app.broker.call("scoring.applyDecay"),
    app.broker.call("scoring.applyDecay"),
  ]);
  const [row] = await sequelize.query<{ decays: string; originals: string; scores: string }>(
    `SELECT (SELECT count(*) FROM score_history WHERE contact_id = ANY($1::text[]) AND decay_of IS NOT NULL) AS decays,
            (SELECT count(*) FROM score_history WHERE contact_id = ANY($1::text[]) AND decay_of IS NULL) AS originals,
            (SELECT sum(abs(score)) FROM contacts WHERE id = ANY($1::text[])) AS scores`,
    { bind: [ids], type: QueryTypes.SELECT },
  );
  expect(row).toEqual({ decays: "90", originals: "90", scores: "0" });
});
