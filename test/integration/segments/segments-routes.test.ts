import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp, finishedJob } from "../../helpers/http";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs", "segments", "scoring"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

interface ContactSeed {
  email?: string;
  firstName?: string;
  lastName?: string;
  tags?: string[];
  attributes?: Record<string, unknown>;
  score?: number;
  createdAt?: string;
}

async function contact(workspaceId: string, seed: ContactSeed = {}): Promise<string> {
  const sequelize = await database();
  const id = newId();
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email, first_name, last_name, tags, attributes, score, created_at)
     VALUES ($1, $2, $3, $4, $5, $6::text[], $7::jsonb, $8, COALESCE($9::timestamptz, now()))`,
    {
      bind: [
        id,
        workspaceId,
        seed.email ?? `${id}@example.test`,
        seed.firstName ?? null,
        seed.lastName ?? null,
        seed.tags ?? [],
        JSON.stringify(seed.attributes ?? {}),
        seed.score ?? 0,
        seed.createdAt ?? null,
      ],
    },
  );
  return id;
}

const evaluate = (workspaceId: string, contactIds: string[]) =>
  app.broker.call("segments.evaluateContacts", { contactIds }, { meta: { principal: SYSTEM, workspaceId } });

const waitForJob = (jobId: string) => finishedJob(ctx.owner.client, ctx.ws, jobId);

describe("dynamic segments", () => {
  let acme1: string;
  let acme2: string;
  let other: string;

  beforeAll(async () => {
    acme1 = await contact(ctx.workspaceId, {
      email: "ann@acme.com",
      firstName: "Ann",
      attributes: { plan: "pro" },
    });
    acme2 = await contact(ctx.workspaceId, {
      email: "bob@acme.com",
      firstName: "Bob",
      attributes: { plan: "free" },
    });
    other = await contact(ctx.workspaceId, { email: "cy@other.org", attributes: { plan: "pro" } });
  });

  test("create computes membership before answering; list, get, members, preview", async () => {
    const filter = {
      match: "all",
      conditions: [{ field: "email", operator: "ends_with", value: "@acme.com" }],
    };
    const created = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "Acme",
      filter,
      workspaceId: "evil",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "Acme",
      type: "dynamic",
      filter,
      memberCount: 2,
      description: null,
    });
    const id = created.body.id;

    const got = await ctx.owner.client.get(`${ctx.ws}/segments/${id}`);
    expect(got.body).toMatchObject({ id, memberCount: 2 });

    const list = await ctx.owner.client.get(`${ctx.ws}/segments?limit=1`);
    expect(list.status).toBe(200);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 1 });
    expect(list.body.pagination.total).toBeGreaterThanOrEqual(1);

    const members = await ctx.owner.client.get(`${ctx.ws}/segments/${id}/members`);
    expect(members.status).toBe(200);
    expect(members.body.pagination.total).toBe(2);
    expect(members.body.data.map((m: { id: string }) => m.id).sort()).toEqual([acme1, acme2].sort());
    expect(Object.keys(members.body.data[0]).sort()).toEqual([
      "email",
      "enteredAt",
      "firstName",
      "id",
      "lastName",
    ]);

    const preview = await ctx.owner.client.post(`${ctx.ws}/segments/preview`, {
      filter: { match: "all", conditions: [{ field: "attributes.plan", operator: "eq", value: "pro" }] },
    });
    expect(preview.status).toBe(200);
    expect(preview.body.count).toBe(2);
    expect(preview.body.sample.map((c: { id: string }) => c.id).sort()).toEqual([acme1, other].sort());
  });

  test("PATCH with a new filter recomputes; entries and exits show in growth", async () => {
    const created = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "Pro",
      filter: { match: "all", conditions: [{ field: "attributes.plan", operator: "eq", value: "pro" }] },
    });
    expect(created.body.memberCount).toBe(2);
    const patched = await ctx.owner.client.patch(`${ctx.ws}/segments/${created.body.id}`, {
      name: "Free",
      filter: { match: "all", conditions: [{ field: "attributes.plan", operator: "eq", value: "free" }] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: "Free", memberCount: 1 });

    const growth = await ctx.owner.client.get(`${ctx.ws}/segments/${created.body.id}/growth?days=3`);
    expect(growth.status).toBe(200);
    expect(growth.body.series).toHaveLength(3);
    const today = growth.body.series[2];
    expect(today).toEqual({
      date: new Date().toISOString().slice(0, 10),
      memberCount: 1,
      entered: 3,
      exited: 2,
    });
    expect(growth.body.series[0]).toMatchObject({ memberCount: 0, entered: 0, exited: 0 });
  });

  test("a recompute runs as a job and reconciles drift", async () => {
    const created = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "Ann",
      filter: { match: "all", conditions: [{ field: "firstName", operator: "eq", value: "Ann" }] },
    });
    const sequelize = await database();
    // Drift behind the evaluator's back: the row changes without an evaluation.
    await sequelize.query(`UPDATE contacts SET first_name = 'Anne' WHERE id = $1`, { bind: [acme1] });
    const res = await ctx.owner.client.post(`${ctx.ws}/segments/${created.body.id}`);
    expect(res.status).toBe(202);
    const job = await waitForJob(res.body.jobId);
    expect(job).toMatchObject({
      type: "segments.recompute",
      status: "completed",
      result: { added: 0, removed: 1, memberCount: 0 },
    });
    await sequelize.query(`UPDATE contacts SET first_name = 'Ann' WHERE id = $1`, { bind: [acme1] });
    await evaluate(ctx.workspaceId, [acme1]);
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${created.body.id}`)).body.memberCount).toBe(1);
  });

  test("a contact change re-evaluates it incrementally", async () => {
    const created = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "VIP",
      filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "vip" }] },
    });
    expect(created.body.memberCount).toBe(0);
    const sequelize = await database();
    await sequelize.query(`UPDATE contacts SET tags = '{vip}' WHERE id = $1`, { bind: [other] });
    expect(await evaluate(ctx.workspaceId, [other])).toEqual({ entered: 1, exited: 0 });
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${created.body.id}`)).body.memberCount).toBe(1);
    expect(await evaluate(ctx.workspaceId, [other])).toEqual({ entered: 0, exited: 0 });
    await sequelize.query(`UPDATE contacts SET tags = '{}' WHERE id = $1`, { bind: [other] });
    expect(await evaluate(ctx.workspaceId, [other])).toEqual({ entered: 0, exited: 1 });
    const log = await sequelize.query<{ change: string }>(
      `SELECT change FROM segment_membership_log WHERE segment_id = $1 ORDER BY id`,
      { bind: [created.body.id], type: QueryTypes.SELECT },
    );
    expect(log.map((l) => l.change)).toEqual(["entered", "exited"]);
  });

  test("bad filters are 400 with the path of the bad node", async () => {
    const bad = async (filter: unknown) =>
      ctx.owner.client.post(`${ctx.ws}/segments`, { name: "Bad", filter });
    const unknownField = await bad({ match: "all", conditions: [{ field: "x", operator: "eq", value: 1 }] });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.code).toBe("VALIDATION_ERROR");
    expect(unknownField.body.details[0].field).toBe("filter.conditions[0].field");

    const wrongOp = await bad({
      match: "any",
      conditions: [
        { field: "email", operator: "eq", value: "a@b.c" },
        { match: "all", conditions: [{ field: "score", operator: "contains", value: "1" }] },
      ],
    });
    expect(wrongOp.body.details[0].field).toBe("filter.conditions[1].conditions[0].operator");

    let deep: Record<string, unknown> = { field: "email", operator: "is_set" };
    for (let i = 0; i < 11; i += 1) deep = { match: "all", conditions: [deep] };
    const tooDeep = await bad(deep);
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.details[0].message).toMatch(/nested at most 10/);

    const missing = await bad({ match: "all", conditions: [{ segment: "nope", operator: "in" }] });
    expect(missing.body.details[0]).toEqual({
      field: "filter.conditions[0].segment",
      message: "no such segment in this workspace",
    });

    expect((await ctx.owner.client.post(`${ctx.ws}/segments`, { name: "No filter" })).status).toBe(400);
  });

  test("segment membership conditions, cycles, and delete protection", async () => {
    const a = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "A",
      filter: { match: "all", conditions: [{ field: "attributes.plan", operator: "eq", value: "pro" }] },
    });
    const b = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "B",
      filter: {
        match: "all",
        conditions: [
          { segment: a.body.id, operator: "in" },
          { field: "email", operator: "ends_with", value: "@acme.com" },
        ],
      },
    });
    expect(b.status).toBe(201);
    expect(b.body.memberCount).toBe(1);
    const notA = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "not A",
      filter: { match: "all", conditions: [{ segment: a.body.id, operator: "not_in" }] },
    });
    expect(notA.body.memberCount).toBe(1);

    const cycle = await ctx.owner.client.patch(`${ctx.ws}/segments/${a.body.id}`, {
      filter: { match: "all", conditions: [{ segment: b.body.id, operator: "in" }] },
    });
    expect(cycle.status).toBe(400);
    expect(cycle.body.details[0].field).toBe("filter.conditions[0].segment");
    expect(cycle.body.details[0].message).toMatch(/cycle/);
    const self = await ctx.owner.client.patch(`${ctx.ws}/segments/${a.body.id}`, {
      filter: { match: "all", conditions: [{ segment: a.body.id, operator: "in" }] },
    });
    expect(self.status).toBe(400);

    // Changing A's filter recomputes B after it.
    const widened = await ctx.owner.client.patch(`${ctx.ws}/segments/${a.body.id}`, {
      filter: { match: "all", conditions: [{ field: "email", operator: "is_set" }] },
    });
    expect(widened.body.memberCount).toBe(3);
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${b.body.id}`)).body.memberCount).toBe(2);
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${notA.body.id}`)).body.memberCount).toBe(0);

    const refused = await ctx.owner.client.delete(`${ctx.ws}/segments/${a.body.id}`);
    expect(refused.status).toBe(409);
    expect((await ctx.owner.client.delete(`${ctx.ws}/segments/${b.body.id}`)).body).toEqual({
      success: true,
    });
    expect((await ctx.owner.client.delete(`${ctx.ws}/segments/${notA.body.id}`)).status).toBe(200);
    expect((await ctx.owner.client.delete(`${ctx.ws}/segments/${a.body.id}`)).status).toBe(200);
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${a.body.id}`)).status).toBe(404);
    // Its members and log went with it.
    const sequelize = await database();
    const [left] = await sequelize.query<{ members: number; log: number }>(
      `SELECT (SELECT count(*)::int FROM segment_members WHERE segment_id = $1) AS members,
              (SELECT count(*)::int FROM segment_membership_log WHERE segment_id = $1) AS log`,
      { bind: [a.body.id], type: QueryTypes.SELECT },
    );
    expect(left).toEqual({ members: 0, log: 0 });
  });
});

