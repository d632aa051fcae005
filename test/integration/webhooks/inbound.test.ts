import crypto from "node:crypto";
import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let endpoint: { id: string; secret: string };
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let outboundSecret: string;
const client = () => new HttpClient(app.baseUrl);

const sign = (secret: string, raw: string) => crypto.createHmac("sha256", secret).update(raw).digest("hex");

function post(id: string, body: unknown, signature?: string | null) {
  const raw = JSON.stringify(body);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (signature !== null) headers["x-webhook-signature"] = signature ?? sign(endpoint.secret, raw);
  return client().request("POST", `/api/webhooks/inbound/${id}`, { raw, headers });
}

async function count(sql: string, replacements: Record<string, unknown>) {
  const [row] = await (await database()).query<{ n: string }>(sql, { type: QueryTypes.SELECT, replacements });
  return Number(row.n);
}

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "webhooks"],
    env: { WEBHOOK_POLL_MS: "200" },
  });
  receiver = await startReceiver();
  ctx = await ownerWithWorkspace(app.baseUrl);
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { name: "shop", direction: "INBOUND" });
  endpoint = res.body;
  const out = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    url: receiver.url(),
    events: ["contact.created", "purchase"],
  });
  outboundSecret = out.body.secret;
});
afterAll(async () => {
  await receiver.close();
  await app.stop();
});

