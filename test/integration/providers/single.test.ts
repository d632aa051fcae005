import { providersForSend } from "../../../services/providers/for-send";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** One-per-workspace provider types (`{ws}/providers/push` and its kin): create, replace, masks, removal, access. */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "providers"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
});

const vapid = {
  publicKey: "BPublicKeyOfTheWorkspace-0123456789",
  privateKey: "private-key-abcdefgh",
  subject: "mailto:ops@example.com",
};

test("the push provider: 404 before, 201 created, 200 replaced with the mask keeping the secret, then removed", async () => {
  const c = ctx.owner.client;
  expect((await c.get(`${ctx.ws}/providers/push`)).status).toBe(404);

  const created = await c.post(`${ctx.ws}/providers/push`, { config: vapid });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    channel: "push",
    type: "vapid",
    config: { publicKey: vapid.publicKey, privateKey: "••••efgh", subject: vapid.subject },
  });
  expect(JSON.stringify(created.body)).not.toContain(vapid.privateKey);

  const replaced = await c.post(`${ctx.ws}/providers/push`, {
    name: "Site push",
    config: { ...vapid, privateKey: "••••efgh", subject: "https://example.com/contact" },
  });
  expect(replaced.status).toBe(200);
  expect(replaced.body).toMatchObject({ id: created.body.id, name: "Site push" });
  const [stored] = await providersForSend(ctx.workspaceId, "push");
  expect(stored.config).toEqual({ ...vapid, subject: "https://example.com/contact" });

  expect((await c.get(`${ctx.ws}/providers/push`)).body.id).toBe(created.body.id);
  expect((await c.delete(`${ctx.ws}/providers/push`)).body).toEqual({ success: true });
  expect((await c.get(`${ctx.ws}/providers/push`)).status).toBe(404);
  expect((await c.delete(`${ctx.ws}/providers/push`)).status).toBe(404);
});

test("a subject push services would refuse, and a missing key, are 400s naming the field", async () => {
  const c = ctx.owner.client;
  const subject = await c.post(`${ctx.ws}/providers/push`, {
    config: { ...vapid, subject: "ops@example.com" },
  });
  expect(subject.status).toBe(400);
  expect([subject.body.code, subject.body.details?.[0]?.field]).toEqual([
    "VALIDATION_ERROR",
    "config.subject",
  ]);
  const { privateKey: _dropped, ...missing } = vapid;
  const noKey = await c.post(`${ctx.ws}/providers/push`, { config: missing });
  expect(noKey.status).toBe(400);
  expect([noKey.body.code, noKey.body.details?.[0]?.field]).toEqual([
    "VALIDATION_ERROR",
    "config.privateKey",
  ]);
});

test("a key without providers.manage is refused, reads included", async () => {
  const narrow = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "narrow", scopes: ["contacts.read"] });
  const client = app.http();
  client.bearer = narrow.body.key;
  expect((await client.get(`${ctx.ws}/providers/push`)).status).toBe(403);
  expect((await client.post(`${ctx.ws}/providers/push`, { config: vapid })).status).toBe(403);
});
