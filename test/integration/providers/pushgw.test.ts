import { closeHttp } from "../../../services/providers/clients";
import type { PushNotification } from "../../../services/providers/clients/push";
import { providersForSend } from "../../../services/providers/for-send";
import { pushClientFor } from "../../../services/providers/kinds";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import {
  apnsKey,
  serviceAccountFor,
  startApnsFake,
  startFcmFake,
  type ApnsFake,
  type FcmFake,
} from "./push-gateway-fakes";

/**
 * The push gateways' provider routes (`{ws}/providers/pushgw1`, `pushgw2`):
 * 404 before, created, masked, replaced keeping a masked secret, checked
 * (400s naming the field), removed; and the stored provider sending through
 * its client to the local fakes, as the push send path does.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let fcm: FcmFake;
let apns: ApnsFake;
let account: ReturnType<typeof serviceAccountFor>;
const key = apnsKey();

beforeAll(async () => {
  [app, fcm, apns] = await Promise.all([
    startApp({ services: ["api", "auth", "workspaces", "providers"] }),
    startFcmFake(),
    startApnsFake(),
  ]);
  ctx = await ownerWithWorkspace(app.baseUrl);
  account = serviceAccountFor(fcm.tokenUri);
});

afterAll(async () => {
  await Promise.all([app?.stop(), fcm?.close(), apns?.close()]);
  await closeHttp();
});

const notification: PushNotification = {
  messageId: "msg-1",
  title: "Hello",
  body: "World",
  url: null,
  icon: null,
  image: null,
};

const fieldOf = (res: { status: number; body: any }) => [
  res.status,
  res.body.code,
  res.body.details?.[0]?.field,
];

test("pushgw1: 404 before, 201 with the service account masked, 200 replaced keeping it, removed", async () => {
  const c = ctx.owner.client;
  const path = `${ctx.ws}/providers/pushgw1`;
  expect((await c.get(path)).status).toBe(404);

  const config = { projectId: "demo-project", serviceAccount: account.json, baseUrl: fcm.baseUrl };
  const created = await c.post(path, { config });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    channel: "push",
    type: "pushgw1",
    config: {
      projectId: "demo-project",
      serviceAccount: `••••${account.json.slice(-4)}`,
      baseUrl: fcm.baseUrl,
    },
  });
  expect(JSON.stringify(created.body)).not.toContain("PRIVATE KEY");
  expect((await c.get(path)).body).toEqual(created.body);

  const replaced = await c.post(path, {
    name: "App push",
    config: { ...config, projectId: "other-project", serviceAccount: created.body.config.serviceAccount },
  });
  expect(replaced.status).toBe(200);
  expect(replaced.body).toMatchObject({ id: created.body.id, name: "App push" });
  const stored = (await providersForSend(ctx.workspaceId, "push")).find((p) => p.type === "pushgw1");
  expect(stored?.config).toEqual({ ...config, projectId: "other-project" });

  expect((await c.delete(path)).body).toEqual({ success: true });
  expect((await c.get(path)).status).toBe(404);
  expect((await c.delete(path)).status).toBe(404);
});

test("pushgw1: a service account that does not parse, lacks a field or holds no RSA key is a 400 naming config.serviceAccount", async () => {
  const c = ctx.owner.client;
  const path = `${ctx.ws}/providers/pushgw1`;
  const post = (serviceAccount: string) =>
    c.post(path, { config: { projectId: "demo-project", serviceAccount } });
  const bad = [
    "{not json",
    JSON.stringify({ ...account.account, token_uri: undefined }),
    JSON.stringify({ ...account.account, client_email: "" }),
    JSON.stringify({ ...account.account, token_uri: "file:///etc/passwd" }),
    JSON.stringify({ ...account.account, private_key: key.privateKey }),
  ];
  for (const serviceAccount of bad) {
    const res = await post(serviceAccount);
    expect(fieldOf(res)).toEqual([400, "VALIDATION_ERROR", "config.serviceAccount"]);
    expect(res.text).not.toContain("PRIVATE KEY");
  }
  const noProject = await c.post(path, { config: { serviceAccount: account.json } });
  expect(fieldOf(noProject)).toEqual([400, "VALIDATION_ERROR", "config.projectId"]);
  expect((await c.get(path)).status).toBe(404);
});

test("pushgw2: 404 before, 201 with the key masked, 200 replaced keeping it, removed", async () => {
  const c = ctx.owner.client;
  const path = `${ctx.ws}/providers/pushgw2`;
  expect((await c.get(path)).status).toBe(404);

  const config = {
    teamId: "TEAM123456",
    keyId: "KEY1234567",
    privateKey: key.privateKey,
    bundleId: "com.example.shop",
    production: false,
    baseUrl: apns.baseUrl,
  };
  const created = await c.post(path, { config });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    channel: "push",
    type: "pushgw2",
    config: { ...config, privateKey: `••••${key.privateKey.slice(-4)}` },
  });
  expect(JSON.stringify(created.body)).not.toContain("PRIVATE KEY");

  const replaced = await c.post(path, {
    config: { ...config, production: true, privateKey: created.body.config.privateKey },
  });
  expect(replaced.status).toBe(200);
  expect(replaced.body.id).toBe(created.body.id);
  const stored = (await providersForSend(ctx.workspaceId, "push")).find((p) => p.type === "pushgw2");
  expect(stored?.config).toEqual({ ...config, production: true });

  expect((await c.delete(path)).body).toEqual({ success: true });
  expect((await c.get(path)).status).toBe(404);
});

test("pushgw2: a key that is not ES256 and ids Apple would not issue are 400s naming the field", async () => {
  const c = ctx.owner.client;
  const path = `${ctx.ws}/providers/pushgw2`;
  const config = {
    teamId: "TEAM123456",
    keyId: "KEY1234567",
    privateKey: key.privateKey,
    bundleId: "com.example.shop",
    production: true,
  };
  const rsa = await c.post(path, { config: { ...config, privateKey: account.account.private_key } });
  expect(fieldOf(rsa)).toEqual([400, "VALIDATION_ERROR", "config.privateKey"]);
  const text = await c.post(path, { config: { ...config, privateKey: "not a key" } });
  expect(fieldOf(text)).toEqual([400, "VALIDATION_ERROR", "config.privateKey"]);
  const team = await c.post(path, { config: { ...config, teamId: "team" } });
  expect(fieldOf(team)).toEqual([400, "VALIDATION_ERROR", "config.teamId"]);
  const { production: _p, ...noProduction } = config;
  const missing = await c.post(path, { config: noProduction });
  expect(fieldOf(missing)).toEqual([400, "VALIDATION_ERROR", "config.production"]);
  expect((await c.get(path)).status).toBe(404);
});

test("the stored providers send through their clients, as the push send path opens them", async () => {
  const c = ctx.owner.client;
  await c.post(`${ctx.ws}/providers/pushgw1`, {
    config: { projectId: "demo-project", serviceAccount: account.json, baseUrl: fcm.baseUrl },
  });
  await c.post(`${ctx.ws}/providers/pushgw2`, {
    config: {
      teamId: "TEAM123456",
      keyId: "KEY1234567",
      privateKey: key.privateKey,
      bundleId: "com.example.shop",
      production: false,
      baseUrl: apns.baseUrl,
    },
  });
  const providers = await providersForSend(ctx.workspaceId, "push");
  const clientOf = (type: string) => pushClientFor(providers.find((p) => p.type === type)!);

  const gw1 = clientOf("pushgw1");
  const sent1 = await gw1.push(
    { subscriptionId: "s1", type: "pushgw1", endpoint: null, token: "fcm-device", keys: null },
    notification,
  );
  expect(sent1).toEqual({ status: "accepted", providerMessageId: "projects/demo-project/messages/0:1" });
  expect(fcm.sends.at(-1)?.body.message.token).toBe("fcm-device");

  const gw2 = clientOf("pushgw2");
  const sent2 = await gw2.push(
    { subscriptionId: "s2", type: "pushgw2", endpoint: null, token: "apnsdevice", keys: null },
    notification,
  );
  expect(sent2).toMatchObject({ status: "accepted" });
  expect(apns.requests.at(-1)?.headers[":path"]).toBe("/3/device/apnsdevice");
  await gw2.close!();
});

test("a key without providers.manage is refused", async () => {
  const narrow = await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "narrow", scopes: ["contacts.read"] });
  const client = app.http();
  client.bearer = narrow.body.key;
  expect((await client.get(`${ctx.ws}/providers/pushgw1`)).status).toBe(403);
  expect((await client.delete(`${ctx.ws}/providers/pushgw2`)).status).toBe(403);
});
