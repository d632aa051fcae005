import { generateKeyPairSync, randomBytes } from "node:crypto";
import { decodeProtectedHeader, importSPKI, jwtVerify } from "jose";
import { closeHttp } from "../../../services/providers/clients";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import {
  apnsKey,
  fcmError,
  serviceAccountFor,
  startApnsFake,
  startFcmFake,
  type ApnsFake,
  type FcmFake,
} from "../providers/push-gateway-fakes";

/**
 * Push messages through the real send path (`POST {ws}/messages`, the
 * messages worker) to a contact's pushgw1 (FCM HTTP v1) and pushgw2 (APNs)
 * devices at local fakes of both gateways, with a web subscription and no
 * VAPID pair (skipped): the exact requests each fake received, one delivery
 * per subscription, dead tokens (UNREGISTERED, BadDeviceToken) deactivating
 * their subscriptions, and one FCM OAuth token for all the messages.
 */

const PUBLIC_URL = "https://cms.example.test";
const BUNDLE = "com.example.shop";
const DEAD_FCM = "fcm-dead-device";
const DEAD_APNS = "dead0000apns";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let fcm: FcmFake;
let apns: ApnsFake;
let account: ReturnType<typeof serviceAccountFor>;
const key = apnsKey();
const c = () => ctx.owner.client;

beforeAll(async () => {
  [fcm, apns] = await Promise.all([startFcmFake(), startApnsFake()]);
  account = serviceAccountFor(fcm.tokenUri);
  fcm.sendAnswer = ({ body }) =>
    body.message.token === DEAD_FCM
      ? { status: 404, body: fcmError(404, "NOT_FOUND", "UNREGISTERED") }
      : { status: 200, body: { name: `projects/demo-project/messages/${body.message.token}` } };
  apns.answer = ({ headers }) =>
    headers[":path"] === `/3/device/${DEAD_APNS}`
      ? { status: 400, body: { reason: "BadDeviceToken" } }
      : { status: 200 };
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "segments",
      "templates",
      "messages",
      "providers",
      "push",
    ],
    env: { PUBLIC_URL, MESSAGE_POLL_MS: "50", MESSAGE_RETRY_DELAYS_MS: "100,100" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  // Urls as written, so the requests can be compared whole.
  await c().patch(ctx.ws, { settings: { tracking: { clicks: false } } });
  const gw1 = await c().post(`${ctx.ws}/providers/pushgw1`, {
    config: { projectId: "demo-project", serviceAccount: account.json, baseUrl: fcm.baseUrl },
  });
  expect(gw1.status).toBe(201);
  const gw2 = await c().post(`${ctx.ws}/providers/pushgw2`, {
    config: {
      teamId: "TEAM123456",
      keyId: "KEY1234567",
      privateKey: key.privateKey,
      bundleId: BUNDLE,
      production: false,
      baseUrl: apns.baseUrl,
    },
  });
  expect(gw2.status).toBe(201);
});

afterAll(async () => {
  await app?.stop();
  await Promise.all([fcm?.close(), apns?.close()]);
  await closeHttp();
});

const contact = async (firstName: string) =>
  (await c().post(`${ctx.ws}/contacts`, { email: `${firstName.toLowerCase()}@gw.example.com`, firstName }))
    .body.id as string;

async function subscribe(body: Record<string, unknown>) {
  const res = await c().post(`${ctx.ws}/push`, body);
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** A browser's subscription: a P-256 public key and an auth secret, as `PushSubscription.toJSON()` gives them. */
function webSubscription(name: string) {
  const { publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const p256dh = publicKey.export({ format: "der", type: "spki" }).subarray(-65).toString("base64url");
  return {
    endpoint: `https://push.example.test/push/${name}`,
    keys: { p256dh, auth: randomBytes(16).toString("base64url") },
  };
}

async function send(contactId: string, content: Record<string, unknown>) {
  const res = await c().post(`${ctx.ws}/messages`, { contactId, channel: "push", content });
  expect(res.status).toBe(202);
  return res.body.id as string;
}

const settled = (messageId: string) =>
  waitFor(
    async () => {
      const m = (await c().get(`${ctx.ws}/messages/${messageId}`)).body;
      return ["sent", "failed", "suppressed"].includes(m.status) ? m : null;
    },
    10_000,
    `message ${messageId} settled`,
  );

const deliveriesOf = (message: { deliveries: any[] }) =>
  message.deliveries
    .map((d) => [d.subscriptionId, d.type, d.status, d.code, d.providerMessageId])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));

