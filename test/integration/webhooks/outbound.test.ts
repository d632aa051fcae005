import crypto from "node:crypto";
import type { ServiceBroker } from "moleculer";
import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { DOMAIN_EVENTS_CHANNEL, sendDomainEnvelope, type DomainEvent } from "../../../lib/domain-events";
import { publishDomainEvent } from "../../helpers/facts";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver, type Received } from "../../helpers/receiver";

// A fast retry schedule here; the real 2 s / 8 s schedule is checked in retry-timing.test.ts.
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const behaviours = new Map<
  string,
  (index: number) => { status: number; body?: string; headers?: Record<string, string> } | "hang"
>();

const hits = (path: string) => receiver.received.filter((r) => r.path === path);

async function endpoint(path: string, events: string[] = [], extra: Record<string, unknown> = {}) {
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    name: path,
    url: receiver.url(path),
    events,
    ...extra,
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string };
}

async function deliveriesOf(endpointId: string) {
  const res = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?endpointId=${endpointId}`);
  expect(res.status).toBe(200);
  return res.body.data as Array<Record<string, any>>;
}

function expectSigned(r: Received, secret: string) {
  const ts = Number(r.headers["x-webhook-timestamp"]);
  const expected = crypto.createHmac("sha256", secret).update(`${ts}.${r.body}`).digest("hex");
  expect(r.headers["x-webhook-signature"]).toBe(expected);
}

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "events", "webhooks"],
    env: { WEBHOOK_RETRY_DELAYS_MS: "200,400", WEBHOOK_TIMEOUT_MS: "1000", WEBHOOK_POLL_MS: "200" },
  });
  receiver = await startReceiver((req) => {
    const count = receiver.received.filter((r) => r.path === req.path).length - 1;
    return behaviours.get(req.path)?.(count) ?? { status: 200, body: '{"ok":true}' };
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(async () => {
  await receiver.close();
  await app.stop();
});

test("a domain event reaches a subscribed endpoint with the exact 6.1 body, headers and signature", async () => {
  const ep = await endpoint("/exact", ["contact.created"]);
  const before = Math.floor(Date.now() / 1000);
  const event = await publishDomainEvent(app.broker, ctx.workspaceId, "contact.created", {
    contactId: "c1",
    email: "a@example.test",
    firstName: "Ada",
    lastName: "L",
  });
  const [r] = await waitFor(() => (hits("/exact").length ? hits("/exact") : null), 5000, "the delivery");
  expect(r.body).toBe(
    JSON.stringify({
      event: "contact.created",
      timestamp: event.occurredAt,
      data: { contactId: "c1", email: "a@example.test", firstName: "Ada", lastName: "L" },
    }),
  );
  expect(r.headers["content-type"]).toBe("application/json");
  expect(r.headers["x-webhook-event"]).toBe("contact.created");
  expect(r.headers["x-webhook-attempt"]).toBe("1");
  expect(r.headers["x-webhook-timestamp"]).toMatch(/^\d+$/);
  const ts = Number(r.headers["x-webhook-timestamp"]);
  expect(ts).toBeGreaterThanOrEqual(before);
  expect(ts).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  expectSigned(r, ep.secret);

  const [d] = await waitFor(
    async () => {
      const list = await deliveriesOf(ep.id);
      return list[0]?.success ? list : null;
    },
    5000,
    "success to be recorded",
  );
  expect(r.headers["x-webhook-delivery"]).toBe(d.id);
  expect(d).toMatchObject({
    endpointId: ep.id,
    event: "contact.created",
    direction: "OUTBOUND",
    attempt: 1,
    success: true,
    statusCode: 200,
    responseBody: '{"ok":true}',
    error: null,
    nextAttemptAt: null,
    payload: { event: "contact.created", timestamp: event.occurredAt, data: { contactId: "c1" } },
    deliveredAt: expect.any(String),
    createdAt: expect.any(String),
  });
});

test("recorded activity events fan out by type; unsubscribed and inactive endpoints get nothing", async () => {
  const buyer = await endpoint("/purchase", ["purchase"]);
  const signup = await endpoint("/signup", ["signup"]);
  const all = await endpoint("/all", ["*"]);
  const inactive = await endpoint("/inactive", []);
  expect((await ctx.owner.client.patch(`${ctx.ws}/webhooks/${inactive.id}`, { active: false })).status).toBe(
    200,
  );

  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, {
    type: "purchase",
    metadata: { amount: 42 },
  });
  expect(posted.status).toBe(201);
  await waitFor(
    () => hits("/purchase").length === 1 && hits("/all").length >= 1,
    5000,
    "purchase deliveries",
  );
  const body = JSON.parse(hits("/purchase")[0].body);
  expect(body).toMatchObject({
    event: "purchase",
    data: { eventId: posted.body.id, type: "purchase", metadata: { amount: 42 } },
  });
  expectSigned(hits("/purchase")[0], buyer.secret);
  expectSigned(
    hits("/all").find((r) => r.headers["x-webhook-event"] === "purchase")!,
    all.secret,
  );
  // Fan-out is one statement per event: once these rows exist, none exists for the others.
  expect(await deliveriesOf(signup.id)).toEqual([]);
  expect(await deliveriesOf(inactive.id)).toEqual([]);
  expect(hits("/signup")).toEqual([]);
  expect(hits("/inactive")).toEqual([]);
});

test("the same domain event delivered twice by the channel makes one delivery", async () => {
  const ep = await endpoint("/dedupe", ["dedupe.test"]);
  const event: DomainEvent = {
    id: crypto.randomUUID(),
    workspaceId: ctx.workspaceId,
    type: "dedupe.test",
    data: { n: 1 },
    occurredAt: new Date().toISOString(),
  };
  const send = (
    app.broker as ServiceBroker & { sendToChannel(n: string, p: unknown): Promise<void> }
  ).sendToChannel.bind(app.broker);
  await send(DOMAIN_EVENTS_CHANNEL, event);
  await send(DOMAIN_EVENTS_CHANNEL, event);
  await waitFor(async () => (await deliveriesOf(ep.id))[0]?.success, 5000, "the delivery");
  expect(await deliveriesOf(ep.id)).toHaveLength(1);
  expect(hits("/dedupe")).toHaveLength(1);
});

test("an envelope delivered again (whole, and overlapping a later one) delivers each of its facts once", async () => {
  const ep = await endpoint("/envelope", ["envelope.test"]);
  const facts: DomainEvent[] = Array.from({ length: 30 }, (_, n) => ({
    id: crypto.randomUUID(),
    workspaceId: ctx.workspaceId,
    type: "envelope.test",
    data: { n },
    occurredAt: new Date().toISOString(),
  }));
  await sendDomainEnvelope(app.broker, facts.slice(0, 20));
  // The channel redelivers the envelope (a consumer's ack lost), then a relay sends a batch overlapping it.
  await sendDomainEnvelope(app.broker, facts.slice(0, 20));
  await sendDomainEnvelope(app.broker, facts.slice(10, 30));
  await waitFor(() => hits("/envelope").length >= 30, 5000, "30 requests");
  await waitFor(
    async () => (await deliveriesOf(ep.id)).every((d) => d.success),
    5000,
    "every delivery settled",
  );
  const ns = hits("/envelope").map((r) => JSON.parse(r.body).data.n as number);
  expect(ns.sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, n) => n));
  expect(new Set(hits("/envelope").map((r) => r.headers["x-webhook-delivery"])).size).toBe(30);
  expect(await deliveriesOf(ep.id)).toHaveLength(30);
});

test("fails twice then succeeds: attempts 1, 2, 3 with one delivery id after the configured waits", async () => {
  behaviours.set("/flaky", (n) => (n < 2 ? { status: 503, body: "busy" } : { status: 204 }));
  const ep = await endpoint("/flaky", ["flaky.test"]);
  await publishDomainEvent(app.broker, ctx.workspaceId, "flaky.test", { n: 1 });
  await waitFor(() => hits("/flaky").length === 3, 8000, "three attempts");
  const got = hits("/flaky");
  expect(got.map((r) => r.headers["x-webhook-attempt"])).toEqual(["1", "2", "3"]);
  expect(new Set(got.map((r) => r.headers["x-webhook-delivery"])).size).toBe(1);
  expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(190);
  expect(got[2].at - got[1].at).toBeGreaterThanOrEqual(390);
  for (const r of got) expectSigned(r, ep.secret);
  expect(new Set(got.map((r) => r.body)).size).toBe(1);
  const [d] = await waitFor(
    async () => {
      const list = await deliveriesOf(ep.id);
      return list[0]?.success ? list : null;
    },
    3000,
    "success",
  );
  expect(d).toMatchObject({
    id: got[0].headers["x-webhook-delivery"],
    attempt: 3,
    success: true,
    statusCode: 204,
    error: null,
  });
});

test("always failing: 3 attempts in all, then failed with status, error and the first 2 KB of the answer", async () => {
  behaviours.set("/down", () => ({ status: 500, body: "e".repeat(5000) }));
  const ep = await endpoint("/down", ["down.test"]);
  await publishDomainEvent(app.broker, ctx.workspaceId, "down.test", {});
  const [d] = await waitFor(
    async () => {
      const list = await deliveriesOf(ep.id);
      return list[0]?.attempt === 3 && list[0].nextAttemptAt === null ? list : null;
    },
    8000,
    "the last attempt",
  );
  expect(d).toMatchObject({
    success: false,
    statusCode: 500,
    error: "HTTP 500",
    nextAttemptAt: null,
    deliveredAt: null,
  });
  expect(d.responseBody).toBe("e".repeat(2048));
  expect(hits("/down")).toHaveLength(3);
});

test("redirects are not followed (a 3xx is a failure) and a hanging receiver times out", async () => {
  behaviours.set("/redirect", () => ({
    status: 302,
    body: "",
    headers: { location: receiver.url("/redirected") },
  }));
  behaviours.set("/hang", () => "hang");
  const redirect = await endpoint("/redirect", ["r.test"]);
  const hang = await endpoint("/hang", ["h.test"]);
  await publishDomainEvent(app.broker, ctx.workspaceId, "r.test", {});
  await publishDomainEvent(app.broker, ctx.workspaceId, "h.test", {});
  const [r] = await waitFor(
    async () => {
      const list = await deliveriesOf(redirect.id);
      return list[0]?.attempt >= 1 ? list : null;
    },
    5000,
    "the redirect attempt",
  );
  expect(r).toMatchObject({ success: false, statusCode: 302, error: "HTTP 302" });
  const [h] = await waitFor(
    async () => {
      const list = await deliveriesOf(hang.id);
      return list[0]?.attempt >= 1 ? list : null;
    },
    5000,
    "the timeout",
  );
  expect(h).toMatchObject({
    success: false,
    statusCode: null,
    error: expect.stringMatching(/timed out after 1000 ms/),
  });
  await waitFor(
    async () => (await deliveriesOf(redirect.id))[0]?.attempt === 3,
    5000,
    "the last redirect attempt",
  );
  expect(hits("/redirect").map((x) => x.headers["x-webhook-attempt"])).toEqual(["1", "2", "3"]);
  expect(hits("/redirected")).toEqual([]);
});

test("manual retry sends again at once with the same id and the next attempt number", async () => {
  let fail = true;
  behaviours.set("/later", () => (fail ? { status: 500 } : { status: 200, body: "fine" }));
  const ep = await endpoint("/later", ["later.test"]);
  await publishDomainEvent(app.broker, ctx.workspaceId, "later.test", { x: 1 });
  const [d] = await waitFor(
    async () => {
      const list = await deliveriesOf(ep.id);
      return list[0]?.attempt === 3 && list[0].nextAttemptAt === null ? list : null;
    },
    8000,
    "exhausted retries",
  );
  fail = false;
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks/deliveries/${d.id}/retry`);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    id: d.id,
    attempt: 4,
    success: true,
    statusCode: 200,
    responseBody: "fine",
    nextAttemptAt: null,
  });
  const last = hits("/later").at(-1)!;
  expect(last.headers["x-webhook-delivery"]).toBe(d.id);
  expect(last.headers["x-webhook-attempt"]).toBe("4");
  expectSigned(last, ep.secret);
  expect((await ctx.owner.client.post(`${ctx.ws}/webhooks/deliveries/nope/retry`)).status).toBe(404);
});

