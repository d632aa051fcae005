import { QueryTypes } from "sequelize";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace, signUp } from "../../helpers/http";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let other: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let apiKey: string;
let viewer: HttpClient;
const calls: Array<{ step: string; params: Record<string, unknown>; workspaceId?: string }> = [];

async function insertContact(workspaceId: string, email: string, firstName = "Ada", lastName = "Lovelace") {
  const id = newId();
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email, first_name, last_name) VALUES (:id, :workspaceId, :email, :firstName, :lastName)`,
    { replacements: { id, workspaceId, email, firstName, lastName } },
  );
  return id;
}

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "events", "webhooks"] });
  // Chain steps as recorders: each awaits a tick, so an unawaited chain would answer before they finish.
  const step =
    (name: string) => async (c: { params: Record<string, unknown>; meta: { workspaceId?: string } }) => {
      await new Promise((r) => setTimeout(r, 20));
      calls.push({ step: name, params: c.params, workspaceId: c.meta.workspaceId });
      return { ok: true };
    };
  app.broker.createService({
    name: "segments",
    actions: { evaluateContact: step("segments.evaluateContact") },
  });
  app.broker.createService({ name: "scoring", actions: { applyEvent: step("scoring.applyEvent") } });
  await app.broker.waitForServices(["segments", "scoring"]);

  ctx = await ownerWithWorkspace(app.baseUrl);
  other = await ownerWithWorkspace(app.baseUrl);
  const key = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "all", scopes: [] });
  expect(key.status).toBe(201);
  apiKey = key.body.key;
  const v = await signUp(app.baseUrl, "Viewer");
  expect((await ctx.owner.client.post(`${ctx.ws}/members`, { email: v.email, role: "VIEWER" })).status).toBe(
    201,
  );
  viewer = v.client;
});
afterAll(() => app.stop());

test("POST records an event and answers 201 with the contract's fields after the chain ran in order", async () => {
  const contactId = await insertContact(ctx.workspaceId, "ada@example.test");
  calls.length = 0;
  const res = await ctx.owner.client.post(`${ctx.ws}/events`, {
    type: "purchase",
    contactId,
    metadata: { amount: 120, sku: "A-1" },
    sessionId: "s1",
    pageUrl: "https://shop.example/checkout",
    referrer: "https://google.example/",
    utmSource: "news",
    utmMedium: "email",
    utmCampaign: "spring",
    workspaceId: other.workspaceId,
    id: "forged",
  });
  expect(res.status).toBe(201);
  expect(res.body).toEqual({
    id: expect.any(String),
    type: "purchase",
    metadata: { amount: 120, sku: "A-1" },
    timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    contactId,
    sessionId: "s1",
    pageUrl: "https://shop.example/checkout",
    referrer: "https://google.example/",
    utmSource: "news",
    utmMedium: "email",
    utmCampaign: "spring",
  });
  expect(res.body.id).not.toBe("forged");
  expect(calls.map((c) => c.step)).toEqual(["segments.evaluateContact", "scoring.applyEvent"]);
  expect(calls[0]).toMatchObject({
    params: { contactId, eventId: res.body.id },
    workspaceId: ctx.workspaceId,
  });
  expect(calls[1].params).toMatchObject({
    eventId: res.body.id,
    contactId,
    type: "purchase",
    metadata: { amount: 120, sku: "A-1" },
  });
});

test("an event without a contact skips the contact steps; unknown or foreign contactId is 404; missing type 400", async () => {
  calls.length = 0;
  const anon = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "page_view" });
  expect(anon.status).toBe(201);
  expect(anon.body).toMatchObject({ contactId: null, metadata: {}, sessionId: null });
  expect(calls).toEqual([]);

  const missing = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "x", contactId: "nope" });
  expect(missing.status).toBe(404);
  expect(missing.body.code).toBe("NOT_FOUND");
  const foreign = await insertContact(other.workspaceId, "foreign@example.test");
  expect((await ctx.owner.client.post(`${ctx.ws}/events`, { type: "x", contactId: foreign })).status).toBe(
    404,
  );

  const noType = await ctx.owner.client.post(`${ctx.ws}/events`, { metadata: {} });
  expect(noType.status).toBe(400);
  expect(noType.body.code).toBe("VALIDATION_ERROR");
});

test("GET lists newest first with the contact summary, filters by contact and type", async () => {
  const contactId = await insertContact(ctx.workspaceId, "lin@example.test", "Lin", "Chen");
  for (const type of ["a.first", "a.second", "a.third"]) {
    expect((await ctx.owner.client.post(`${ctx.ws}/events`, { type, contactId })).status).toBe(201);
  }
  const res = await ctx.owner.client.get(`${ctx.ws}/events?contactId=${contactId}`);
  expect(res.status).toBe(200);
  expect(res.body.map((e: { type: string }) => e.type)).toEqual(["a.third", "a.second", "a.first"]);
  expect(res.body[0]).toMatchObject({
    id: expect.any(String),
    type: "a.third",
    metadata: {},
    timestamp: expect.any(String),
    contact: { id: contactId, email: "lin@example.test", firstName: "Lin", lastName: "Chen" },
  });
  const byType = await ctx.owner.client.get(`${ctx.ws}/events?type=a.second`);
  expect(byType.body).toHaveLength(1);
  expect(byType.body[0].contact.id).toBe(contactId);
  const anon = await ctx.owner.client.get(`${ctx.ws}/events?type=page_view`);
  expect(anon.body[0].contact).toBeNull();
  // Another workspace sees none of them.
  expect((await other.owner.client.get(`${other.ws}/events?contactId=${contactId}`)).body).toEqual([]);
});

test("limit: default 50, larger values clamped to 200", async () => {
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO events (id, workspace_id, type, timestamp)
     SELECT gen_random_uuid()::text, :ws, 'bulk', now() - g * interval '1 second' FROM generate_series(1, 230) g`,
    { replacements: { ws: other.workspaceId }, type: QueryTypes.INSERT },
  );
  expect((await other.owner.client.get(`${other.ws}/events`)).body).toHaveLength(50);
  expect((await other.owner.client.get(`${other.ws}/events?limit=7`)).body).toHaveLength(7);
  expect((await other.owner.client.get(`${other.ws}/events?limit=1000`)).body).toHaveLength(200);
  expect((await other.owner.client.get(`${other.ws}/events?limit=abc`)).status).toBe(400);
});

