import type { Context } from "moleculer";
import { waitFor } from "../../helpers/wait";
import { Client } from "pg";
import { QueryTypes } from "sequelize";
import { randomHex } from "../../../lib/crypto";
import { createSequelize, database } from "../../../lib/database";
import { newId } from "../../../lib/crypto";
import { migrations } from "../../../models/migrations";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * Time passing: a contact leaves a `within_last` / `within` segment when its
 * window has passed, through the claimed `segments.refreshTimeBased` (service
 * timer and cron tick); changes are logged and announced like any recompute.
 * Time is moved by moving stored times back, never by waiting.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
const CRON_SECRET = "cron-secret-for-refresh-tests-0123456789";
const announced: Array<{ workspaceId: string; entered: unknown[]; exited: unknown[] }> = [];

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "jobs", "segments", "cron"],
    env: { CRON_SECRET },
  });
  app.broker.createService({
    name: "membership-listener",
    events: {
      "segments.membership.changed"(
        ctx: Context<{ workspaceId: string; entered: unknown[]; exited: unknown[] }>,
      ) {
        announced.push(ctx.params);
      },
    },
  });
  await app.broker.waitForServices(["membership-listener"], 5000);
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const sql = async <T extends object>(text: string, bind: unknown[] = []) =>
  (await database()).query<T>(text, { bind, type: QueryTypes.SELECT });

async function contact(createdDaysAgo = 0): Promise<string> {
  const id = newId();
  await sql(
    `INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, now() - make_interval(days => $4))`,
    [id, ctx.workspaceId, `${id}@example.test`, createdDaysAgo],
  );
  return id;
}

async function segment(name: string, conditions: unknown[]): Promise<string> {
  const res = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name,
    filter: { match: "all", conditions },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const memberIds = async (segmentId: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/segments/${segmentId}/members?limit=100`)).body.data.map(
    (m: { id: string }) => m.id,
  );

/** Make a segment's refresh due now (as if its period had passed). */
const due = (...ids: string[]) =>
  sql(`UPDATE segments SET next_refresh_at = now() - interval '1 second' WHERE id = ANY($1::text[])`, [ids]);

const refresh = () =>
  app.broker.call("segments.refreshTimeBased") as Promise<{
    refreshed: number;
    failed: number;
    entered: number;
    exited: number;
  }>;

test("the time-relative flag and the next refresh are set when the filter is saved", async () => {
  const recent = await segment("Recent", [
    { field: "createdAt", operator: "within_last", value: { days: 7 } },
  ]);
  const fixed = await segment("Before 2020", [
    { field: "createdAt", operator: "before", value: "2020-01-01" },
  ]);
  const rows = await sql<{ id: string; time_relative: boolean; in_hours: number | null }>(
    `SELECT id, time_relative, round(extract(epoch FROM next_refresh_at - now()) / 3600)::int AS in_hours
       FROM segments WHERE id = ANY($1::text[]) ORDER BY name DESC`,
    [[recent, fixed]],
  );
  expect(rows).toEqual([
    { id: recent, time_relative: true, in_hours: 1 },
    { id: fixed, time_relative: false, in_hours: null },
  ]);
  // A new filter recomputes the flag.
  await ctx.owner.client.patch(`${ctx.ws}/segments/${fixed}`, {
    filter: {
      match: "all",
      conditions: [{ event: "login", operator: "not_performed", within: { days: 30 } }],
    },
  });
  const [after] = await sql<{ time_relative: boolean }>(`SELECT time_relative FROM segments WHERE id = $1`, [
    fixed,
  ]);
  expect(after.time_relative).toBe(true);
});

test("members leave and enter as time passes, when the refresh is due; dependents follow", async () => {
  const young = await contact(1);
  const old = await contact(20);
  const recent = await segment("Recent 7", [
    { field: "createdAt", operator: "within_last", value: { days: 7 } },
  ]);
  const recentFollower = await segment("In Recent 7", [{ segment: recent, operator: "in" }]);
  const activeNow = await segment("Logged in this week", [
    { event: "login-t", operator: "performed", within: { days: 7 } },
  ]);
  const loginId = newId();
  await sql(
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata, timestamp) VALUES ($1, $2, $3, 'login-t', '{}', now())`,
    [loginId, ctx.workspaceId, old],
  );
  await ctx.owner.client.post(`${ctx.ws}/segments/${activeNow}`); // recompute job: picks up the login
  await waitFor(async () => (await memberIds(activeNow)).length === 1);
  expect(await memberIds(recent)).toEqual([young]);
  expect(await memberIds(recentFollower)).toEqual([young]);

  // Ten days pass: the young contact is no longer recent, the login is out of its window.
  await sql(`UPDATE contacts SET created_at = created_at - interval '10 days' WHERE id = $1`, [young]);
  await sql(`UPDATE events SET timestamp = timestamp - interval '10 days' WHERE id = $1`, [loginId]);
  // Not due yet: nothing moves.
  expect(await refresh()).toMatchObject({ refreshed: 0 });
  expect(await memberIds(recent)).toEqual([young]);

  await due(recent, activeNow);
  announced.length = 0;
  const result = await refresh();
  expect(result).toMatchObject({ refreshed: 2, failed: 0, exited: 3 });
  expect(await memberIds(recent)).toEqual([]);
  expect(await memberIds(recentFollower)).toEqual([]);
  expect(await memberIds(activeNow)).toEqual([]);
  // Announced for campaign triggers, and logged for growth.
  const exited = announced.flatMap((a) => a.exited);
  expect(exited).toEqual(
    expect.arrayContaining([
      { segmentId: recent, contactId: young },
      { segmentId: recentFollower, contactId: young },
      { segmentId: activeNow, contactId: old },
    ]),
  );
  expect(announced.every((a) => a.workspaceId === ctx.workspaceId)).toBe(true);
  const log = await sql<{ change: string }>(
    `SELECT change FROM segment_membership_log WHERE segment_id = $1 ORDER BY id`,
    [recent],
  );
  expect(log.map((l) => l.change)).toEqual(["entered", "exited"]);

  // The claim moved the next refresh one period ahead: another pass does nothing.
  expect(await refresh()).toMatchObject({ refreshed: 0 });
  const [next] = await sql<{ in_hours: number }>(
    `SELECT round(extract(epoch FROM next_refresh_at - now()) / 3600)::int AS in_hours FROM segments WHERE id = $1`,
    [recent],
  );
  expect(next.in_hours).toBe(1);

  // Entries too: a contact whose date comes into the window (a future trial end reached).
  const trial = await segment("Trial ended this week", [
    { field: "attributes.trialEnds", operator: "within_last", value: { days: 7 } },
  ]);
  const trialist = newId();
  await sql(
    `INSERT INTO contacts (id, workspace_id, email, attributes) VALUES ($1, $2, $3, jsonb_build_object('trialEnds', (now() + interval '2 days')::text))`,
    [trialist, ctx.workspaceId, `${trialist}@example.test`],
  );
  await sql(`UPDATE segments SET next_refresh_at = now() + interval '1 hour'`); // only `trial` below is due
  await sql(
    `UPDATE contacts SET attributes = jsonb_build_object('trialEnds', (now() - interval '1 day')::text) WHERE id = $1`,
    [trialist],
  );
  await due(trial);
  announced.length = 0;
  expect(await refresh()).toMatchObject({ refreshed: 1, entered: 1 });
  expect(await memberIds(trial)).toEqual([trialist]);
  expect(announced.flatMap((a) => a.entered)).toEqual([{ segmentId: trial, contactId: trialist }]);
});

