import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startJob } from "../../../lib/jobs";
import { systemCall } from "../../../lib/system-call";
import { asWorkspaceId } from "../../../lib/tenancy";
import { retentionPolicy } from "../../../lib/retention";
import { cutoffsOf, purge } from "../../../services/retention/purge";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace, signUp } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * Data retention through the gateway: the route's 400s and 403, the dry run's
 * counts equal to what the purge deletes while a writer keeps recording new
 * events, `settings.retention` saved, the `retention.purge` job with its
 * result, what is skipped (queued messages and deliveries) and what goes with
 * a message (its push deliveries), a cancel, the daily step claimed once, and
 * analytics for the purged period unchanged.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

const DAY_MS = 24 * 60 * 60 * 1000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString();
const OLD_EVENTS = 12_000; // more than two batches of 5,000

async function sql<T = Record<string, unknown>>(text: string, bind: unknown[] = []): Promise<T[]> {
  const [rows] = await (await database()).query(text, { bind });
  return rows as T[];
}
const count = async (text: string, bind: unknown[]) => Number((await sql<{ n: string }>(text, bind))[0].n);

/** Old and recent facts of each kind, plus rows a purge must skip. */
async function seed(ws: string, oldEvents: number) {
  await sql(
    `INSERT INTO events (id, workspace_id, type, metadata, timestamp)
     SELECT md5(random()::text || g), $1, CASE WHEN g % 10 = 0 THEN 'purchase' ELSE 'page_view' END,
            CASE WHEN g % 10 = 0 THEN '{"amount": 2}'::jsonb ELSE '{}'::jsonb END,
            now() - interval '100 days' - g * interval '10 seconds'
       FROM generate_series(1, $2::int) g`,
    [ws, oldEvents],
  );
  await sql(
    `INSERT INTO events (id, workspace_id, type, timestamp)
     SELECT md5(random()::text || g), $1, 'page_view', now() - interval '1 day' FROM generate_series(1, 5) g`,
    [ws],
  );
  const message = async (status: string, createdDaysAgo: number) => {
    const id = newId();
    const at = daysAgo(createdDaysAgo);
    await sql(
      `INSERT INTO messages (id, workspace_id, channel, status, to_address, sent_at, history, created_at)
       VALUES ($1, $2, 'email', $3, 'a@example.test', $4, $5, $6)`,
      [id, ws, status, status === "queued" ? null : at, JSON.stringify([{ status, at, reason: null }]), at],
    );
    return id;
  };
  const oldSent = [await message("sent", 100), await message("delivered", 101), await message("opened", 102)];
  const oldQueued = await message("queued", 100);
  await message("sent", 2);
  await sql(
    `INSERT INTO push_deliveries (id, workspace_id, message_id, subscription_id, subscription_type, attempt, status)
     VALUES ($1, $2, $3, 's1', 'web', 1, 'accepted')`,
    [newId(), ws, oldSent[0]],
  );

  const formId = newId();
  await sql(`INSERT INTO forms (id, workspace_id, name, fields, settings) VALUES ($1, $2, 'F', '[]', '{}')`, [
    formId,
    ws,
  ]);
  for (const age of [100, 95, 90, 1])
    await sql(
      `INSERT INTO form_submissions (id, workspace_id, form_id, fields, created_at) VALUES ($1, $2, $3, '{}', $4)`,
      [newId(), ws, formId, daysAgo(age)],
    );

  const endpointId = newId(); // inactive: the writer's events fan out to no delivery
  await sql(
    `INSERT INTO webhook_endpoints (id, workspace_id, url, active) VALUES ($1, $2, 'https://hooks.example.test/', false)`,
    [endpointId, ws],
  );
  const delivery = (age: number, queued: boolean) =>
    sql(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, success, next_attempt_at, created_at)
       VALUES ($1, $2, $3, 'contact.created', 'OUTBOUND', '{}', $4, $5, $6)`,
      [
        newId(),
        ws,
        endpointId,
        !queued,
        queued ? new Date(Date.now() + DAY_MS).toISOString() : null,
        daysAgo(age),
      ],
    );
  await delivery(100, false);
  await delivery(99, false);
  await delivery(98, true); // queued for a later attempt: kept
  await delivery(1, false);
  return { oldSent, oldQueued };
}

beforeAll(async () => {
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "jobs",
      "events",
      "messages",
      "forms",
      "webhooks",
      "analytics",
      "retention",
    ],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
const afterAllStops: Array<() => void> = [];
afterAll(async () => {
  for (const stop of afterAllStops) stop();
  await app.stop();
});

test("bad days, unknown keys and a caller without settings.manage are refused", async () => {
  const post = (body: unknown) => ctx.owner.client.post(`${ctx.ws}/data-retention`, body);
  for (const [body, field] of [
    [{ events: 0 }, "events"],
    [{ messages: 3651 }, "messages"],
    [{ formSubmissions: 1.5 }, "formSubmissions"],
    [{ webhookDeliveries: -5 }, "webhookDeliveries"],
    [{ events: 30, logs: 5 }, "logs"],
  ] as const) {
    const res = await post(body);
    expect({ body, status: res.status }).toEqual({ body, status: 400 });
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  }

  const member = await signUp(app.baseUrl, "Member");
  expect(
    (await ctx.owner.client.post(`${ctx.ws}/members`, { email: member.email, role: "MEMBER" })).status,
  ).toBe(201);
  const refused = await member.client.post(`${ctx.ws}/data-retention`, { events: 30, dryRun: true });
  expect(refused.status).toBe(403);
});

test("PATCH {ws} checks settings.retention as the route does", async () => {
  const patch = (retention: unknown) => ctx.owner.client.patch(ctx.ws, { settings: { retention } });
  for (const [retention, field] of [
    [{ events: 0 }, "settings.retention.events"],
    [{ events: 30, logs: 5 }, "settings.retention.logs"],
  ] as const) {
    const res = await patch(retention);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  }
  const saved = await patch({ events: 30, messages: null });
  expect(saved.status).toBe(200);
  expect(saved.body.settings.retention).toEqual({ events: 30, messages: null });
  expect((await patch(null)).body.settings.retention).toBeNull();
});

test("the purge deletes exactly the dry run's counts while new events keep coming, and analytics stay", async () => {
  const ws = ctx.workspaceId;
  const { oldSent, oldQueued } = await seed(ws, OLD_EVENTS);
  const period = `from=${encodeURIComponent(daysAgo(130))}&to=${encodeURIComponent(daysAgo(60))}`;
  const analyticsBefore = await ctx.owner.client.get(`${ctx.ws}/analytics?${period}&timezone=UTC`);
  expect(analyticsBefore.status).toBe(200);
  expect(analyticsBefore.body.events).toBe(OLD_EVENTS);

  // A writer recording new events through the API for the whole purge.
  let writing = true;
  let written = 0;
  const writer = (async () => {
    // Stops with the test, whatever fails first.
    afterAllStops.push(() => (writing = false));
    while (writing) {
      const res = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "page_view" });
      expect(res.status).toBe(201);
      written += 1;
    }
  })();
  await waitFor(() => written > 0, 10_000, "the writer's first event");

  const policy = { events: 30, messages: 30, formSubmissions: 30, webhookDeliveries: 30 };
  const dry = await ctx.owner.client.post(`${ctx.ws}/data-retention`, { ...policy, dryRun: true });
  expect(dry.status).toBe(200);
  const expected = { events: OLD_EVENTS, messages: 3, formSubmissions: 3, webhookDeliveries: 2 };
  expect(dry.body).toEqual({ policy, wouldDelete: expected });
  // A dry run saves nothing (the setting is still the one the PATCH test left).
  expect((await ctx.owner.client.get(ctx.ws)).body.settings.retention).toBeNull();

  const started = await ctx.owner.client.post(`${ctx.ws}/data-retention`, policy);
  expect(started.status).toBe(202);
  expect(started.body).toEqual({ jobId: expect.any(String), policy });
  const job = await finishedJob(ctx.owner.client, ctx.ws, started.body.jobId, 60_000).finally(() => {
    writing = false;
  });
  await writer;

  expect(job).toMatchObject({
    type: "retention.purge",
    status: "completed",
    result: { deleted: dry.body.wouldDelete },
    progress: { done: OLD_EVENTS + 8, total: OLD_EVENTS + 8 },
  });
  expect(job.result.before.events).toEqual(expect.any(String));
  expect((await ctx.owner.client.get(ctx.ws)).body.settings.retention).toEqual(policy);

  // What stays: every newer row (the writer's included), the queued message and delivery.
  expect(await count(`SELECT count(*) AS n FROM events WHERE workspace_id = $1`, [ws])).toBe(5 + written);
  const messages = await sql<{ id: string }>(`SELECT id FROM messages WHERE workspace_id = $1`, [ws]);
  expect(messages.map((m) => m.id)).toContain(oldQueued);
  expect(messages.map((m) => m.id)).not.toEqual(expect.arrayContaining([oldSent[0]]));
  expect(messages).toHaveLength(2);
  // A message's push deliveries go with it.
  expect(await count(`SELECT count(*) AS n FROM push_deliveries WHERE workspace_id = $1`, [ws])).toBe(0);
  expect(await count(`SELECT count(*) AS n FROM form_submissions WHERE workspace_id = $1`, [ws])).toBe(1);
  expect(
    await count(
      `SELECT count(*) AS n FROM webhook_deliveries WHERE workspace_id = $1 AND next_attempt_at IS NULL`,
      [ws],
    ),
  ).toBe(1);
  expect(await count(`SELECT count(*) AS n FROM webhook_deliveries WHERE workspace_id = $1`, [ws])).toBe(2);

  // A second dry run finds nothing left to delete.
  const again = await ctx.owner.client.post(`${ctx.ws}/data-retention`, { ...policy, dryRun: true });
  expect(again.body.wouldDelete).toEqual({
    events: 0,
    messages: 0,
    formSubmissions: 0,
    webhookDeliveries: 0,
  });

  // The rollups answer the purged period as before.
  const analyticsAfter = await ctx.owner.client.get(`${ctx.ws}/analytics?${period}&timezone=UTC`);
  expect(analyticsAfter.body).toEqual(analyticsBefore.body);
  const series = (q: string) => ctx.owner.client.get(`${ctx.ws}/analytics/timeseries?${period}&metric=${q}`);
  expect(
    (await series("events")).body.points.reduce((s: number, p: { value: number }) => s + p.value, 0),
  ).toBe(OLD_EVENTS);
});

test("a cancelled purge stops between batches and keeps what it did not reach", async () => {
  const other = await ownerWithWorkspace(app.baseUrl);
  const ws = other.workspaceId;
  await sql(
    `INSERT INTO events (id, workspace_id, type, timestamp)
     SELECT md5(random()::text || g), $1, 'page_view', now() - interval '50 days' FROM generate_series(1, 3000) g`,
    [ws],
  );
  const cutoffs = cutoffsOf(retentionPolicy({ events: 10 }), new Date());
  // One row per batch, so the purge is still running when the cancel comes.
  const { jobId, done } = await startJob(
    { workspaceId: ws, type: "retention.purge", cancelPermission: "settings.manage" },
    (progress) => purge(app.broker, ws, cutoffs, progress, { batch: 1, restRatio: 0 }),
  );
  await waitFor(
    async () => (await count(`SELECT count(*) AS n FROM events WHERE workspace_id = $1`, [ws])) < 3000,
  );
  const cancelled = await other.owner.client.post(`${other.ws}/jobs/${jobId}/cancel`);
  expect(cancelled.status).toBe(200);
  await done;
  const job = (await other.owner.client.get(`${other.ws}/jobs?id=${jobId}`)).body.data[0];
  expect(job.status).toBe("cancelled");
  const left = await count(`SELECT count(*) AS n FROM events WHERE workspace_id = $1`, [ws]);
  expect(left).toBeGreaterThan(0);
  expect(left).toBeLessThan(3000);
});

test("a batch starts at the time the previous one reached: older rows are not looked at again", async () => {
  const other = await ownerWithWorkspace(app.baseUrl);
  const ws = other.workspaceId;
  await sql(
    `INSERT INTO events (id, workspace_id, type, timestamp)
     SELECT 'k' || g, $1, 'page_view', timestamptz '2025-01-01T00:00:00Z' + g * interval '1 hour'
       FROM generate_series(1, 10) g`,
    [ws],
  );
  const before = "2025-06-01T00:00:00.000Z";
  const batch = (params: { limit: number; from?: string }) =>
    systemCall<{ deleted: number; last: string | null }>(
      app.broker,
      asWorkspaceId(ws),
      "events.purgeBefore",
      {
        before,
        ...params,
      },
    );

  expect(await batch({ limit: 3 })).toEqual({ deleted: 3, last: "2025-01-01T03:00:00.000Z" });
  // From 06:00 on: 04:00 and 05:00 stay behind the cursor (a backfill there waits for the next run).
  expect(await batch({ limit: 3, from: "2025-01-01T06:00:00.000Z" })).toEqual({
    deleted: 3,
    last: "2025-01-01T08:00:00.000Z",
  });
  expect(await batch({ limit: 3, from: "2025-01-01T08:00:00.000Z" })).toEqual({
    deleted: 2,
    last: "2025-01-01T10:00:00.000Z",
  });
  expect(await batch({ limit: 3, from: "2025-01-01T10:00:00.000Z" })).toEqual({ deleted: 0, last: null });
  const left = await sql<{ id: string }>(`SELECT id FROM events WHERE workspace_id = $1 ORDER BY id`, [ws]);
  expect(left.map((row) => row.id)).toEqual(["k4", "k5"]);
});

test("the daily step starts a workspace's purge once a day, once across concurrent passes", async () => {
  const other = await ownerWithWorkspace(app.baseUrl);
  await sql(
    `INSERT INTO events (id, workspace_id, type, timestamp)
     SELECT md5(random()::text || g), $1, 'page_view', now() - interval '50 days' FROM generate_series(1, 7) g`,
    [other.workspaceId],
  );
  expect((await other.owner.client.patch(other.ws, { settings: { retention: { events: 10 } } })).status).toBe(
    200,
  );

  // The first workspace ran today (its request); only the new one is due.
  const passes = await Promise.all([
    app.broker.call<{ started: number }>("retention.runDaily"),
    app.broker.call<{ started: number }>("retention.runDaily"),
  ]);
  expect(passes.map((p) => p.started).sort()).toEqual([0, 1]);
  expect((await app.broker.call<{ started: number }>("retention.runDaily")).started).toBe(0);

  const jobs = (await other.owner.client.get(`${other.ws}/jobs?type=retention.purge`)).body.data;
  expect(jobs).toHaveLength(1);
  const job = await finishedJob(other.owner.client, other.ws, jobs[0].id);
  expect(job).toMatchObject({
    status: "completed",
    result: { deleted: { events: 7, messages: 0, formSubmissions: 0, webhookDeliveries: 0 } },
  });
  expect((await ctx.owner.client.get(`${ctx.ws}/jobs?type=retention.purge`)).body.data).toHaveLength(1);

  // The next day it is due again.
  await sql(`UPDATE retention_runs SET last_run_on = last_run_on - 1 WHERE workspace_id = $1`, [
    other.workspaceId,
  ]);
  expect((await app.broker.call<{ started: number }>("retention.runDaily")).started).toBe(1);
});
