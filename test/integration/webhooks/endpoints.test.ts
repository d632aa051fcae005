import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { publishDomainEvent } from "../../helpers/facts";
import { open } from "../../../lib/secret-box";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace, signUp } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let other: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let keyClient: HttpClient;
let member: HttpClient;
let admin: HttpClient;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "events", "webhooks"],
    env: { WEBHOOK_POLL_MS: "600000" },
  });
  receiver = await startReceiver();
  ctx = await ownerWithWorkspace(app.baseUrl);
  other = await ownerWithWorkspace(app.baseUrl);
  const key = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "all", scopes: ["*"] });
  keyClient = new HttpClient(app.baseUrl);
  keyClient.bearer = key.body.key;
  const m = await signUp(app.baseUrl, "Member");
  const a = await signUp(app.baseUrl, "Admin");
  expect((await ctx.owner.client.post(`${ctx.ws}/members`, { email: m.email, role: "MEMBER" })).status).toBe(
    201,
  );
  expect((await ctx.owner.client.post(`${ctx.ws}/members`, { email: a.email, role: "ADMIN" })).status).toBe(
    201,
  );
  member = m.client;
  admin = a.client;
});
afterAll(async () => {
  await receiver.close();
  await app.stop();
});

test("create answers 201 with the secret once; list shows _count and never the secret; stored encrypted", async () => {
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    name: "CRM sync",
    url: receiver.url(),
    events: ["contact.created"],
    workspaceId: other.workspaceId,
  });
  expect(res.status).toBe(201);
  expect(res.body).toEqual({
    id: expect.any(String),
    name: "CRM sync",
    url: receiver.url(),
    events: ["contact.created"],
    direction: "OUTBOUND",
    active: true,
    _count: { deliveries: 0 },
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
    secret: expect.stringMatching(/^whsec_[0-9a-f]{48}$/),
  });
  const list = await ctx.owner.client.get(`${ctx.ws}/webhooks`);
  expect(list.status).toBe(200);
  const listed = list.body.find((w: { id: string }) => w.id === res.body.id);
  expect(listed).toMatchObject({ id: res.body.id, name: "CRM sync", _count: { deliveries: 0 } });
  expect(JSON.stringify(list.body)).not.toContain(res.body.secret);
  expect(listed.secret).toBeUndefined();
  expect((await other.owner.client.get(`${other.ws}/webhooks`)).body).toEqual([]);

  const [row] = await (
    await database()
  ).query<{ secret_sealed: string }>(`SELECT secret_sealed FROM webhook_endpoints WHERE id = :id`, {
    type: QueryTypes.SELECT,
    replacements: { id: res.body.id },
  });
  expect(row.secret_sealed).not.toContain(res.body.secret.slice(6));
  expect(open(row.secret_sealed)).toBe(res.body.secret);
});

test("validation: name max 100, url required and http(s) for OUTBOUND, INBOUND needs no url", async () => {
  const long = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    name: "x".repeat(101),
    url: receiver.url(),
  });
  expect(long.status).toBe(400);
  expect(long.body.code).toBe("VALIDATION_ERROR");
  expect(
    (await ctx.owner.client.post(`${ctx.ws}/webhooks`, { name: "x".repeat(100), url: receiver.url() }))
      .status,
  ).toBe(201);
  const noUrl = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { name: "n" });
  expect(noUrl.status).toBe(400);
  expect(noUrl.body.details).toEqual([{ field: "url", message: expect.stringContaining("required") }]);
  expect((await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url: "ftp://example.com/x" })).status).toBe(
    400,
  );
  expect(
    (await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url: "https://u:p@example.com/x" })).status,
  ).toBe(400);
  expect(
    (await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url: receiver.url(), direction: "SIDEWAYS" }))
      .status,
  ).toBe(400);
  const inbound = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { name: "in", direction: "INBOUND" });
  expect(inbound.status).toBe(201);
  expect(inbound.body).toMatchObject({
    direction: "INBOUND",
    url: null,
    events: [],
    secret: expect.stringMatching(/^whsec_/),
  });
});

test("PATCH changes name, url, events and active; 404 for another workspace's endpoint; url checked", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { name: "p", url: receiver.url() });
  const id = created.body.id;
  const res = await admin.patch(`${ctx.ws}/webhooks/${id}`, {
    name: "renamed",
    events: ["purchase"],
    active: false,
    secret: "x",
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    id,
    name: "renamed",
    events: ["purchase"],
    active: false,
    _count: { deliveries: 0 },
  });
  expect(res.body.secret).toBeUndefined();
  expect((await admin.patch(`${ctx.ws}/webhooks/${id}`, { url: "notaurl" })).status).toBe(400);
  expect((await admin.patch(`${ctx.ws}/webhooks/${id}`, { name: "y".repeat(101) })).status).toBe(400);
  expect((await other.owner.client.patch(`${other.ws}/webhooks/${id}`, { name: "stolen" })).status).toBe(404);
  expect((await admin.patch(`${ctx.ws}/webhooks/does-not-exist`, { name: "z" })).status).toBe(404);
});