describe("static segments", () => {
  test("members are added and removed explicitly (body or query)", async () => {
    const ids = [
      await contact(ctx.workspaceId),
      await contact(ctx.workspaceId),
      await contact(ctx.workspaceId),
    ];
    const created = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "List",
      type: "static",
      contactIds: [ids[0]],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ type: "static", filter: null, memberCount: 1 });
    const seg = `${ctx.ws}/segments/${created.body.id}`;

    const added = await ctx.owner.client.post(`${seg}/members`, { contactIds: [ids[1], ids[2], ids[0]] });
    expect(added.status).toBe(200);
    expect(added.body).toEqual({ added: 2, memberCount: 3 });

    const unknown = await ctx.owner.client.post(`${seg}/members`, { contactIds: [ids[0], "missing"] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details[0].field).toBe("contactIds[1]");

    const removedBody = await ctx.owner.client.request("DELETE", `${seg}/members`, {
      body: { contactIds: [ids[0]] },
    });
    expect(removedBody.body).toEqual({ success: true, removed: 1, memberCount: 2 });
    const removedQuery = await ctx.owner.client.delete(`${seg}/members?contactIds=${ids[1]},${ids[2]}`);
    expect(removedQuery.body).toEqual({ success: true, removed: 2, memberCount: 0 });

    const dynamic = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "Dyn",
      filter: { match: "all", conditions: [] },
    });
    const refused = await ctx.owner.client.post(`${ctx.ws}/segments/${dynamic.body.id}/members`, {
      contactIds: [ids[0]],
    });
    expect(refused.status).toBe(400);
    const before = (await ctx.owner.client.get(`${ctx.ws}/segments?type=static`)).body.pagination.total;
    const badCreate = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "S",
      type: "static",
      contactIds: ["nope"],
    });
    expect(badCreate.status).toBe(400);
    expect(badCreate.body.details[0].field).toBe("contactIds[0]");
    expect((await ctx.owner.client.get(`${ctx.ws}/segments?type=static`)).body.pagination.total).toBe(before);
    const withFilter = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "S",
      type: "static",
      filter: { match: "all", conditions: [] },
    });
    expect(withFilter.status).toBe(400);
  });

  test("a dynamic segment that references a static one follows manual changes", async () => {
    const id = await contact(ctx.workspaceId);
    const list = await ctx.owner.client.post(`${ctx.ws}/segments`, { name: "L", type: "static" });
    const follower = await ctx.owner.client.post(`${ctx.ws}/segments`, {
      name: "In L",
      filter: { match: "all", conditions: [{ segment: list.body.id, operator: "in" }] },
    });
    expect(follower.body.memberCount).toBe(0);
    await ctx.owner.client.post(`${ctx.ws}/segments/${list.body.id}/members`, { contactIds: [id] });
    expect((await ctx.owner.client.get(`${ctx.ws}/segments/${follower.body.id}`)).body.memberCount).toBe(1);
  });
});

