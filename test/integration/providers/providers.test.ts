import { providersForSend } from "../../../services/providers/for-send";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** `{ws}/providers/email` and `{ws}/providers/sms`: defaults, masked credentials, checks, access. */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "providers"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
});

/** What the sending process reads: the channel's providers in failover order, secrets opened. */
const opened = (channel: "email" | "sms") => providersForSend(ctx.workspaceId, channel);

test("email providers: the first is the default, a new default moves it, secrets are masked and kept", async () => {
  const c = ctx.owner.client;
  const smtp = await c.post(`${ctx.ws}/providers/email`, {
    type: "smtp",
    name: "Relay",
    config: { host: "smtp.example.com", port: 587, username: "relay", password: "relay-password-42" },
  });
  expect(smtp.status).toBe(201);
  expect(smtp.body).toMatchObject({
    channel: "email",
    type: "smtp",
    name: "Relay",
    isDefault: true,
    priority: 0,
    config: { host: "smtp.example.com", port: 587, username: "relay", password: "••••d-42" },
  });
  expect(JSON.stringify(smtp.body)).not.toContain("relay-password-42");

  const api = await c.post(`${ctx.ws}/providers/email`, {
    type: "emailapi1",
    config: { apiKey: "SG.key-0123456789", baseUrl: "http://127.0.0.1:9/" },
    priority: 5,
  });
  expect(api.status).toBe(201);
  expect(api.body).toMatchObject({ name: "emailapi1", isDefault: false, config: { apiKey: "••••6789" } });

  const moved = await c.patch(`${ctx.ws}/providers/email/${api.body.id}`, { isDefault: true });
  expect(moved.body.isDefault).toBe(true);
  const list = await c.get(`${ctx.ws}/providers/email`);
  expect(list.status).toBe(200);
  expect(list.body.map((p: { id: string; isDefault: boolean }) => [p.id, p.isDefault])).toEqual([
    [api.body.id, true],
    [smtp.body.id, false],
  ]);

  // The mask sent back keeps the secret; the sender reads it opened.
  const kept = await c.patch(`${ctx.ws}/providers/email/${smtp.body.id}`, {
    config: { password: "••••d-42", port: 2525 },
  });
  expect(kept.status).toBe(200);
  expect(kept.body.config).toMatchObject({ port: 2525, password: "••••d-42" });
  const forSend = await opened("email");
  expect(forSend.map((p) => p.id)).toEqual([api.body.id, smtp.body.id]);
  expect(forSend[1].config).toMatchObject({ password: "relay-password-42", port: 2525 });

  const got = await c.get(`${ctx.ws}/providers/email/${smtp.body.id}`);
  expect(got.body.config.password).toBe("••••d-42");

  // Deleting the default makes the next in priority order the default.
  expect((await c.delete(`${ctx.ws}/providers/email/${api.body.id}`)).body).toEqual({ success: true });
  const after = await c.get(`${ctx.ws}/providers/email`);
  expect(after.body).toEqual([expect.objectContaining({ id: smtp.body.id, isDefault: true })]);
  expect((await c.delete(`${ctx.ws}/providers/email/${api.body.id}`)).status).toBe(404);
});

test("sms providers on their own channel; a provider of the other channel is not found", async () => {
  const c = ctx.owner.client;
  const twilio = await c.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi1",
    config: { accountSid: "AC123", authToken: "twilio-token-5678", from: "+15550001111" },
  });
  expect(twilio.status).toBe(201);
  expect(twilio.body).toMatchObject({ channel: "sms", isDefault: true, config: { authToken: "••••5678" } });
  const vonage = await c.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi2",
    name: "Vonage",
    config: { apiKey: "k1", apiSecret: "vonage-secret-0000", from: "Acme" },
  });
  expect(vonage.body).toMatchObject({ isDefault: false, config: { apiKey: "k1", apiSecret: "••••0000" } });

  expect((await c.get(`${ctx.ws}/providers/sms`)).body).toHaveLength(2);
  expect((await c.get(`${ctx.ws}/providers/email/${twilio.body.id}`)).status).toBe(404);
  expect((await c.patch(`${ctx.ws}/providers/email/${twilio.body.id}`, { name: "x" })).status).toBe(404);
  expect((await c.delete(`${ctx.ws}/providers/email/${twilio.body.id}`)).status).toBe(404);
  const renamed = await c.patch(`${ctx.ws}/providers/sms/${vonage.body.id}`, {
    name: "Vonage EU",
    priority: 1,
  });
  expect(renamed.body).toMatchObject({ name: "Vonage EU", priority: 1, config: { apiSecret: "••••0000" } });
  expect((await c.delete(`${ctx.ws}/providers/sms/${vonage.body.id}`)).status).toBe(200);
});

test("bad input is refused with the field named, and nothing is stored", async () => {
  const c = ctx.owner.client;
  const fresh = await ownerWithWorkspace(app.baseUrl);
  const f = fresh.owner.client;
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["email", { type: "smsapi1", config: {} }, "type"],
    ["email", { type: "smtp", config: { host: "h" } }, "config.port"],
    ["email", { type: "smtp", config: { host: "h", port: "25x" } }, "config.port"],
    ["email", { type: "emailapi2", config: { apiKey: "k".repeat(10) } }, "config.domain"],
    ["email", { type: "emailapi1", config: { apiKey: "••••1234" } }, "config.apiKey"],
    ["email", { type: "emailapi1", config: { apiKey: "key-1", baseUrl: "ftp://x" } }, "config.baseUrl"],
    ["sms", { type: "smtp", config: {} }, "type"],
    ["sms", { type: "smsapi1", config: { accountSid: "AC", authToken: "t" } }, "config.from"],
    [
      "sms",
      { type: "smsapi2", config: { apiKey: "k", apiSecret: "s", from: "A" }, priority: -1 },
      "priority",
    ],
  ];
  for (const [channel, body, field] of cases) {
    const res = await f.post(`${fresh.ws}/providers/${channel}`, body);
    expect([res.status, res.body.code, res.body.details?.[0]?.field]).toEqual([
      400,
      "VALIDATION_ERROR",
      field,
    ]);
  }
  expect((await f.get(`${fresh.ws}/providers/email`)).body).toEqual([]);
  expect((await f.get(`${fresh.ws}/providers/sms`)).body).toEqual([]);

  // Another workspace's providers are not reachable from this one.
  const mine = await c.get(`${ctx.ws}/providers/email`);
  expect((await f.get(`${fresh.ws}/providers/email/${mine.body[0].id}`)).status).toBe(404);
  expect((await c.get(`${fresh.ws}/providers/email`)).status).toBe(403);
});

test("providers.manage: a key without it is refused, reads included", async () => {
  const narrow = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "narrow", scopes: ["contacts.read"] });
  const client = app.http();
  client.bearer = narrow.body.key;
  expect((await client.get(`${ctx.ws}/providers/email`)).status).toBe(403);
  expect((await client.post(`${ctx.ws}/providers/sms`, { type: "smsapi1", config: {} })).status).toBe(403);
  const manager = await ctx.owner.client.post(`${ctx.ws}/keys`, {
    name: "ops",
    scopes: ["providers.manage"],
  });
  client.bearer = manager.body.key;
  expect((await client.get(`${ctx.ws}/providers/email`)).status).toBe(200);
});