test("deliveries list: envelope, filters by endpoint, success and event, limit clamped to 100", async () => {
  const all = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries`);
  expect(all.status).toBe(200);
  expect(all.body.pagination).toMatchObject({ page: 1, limit: 50, total: expect.any(Number) });
  expect(all.body.data.length).toBeGreaterThan(3);
  const failed = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?success=false`);
  expect(failed.body.data.length).toBeGreaterThan(0);
  expect(failed.body.data.every((d: { success: boolean }) => d.success === false)).toBe(true);
  const ok = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?success=true&event=purchase`);
  expect(ok.body.data.length).toBeGreaterThan(0);
  expect(
    ok.body.data.every((d: { success: boolean; event: string }) => d.success && d.event === "purchase"),
  ).toBe(true);
  const paged = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?limit=2&page=2`);
  expect(paged.body.pagination).toMatchObject({ page: 2, limit: 2, total: all.body.pagination.total });
  expect(paged.body.data).toHaveLength(2);
  expect(paged.body.data[0].id).toBe(all.body.data[2].id);
  expect((await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?limit=1000`)).body.pagination.limit).toBe(
    100,
  );
  expect((await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?success=maybe`)).status).toBe(400);
  const other = await ownerWithWorkspace(app.baseUrl);
  expect((await other.owner.client.get(`${other.ws}/webhooks/deliveries`)).body.data).toEqual([]);
  const [{ n }] = await (
    await database()
  ).query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries`, { type: QueryTypes.SELECT });
  expect(Number(n)).toBe(all.body.pagination.total);
});

test("a delivery whose endpoint was deactivated after the fan-out is closed without a request", async () => {
  const ep = await endpoint("/deactivated", ["late.test"]);
  await (
    await database()
  ).query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at)
     VALUES ('late-1', :ws, :ep, 'late.test', 'OUTBOUND', '{"event":"late.test","timestamp":"t","data":{}}', now() + interval '300 milliseconds')`,
    { replacements: { ws: ctx.workspaceId, ep: ep.id } },
  );
  expect((await ctx.owner.client.patch(`${ctx.ws}/webhooks/${ep.id}`, { active: false })).status).toBe(200);
  const [d] = await waitFor(
    async () => {
      const list = await deliveriesOf(ep.id);
      return list[0]?.error ? list : null;
    },
    5000,
    "the delivery to be closed",
  );
  expect(d).toMatchObject({
    id: "late-1",
    success: false,
    attempt: 0,
    error: "Endpoint is inactive",
    nextAttemptAt: null,
  });
  expect(hits("/deactivated")).toEqual([]);
});