test("one message reaches the contact's FCM and APNs devices with exact requests; the web one is skipped", async () => {
  const ada = await contact("Ada");
  const android = await subscribe({ type: "pushgw1", contactId: ada, token: "fcm-ada" });
  const iphone = await subscribe({ type: "pushgw2", contactId: ada, token: "a0a0a0a0" });
  const laptop = await subscribe({ type: "web", contactId: ada, ...webSubscription("ada-laptop") });

  const id = await send(ada, {
    title: "Hi {{ contact.firstName }}",
    body: "Half price today",
    url: "https://shop.example.com/sale",
    image: "https://shop.example.com/banner.png",
  });
  const message = await settled(id);
  expect(message.status).toBe("sent");
  expect(["pushgw1", "pushgw2"]).toContain(message.providerType);
  expect(deliveriesOf(message)).toEqual(
    [
      [android, "pushgw1", "accepted", null, "projects/demo-project/messages/fcm-ada"],
      [iphone, "pushgw2", "accepted", null, "apns-1"],
      [laptop, "web", "skipped", "not_configured", null],
    ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );

  expect(fcm.sends).toHaveLength(1);
  expect(fcm.sends[0]).toEqual({
    path: "/v1/projects/demo-project/messages:send",
    authorization: "Bearer token-1",
    body: {
      message: {
        token: "fcm-ada",
        notification: {
          title: "Hi Ada",
          body: "Half price today",
          image: "https://shop.example.com/banner.png",
        },
        data: { messageId: id, url: "https://shop.example.com/sale" },
        android: { priority: "HIGH" },
        webpush: { fcm_options: { link: "https://shop.example.com/sale" } },
      },
    },
  });

  expect(apns.requests).toHaveLength(1);
  const [request] = apns.requests;
  expect(request.headers).toMatchObject({
    ":method": "POST",
    ":path": "/3/device/a0a0a0a0",
    "apns-topic": BUNDLE,
    "apns-push-type": "alert",
    "apns-priority": "10",
    "content-type": "application/json",
  });
  expect(Number(request.headers["apns-expiration"])).toBeGreaterThan(Date.now() / 1000);
  expect(request.body).toEqual({
    aps: { alert: { title: "Hi Ada", body: "Half price today" }, "mutable-content": 1 },
    messageId: id,
    url: "https://shop.example.com/sale",
    image: "https://shop.example.com/banner.png",
  });
  const jwt = String(request.headers.authorization).replace(/^bearer /, "");
  expect(decodeProtectedHeader(jwt)).toEqual({ alg: "ES256", kid: "KEY1234567" });
  const { payload } = await jwtVerify(jwt, await importSPKI(key.publicKey, "ES256"), {
    issuer: "TEAM123456",
  });
  expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(60);

  for (const sub of [android, iphone, laptop])
    expect((await c().get(`${ctx.ws}/push/${sub}`)).body.active).toBe(true);
});

test("several messages share one FCM OAuth token and one APNs provider token", async () => {
  const bo = await contact("Bo");
  await subscribe({ type: "pushgw1", contactId: bo, token: "fcm-bo" });
  await subscribe({ type: "pushgw2", contactId: bo, token: "b0b0b0b0" });
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await send(bo, { title: `News ${i}`, body: "b" }));
  for (const id of ids) expect((await settled(id)).status).toBe("sent");

  const toBo = fcm.sends.filter((s) => s.body.message.token === "fcm-bo");
  expect(toBo.map((s) => s.body.message.notification.title).sort()).toEqual(["News 0", "News 1", "News 2"]);
  expect(new Set(fcm.sends.map((s) => s.authorization))).toEqual(new Set(["Bearer token-1"]));
  expect(fcm.tokenRequests).toHaveLength(1);
  expect(new Set(apns.requests.map((r) => r.headers.authorization)).size).toBe(1);
});

test("UNREGISTERED and BadDeviceToken deactivate their subscriptions; the next message has none to go to", async () => {
  const cy = await contact("Cy");
  const android = await subscribe({ type: "pushgw1", contactId: cy, token: DEAD_FCM });
  const iphone = await subscribe({ type: "pushgw2", contactId: cy, token: DEAD_APNS });

  const message = await settled(await send(cy, { title: "t", body: "b" }));
  expect(message.status).toBe("failed");
  expect(message.error).toContain("pushgw1 UNREGISTERED");
  expect(message.error).toContain("pushgw2 BadDeviceToken");
  expect(deliveriesOf(message)).toEqual(
    [
      [android, "pushgw1", "gone", "UNREGISTERED", null],
      [iphone, "pushgw2", "gone", "BadDeviceToken", null],
    ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
  expect(fcm.sends.filter((s) => s.body.message.token === DEAD_FCM)).toHaveLength(1);
  expect(apns.requests.filter((r) => r.headers[":path"] === `/3/device/${DEAD_APNS}`)).toHaveLength(1);
  // Deactivated once the worker's pass over the batch ends (the message's status is written first).
  for (const sub of [android, iphone])
    await waitFor(
      async () => (await c().get(`${ctx.ws}/push/${sub}`)).body.active === false,
      10_000,
      `subscription ${sub} deactivated`,
    );

  const before = [fcm.sends.length, apns.requests.length];
  const next = await settled(await send(cy, { title: "again", body: "b" }));
  expect(next).toMatchObject({ status: "suppressed", reason: "invalid_address" });
  expect([fcm.sends.length, apns.requests.length]).toEqual(before);
  expect(fcm.tokenRequests).toHaveLength(1);
});