describe("access", () => {
  test("scopes and tenancy are enforced", async () => {
    const stranger = await signUp(app.baseUrl);
    expect((await stranger.client.get(`${ctx.ws}/segments`)).status).toBe(403);
    const strangerWs = await stranger.client.post("/api/workspaces", { name: "Theirs" });
    const mine = await ctx.owner.client.post(`${ctx.ws}/segments`, { name: "Mine", type: "static" });
    const foreign = await stranger.client.get(
      `/api/workspaces/${strangerWs.body.id}/segments/${mine.body.id}`,
    );
    expect(foreign.status).toBe(404);

    const key = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "ro", scopes: ["segments.read"] });
    expect(key.status).toBe(201);
    const reader = app.http();
    reader.bearer = key.body.key;
    expect((await reader.get(`${ctx.ws}/segments`)).status).toBe(200);
    const write = await reader.post(`${ctx.ws}/segments`, { name: "x", type: "static" });
    expect(write.status).toBe(403);
    expect((await reader.delete(`${ctx.ws}/segments/${mine.body.id}`)).status).toBe(403);
    expect((await app.http().get(`${ctx.ws}/segments`)).status).toBe(401);
  });
});

test("every segments and scoring route is in the OpenAPI description", async () => {
  const res = await app.http().get("/api/openapi");
  expect(res.status).toBe(200);
  const paths = res.body.paths as Record<string, Record<string, unknown>>;
  const ws = "/api/workspaces/{workspaceId}";
  const expected: Array<[string, string[]]> = [
    [`${ws}/segments`, ["get", "post"]],
    [`${ws}/segments/preview`, ["post"]],
    [`${ws}/segments/{segmentId}`, ["get", "patch", "delete", "post"]],
    [`${ws}/segments/{segmentId}/growth`, ["get"]],
    [`${ws}/segments/{segmentId}/members`, ["get", "post", "delete"]],
    [`${ws}/scoring-rules`, ["get", "post"]],
    [`${ws}/scoring-rules/recalculate`, ["post"]],
    [`${ws}/scoring-rules/{ruleId}`, ["get", "patch", "delete"]],
    [`${ws}/contacts/{contactId}/scores`, ["get", "post"]],
  ];
  for (const [path, methods] of expected) {
    expect([path, Object.keys(paths[path] ?? {}).sort()]).toEqual([path, [...methods].sort()]);
  }
});