test("two replicas never refresh the same segment at once; the cron tick runs the refresh", async () => {
  const ids: string[] = [];
  for (let i = 0; i < 6; i += 1)
    ids.push(
      await segment(`Window ${i}`, [{ field: "createdAt", operator: "within_last", value: { days: i + 1 } }]),
    );
  await sql(`UPDATE segments SET next_refresh_at = now() + interval '1 hour'`);
  await due(...ids);
  const results = await Promise.all([refresh(), refresh(), refresh()]);
  expect(results.reduce((n, r) => n + r.refreshed, 0)).toBe(ids.length);

  await due(ids[0]);
  const tick = await app.http().get("/api/cron/tick", { bearer: CRON_SECRET });
  expect(tick.status).toBe(200);
  expect(tick.body.results["segments.refreshTimeBased"]).toMatchObject({ refreshed: 1, failed: 0 });
  expect(tick.body.results["scoring.applyDecay"]).toBe("not deployed");
});

test("migration 0022 flags existing time-relative segments and makes their refresh due", async () => {
  const base = process.env.TEST_DATABASE_BASE_URL!;
  const name = `cms_test_m22_${randomHex(4)}`;
  const admin = new Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  const sequelize = createSequelize(url.toString());
  try {
    const at = migrations.findIndex((m) => m.name.startsWith("0022-"));
    for (const m of migrations.slice(0, at)) await m.up(sequelize);
    const filters: Record<string, unknown> = {
      within: {
        match: "all",
        conditions: [{ field: "createdAt", operator: "within_last", value: { days: 3 } }],
      },
      nested: {
        match: "all",
        conditions: [
          { match: "any", conditions: [{ event: "login", operator: "performed", within: { days: 3 } }] },
        ],
      },
      fixed: {
        match: "all",
        conditions: [
          { field: "createdAt", operator: "before", value: "2024-01-01" },
          { field: "email", operator: "eq", value: "within_last" },
        ],
      },
    };
    await sequelize.query(`INSERT INTO workspaces (id, name, slug) VALUES ('w', 'W', 'w')`);
    for (const [id, filter] of Object.entries(filters)) {
      await sequelize.query(
        `INSERT INTO segments (id, workspace_id, name, type, filter) VALUES ($1, 'w', $1, 'dynamic', $2::jsonb)`,
        { bind: [id, JSON.stringify(filter)] },
      );
    }
    await sequelize.query(
      `INSERT INTO segments (id, workspace_id, name, type) VALUES ('static', 'w', 's', 'static')`,
    );
    await migrations[at].up(sequelize);
    const rows = await sequelize.query<{ id: string; time_relative: boolean; due: boolean }>(
      `SELECT id, time_relative, next_refresh_at <= now() AS due FROM segments ORDER BY id`,
      { type: QueryTypes.SELECT },
    );
    expect(rows).toEqual([
      { id: "fixed", time_relative: false, due: null },
      { id: "nested", time_relative: true, due: true },
      { id: "static", time_relative: false, due: null },
      { id: "within", time_relative: true, due: true },
    ]);
  } finally {
    await sequelize.close();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
});