test("DELETE answers {success:true} and cascades to deliveries; create/update/delete are audited without the secret", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    name: "gone",
    url: receiver.url(),
    events: ["cascade.test"],
  });
  const id = created.body.id;
  await publishDomainEvent(app.broker, ctx.workspaceId, "cascade.test", { n: 1 });
  await waitFor(
    async () => {
      const list = await ctx.owner.client.get(`${ctx.ws}/webhooks`);
      return list.body.find((w: { id: string }) => w.id === id)?._count.deliveries === 1;
    },
    5000,
    "the delivery to be counted",
  );
  await ctx.owner.client.patch(`${ctx.ws}/webhooks/${id}`, { active: false });
  const del = await ctx.owner.client.delete(`${ctx.ws}/webhooks/${id}`);
  expect(del.status).toBe(200);
  expect(del.body).toEqual({ success: true });
  expect((await ctx.owner.client.delete(`${ctx.ws}/webhooks/${id}`)).status).toBe(404);
  const [{ n }] = await (
    await database()
  ).query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = :id`, {
    type: QueryTypes.SELECT,
    replacements: { id },
  });
  expect(Number(n)).toBe(0);

  const logs = await ctx.owner.client.get(`${ctx.ws}/audit-logs?limit=100`);
  const mine = logs.body.data.filter((l: { targetId: string }) => l.targetId === id);
  expect(mine.map((l: { action: string }) => l.action).sort()).toEqual([
    "webhook.created",
    "webhook.deleted",
    "webhook.updated",
  ]);
  expect(JSON.stringify(logs.body)).not.toContain(created.body.secret);
});

test("auth (spec 5 rules 1 and 2): list needs a session; create/update/delete/retry need session + ADMIN", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { name: "auth", url: receiver.url() });
  const id = created.body.id;
  const anonymous = new HttpClient(app.baseUrl);
  for (const client of [keyClient, anonymous]) {
    expect((await client.get(`${ctx.ws}/webhooks`)).status).toBe(401);
    expect((await client.post(`${ctx.ws}/webhooks`, { url: receiver.url() })).status).toBe(401);
    expect((await client.patch(`${ctx.ws}/webhooks/${id}`, { name: "k" })).status).toBe(401);
    expect((await client.delete(`${ctx.ws}/webhooks/${id}`)).status).toBe(401);
    expect((await client.get(`${ctx.ws}/webhooks/deliveries`)).status).toBe(401);
    expect((await client.post(`${ctx.ws}/webhooks/deliveries/some-id/retry`)).status).toBe(401);
  }
  // A MEMBER may list, not manage.
  expect((await member.get(`${ctx.ws}/webhooks`)).status).toBe(200);
  expect((await member.get(`${ctx.ws}/webhooks/deliveries`)).status).toBe(200);
  expect((await member.post(`${ctx.ws}/webhooks`, { url: receiver.url() })).status).toBe(403);
  expect((await member.patch(`${ctx.ws}/webhooks/${id}`, { name: "m" })).status).toBe(403);
  expect((await member.delete(`${ctx.ws}/webhooks/${id}`)).status).toBe(403);
  expect((await member.post(`${ctx.ws}/webhooks/deliveries/some-id/retry`)).status).toBe(403);
  // An ADMIN may manage; a stranger may do nothing.
  expect((await admin.post(`${ctx.ws}/webhooks`, { url: receiver.url() })).status).toBe(201);
  expect((await admin.post(`${ctx.ws}/webhooks/deliveries/some-id/retry`)).status).toBe(404);
  expect((await other.owner.client.get(`${ctx.ws}/webhooks`)).status).toBe(403);
  expect((await other.owner.client.post(`${ctx.ws}/webhooks`, { url: receiver.url() })).status).toBe(403);
});

test("webhooks.dispatchDue (the cron tick's step) sends what is due in one pass", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    url: receiver.url("/tick"),
    events: ["tick.test"],
  });
  // Written directly, so nothing wakes the dispatcher and its poll is far away: only the tick sends it.
  await (
    await database()
  ).query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at)
     VALUES ('tick-1', :ws, :ep, 'tick.test', 'OUTBOUND', '{"event":"tick.test","timestamp":"t","data":{}}', now())`,
    { replacements: { ws: ctx.workspaceId, ep: created.body.id } },
  );
  const result = await app.broker.call("webhooks.dispatchDue");
  expect(result).toEqual({ sent: 1 });
  expect(
    receiver.received.filter((r) => r.path === "/tick").map((r) => r.headers["x-webhook-delivery"]),
  ).toEqual(["tick-1"]);
  const list = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?endpointId=${created.body.id}`);
  expect(list.body.data[0]).toMatchObject({ id: "tick-1", success: true, attempt: 1 });
  expect(await app.broker.call("webhooks.dispatchDue")).toEqual({ sent: 0 });
});