test("a signed delivery creates the contact, records the event and an INBOUND delivery", async () => {
  const body = {
    type: "purchase",
    email: "  Buyer@Example.TEST ",
    firstName: "Bo",
    lastName: "Buyer",
    phone: "+1 415 555 2671",
    metadata: { amount: 99 },
  };
  const res = await post(endpoint.id, body);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ received: true, deliveryId: expect.any(String) });

  const events = await ctx.owner.client.get(`${ctx.ws}/events?type=purchase`);
  expect(events.body).toHaveLength(1);
  expect(events.body[0]).toMatchObject({
    type: "purchase",
    metadata: { amount: 99 },
    contact: { email: "buyer@example.test", firstName: "Bo", lastName: "Buyer" },
  });
  const [contact] = await (
    await database()
  ).query<{ phone: string }>(`SELECT phone FROM contacts WHERE email = 'buyer@example.test'`, {
    type: QueryTypes.SELECT,
  });
  expect(contact.phone).toBe("+14155552671");

  const deliveries = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries?endpointId=${endpoint.id}`);
  expect(deliveries.body.data).toEqual([
    expect.objectContaining({
      id: res.body.deliveryId,
      direction: "INBOUND",
      event: "purchase",
      success: true,
      attempt: 1,
    }),
  ]);
  // The new contact and the event both go out to subscribed outbound endpoints, signed.
  await waitFor(() => receiver.received.length >= 2, 5000, "outbound contact.created and purchase");
  const kinds = receiver.received.map((r) => r.headers["x-webhook-event"]).sort();
  expect(kinds).toEqual(["contact.created", "purchase"]);
  const created = receiver.received.find((r) => r.headers["x-webhook-event"] === "contact.created")!;
  expect(JSON.parse(created.body).data).toEqual({
    contactId: events.body[0].contact.id,
    email: "buyer@example.test",
    firstName: "Bo",
    lastName: "Buyer",
  });
  const ts = created.headers["x-webhook-timestamp"];
  expect(created.headers["x-webhook-signature"]).toBe(
    crypto.createHmac("sha256", outboundSecret).update(`${ts}.${created.body}`).digest("hex"),
  );

  // An INBOUND delivery cannot be retried.
  const retry = await ctx.owner.client.post(`${ctx.ws}/webhooks/deliveries/${res.body.deliveryId}/retry`);
  expect(retry.status).toBe(400);
  expect(retry.body.code).toBe("NOT_RETRYABLE");
});

test("an existing contact is found by email or by contactId; an unknown contactId alone is 404", async () => {
  const first = await post(endpoint.id, { type: "login", email: "buyer@example.test", metadata: { n: 1 } });
  expect(first.status).toBe(200);
  expect(
    await count(`SELECT count(*) AS n FROM contacts WHERE workspace_id = :ws`, { ws: ctx.workspaceId }),
  ).toBe(1);
  const [{ id }] = await (
    await database()
  ).query<{ id: string }>(`SELECT id FROM contacts WHERE workspace_id = :ws`, {
    type: QueryTypes.SELECT,
    replacements: { ws: ctx.workspaceId },
  });
  expect((await post(endpoint.id, { type: "login", contactId: id, metadata: { n: 2 } })).status).toBe(200);
  const logins = await ctx.owner.client.get(`${ctx.ws}/events?type=login`);
  expect(logins.body.map((e: { contact: { id: string } }) => e.contact.id)).toEqual([id, id]);
  const missing = await post(endpoint.id, { type: "login", contactId: "nobody" });
  expect(missing.status).toBe(404);
  // No email and no contact: the event is recorded without one.
  expect((await post(endpoint.id, { type: "ping" })).status).toBe(200);
  expect((await ctx.owner.client.get(`${ctx.ws}/events?type=ping`)).body[0].contact).toBeNull();
});

test("a known email is written through contacts.identify: given fields fill in, blank ones never empty", async () => {
  const email = `known-${crypto.randomUUID()}@example.test`;
  const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email, firstName: "Kim" });
  expect(created.status).toBe(201);
  const res = await post(endpoint.id, {
    type: "visit",
    email,
    firstName: " ",
    lastName: "Known",
    phone: "+1 415 555 2672",
  });
  expect(res.status).toBe(200);
  const contact = await ctx.owner.client.get(`${ctx.ws}/contacts/${created.body.id}`);
  expect(contact.body).toMatchObject({ email, firstName: "Kim", lastName: "Known", phone: "+14155552672" });
});

test("concurrent deliveries with one new email create exactly one contact", async () => {
  const email = `race-${crypto.randomUUID()}@example.test`;
  const results = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      post(endpoint.id, { type: "race", email, firstName: "R", metadata: { i } }),
    ),
  );
  expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
  expect(await count(`SELECT count(*) AS n FROM contacts WHERE email = :email`, { email })).toBe(1);
  expect(await count(`SELECT count(*) AS n FROM events WHERE type = 'race'`, {})).toBe(12);
  // contact.created went out once for it.
  await waitFor(
    () =>
      receiver.received.filter(
        (r) => r.headers["x-webhook-event"] === "contact.created" && r.body.includes(email),
      ).length === 1,
    5000,
    "one contact.created",
  );
});

test("signatures: missing or wrong is 401 INVALID_SIGNATURE with no side effects; a replay within 7 days is 409", async () => {
  const body = { type: "sig.check", email: "sig@example.test" };
  const missing = await post(endpoint.id, body, null);
  expect(missing.status).toBe(401);
  expect(missing.body.code).toBe("INVALID_SIGNATURE");
  const wrong = await post(endpoint.id, body, sign("whsec_wrong", JSON.stringify(body)));
  expect(wrong.status).toBe(401);
  expect(wrong.body.code).toBe("INVALID_SIGNATURE");
  // Signed with the right secret but over other bytes (re-serialised JSON does not verify).
  const reformatted = await client().request("POST", `/api/webhooks/inbound/${endpoint.id}`, {
    raw: JSON.stringify(body, null, 2),
    headers: {
      "content-type": "application/json",
      "x-webhook-signature": sign(endpoint.secret, JSON.stringify(body)),
    },
  });
  expect(reformatted.status).toBe(401);
  expect(await count(`SELECT count(*) AS n FROM events WHERE type = 'sig.check'`, {})).toBe(0);
  expect(await count(`SELECT count(*) AS n FROM contacts WHERE email = 'sig@example.test'`, {})).toBe(0);

  const ok = await post(endpoint.id, body);
  expect(ok.status).toBe(200);
  const replay = await post(endpoint.id, body);
  expect(replay.status).toBe(409);
  expect(replay.body.code).toBe("CONFLICT");
  expect(await count(`SELECT count(*) AS n FROM events WHERE type = 'sig.check'`, {})).toBe(1);
  // Six days later it is still a replay; past seven days the same body is accepted again.
  const sequelize = await database();
  await sequelize.query(`UPDATE webhook_inbound_replays SET received_at = now() - interval '6 days'`);
  expect((await post(endpoint.id, body)).status).toBe(409);
  await sequelize.query(
    `UPDATE webhook_inbound_replays SET received_at = now() - interval '7 days 1 second'`,
  );
  expect((await post(endpoint.id, body)).status).toBe(200);
});

test("a request that fails after the signature check may be sent again (no replay entry kept)", async () => {
  const body = { metadata: { no: "type" } };
  const first = await post(endpoint.id, body);
  expect(first.status).toBe(400);
  expect(first.body.details).toEqual([{ field: "type", message: "is required" }]);
  expect((await post(endpoint.id, body)).status).toBe(400);
});

test("404 unknown or OUTBOUND endpoint, 403 inactive, checked before the signature", async () => {
  expect((await post("no-such-endpoint", { type: "x" })).status).toBe(404);
  const outbound = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url: receiver.url("/o") });
  expect((await post(outbound.body.id, { type: "x" })).status).toBe(404);
  const inactive = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { direction: "INBOUND" });
  await ctx.owner.client.patch(`${ctx.ws}/webhooks/${inactive.body.id}`, { active: false });
  const res = await post(
    inactive.body.id,
    { type: "x" },
    sign(inactive.body.secret, JSON.stringify({ type: "x" })),
  );
  expect(res.status).toBe(403);
  expect(res.body.code).toBe("FORBIDDEN");
});

test("an endpoint without a configured secret accepts unsigned deliveries", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { direction: "INBOUND" });
  await (
    await database()
  ).query(`UPDATE webhook_endpoints SET secret_sealed = NULL WHERE id = :id`, {
    replacements: { id: created.body.id },
  });
  const res = await post(created.body.id, { type: "unsigned.ok" }, null);
  expect(res.status).toBe(200);
  expect((await post(created.body.id, { type: "unsigned.ok" }, null)).status).toBe(200);
});

test("a phone that cannot be a number is a 400 naming the field; a possible one is stored as E.164", async () => {
  const bad = await post(endpoint.id, {
    type: "signup",
    email: "badphone@example.test",
    phone: "call me maybe",
  });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({
    code: "VALIDATION_ERROR",
    details: [{ field: "phone", message: expect.any(String) }],
  });
  expect(
    await count(`SELECT count(*) AS n FROM contacts WHERE email = :email`, {
      email: "badphone@example.test",
    }),
  ).toBe(0);

  // +1 555-01xx is the reserved fictional range: possible, though the numbering plan calls it "not valid".
  const ok = await post(endpoint.id, {
    type: "signup",
    email: "fiction@example.test",
    phone: "+1 555 010 0111",
  });
  expect(ok.status).toBe(200);
  const [contact] = await (
    await database()
  ).query<{ phone: string }>(`SELECT phone FROM contacts WHERE email = 'fiction@example.test'`, {
    type: QueryTypes.SELECT,
  });
  expect(contact.phone).toBe("+15550100111");
});