test("auth (spec 5 rule 2): session only; an API key alone is 401; outsiders 403; a VIEWER may list but not record", async () => {
  const keyOnly = new HttpClient(app.baseUrl);
  keyOnly.bearer = apiKey;
  expect((await keyOnly.get(`${ctx.ws}/events`)).status).toBe(401);
  const post = await keyOnly.post(`${ctx.ws}/events`, { type: "x" });
  expect(post.status).toBe(401);
  expect(post.body.code).toBe("UNAUTHORIZED");
  const anonymous = new HttpClient(app.baseUrl);
  expect((await anonymous.get(`${ctx.ws}/events`)).status).toBe(401);
  expect((await anonymous.post(`${ctx.ws}/events`, { type: "x" })).status).toBe(401);
  expect((await other.owner.client.get(`${ctx.ws}/events`)).status).toBe(403);
  expect((await other.owner.client.post(`${ctx.ws}/events`, { type: "x" })).status).toBe(403);
  expect((await viewer.get(`${ctx.ws}/events`)).status).toBe(200);
  expect((await viewer.post(`${ctx.ws}/events`, { type: "x" })).status).toBe(403);
});

test("events.record is the internal entry: stored and listed for the contact", async () => {
  const contactId = await insertContact(ctx.workspaceId, "rec@example.test");
  const recorded = (await app.broker.call(
    "events.record",
    { type: "form.submitted", contactId, metadata: { formId: "f1" }, timestamp: "2026-01-02T03:04:05.000Z" },
    { meta: { principal: { kind: "system" }, workspaceId: ctx.workspaceId } },
  )) as { id: string; timestamp: string };
  expect(recorded.timestamp).toBe("2026-01-02T03:04:05.000Z");
  const listed = (await app.broker.call(
    "events.listForContact",
    { contactId },
    { meta: { principal: { kind: "system" }, workspaceId: ctx.workspaceId } },
  )) as Array<{ id: string }>;
  expect(listed.map((e) => e.id)).toEqual([recorded.id]);
});

// Last: a chain step's service once seen stays expected (a node that has seen it treats its absence as an outage).
test("campaigns.handleEvent runs between segments and scoring once a campaigns service is registered", async () => {
  app.broker.createService({
    name: "campaigns",
    actions: {
      async handleEvent(c: { params: Record<string, unknown> }) {
        calls.push({ step: "campaigns.handleEvent", params: c.params });
      },
    },
  });
  await app.broker.waitForServices(["campaigns"]);
  const contactId = await insertContact(ctx.workspaceId, "grace@example.test");
  calls.length = 0;
  const res = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "signup", contactId });
  expect(res.status).toBe(201);
  expect(calls.map((c) => c.step)).toEqual([
    "segments.evaluateContact",
    "campaigns.handleEvent",
    "scoring.applyEvent",
  ]);
  expect(calls[1].params).toMatchObject({ id: res.body.id, type: "signup", contactId });
});
