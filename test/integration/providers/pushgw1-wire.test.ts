import { decodeProtectedHeader, importSPKI, jwtVerify } from "jose";
import { closeHttp } from "../../../services/providers/clients";
import type { PushNotification, PushTarget } from "../../../services/providers/clients/push";
import { pushgw1Client } from "../../../services/providers/pushgw1/client";
import { fcmError, serviceAccountFor, startFcmFake, type FcmFake } from "./push-gateway-fakes";

/** pushgw1 (the FCM HTTP v1 wire) against a local fake of the token endpoint and messages:send. */

let fake: FcmFake;
let account: ReturnType<typeof serviceAccountFor>;
let providers = 0;

beforeAll(async () => {
  fake = await startFcmFake();
  account = serviceAccountFor(fake.tokenUri);
});

beforeEach(() => {
  fake.tokenRequests = [];
  fake.sends = [];
  fake.tokenAnswer = (n) => ({ status: 200, body: { access_token: `token-${n}`, expires_in: 3599 } });
  fake.sendAnswer = () => ({ status: 200, body: { name: "projects/demo-project/messages/0:1" } });
});

afterAll(async () => {
  await fake.close();
  await closeHttp();
});

/** A client of its own provider (tokens are kept per provider, so each test starts with none). */
const newClient = () =>
  pushgw1Client(`provider-${++providers}`, {
    projectId: "demo-project",
    serviceAccount: account.json,
    baseUrl: fake.baseUrl,
  });

const target = (token: string): PushTarget => ({
  subscriptionId: `sub-${token}`,
  type: "pushgw1",
  endpoint: null,
  token,
  keys: null,
});

const notification: PushNotification = {
  messageId: "msg-1",
  title: "Spring sale",
  body: "Everything 20% off",
  url: "https://shop.example/sale",
  icon: "https://shop.example/icon.png",
  image: "https://shop.example/banner.png",
};

test("many sends share ONE OAuth token, got with a JWT assertion the service account's key signed", async () => {
  const client = newClient();
  const concurrent = await Promise.all(
    Array.from({ length: 20 }, (_, i) => client.push(target(`device-${i}`), notification)),
  );
  const later = [];
  for (let i = 20; i < 25; i++) later.push(await client.push(target(`device-${i}`), notification));

  for (const outcome of [...concurrent, ...later])
    expect(outcome).toEqual({ status: "accepted", providerMessageId: "projects/demo-project/messages/0:1" });
  expect(fake.tokenRequests).toHaveLength(1);
  expect(fake.sends).toHaveLength(25);
  expect(new Set(fake.sends.map((s) => s.authorization))).toEqual(new Set(["Bearer token-1"]));

  const [form] = fake.tokenRequests;
  expect(Object.keys(form).sort()).toEqual(["assertion", "grant_type"]);
  expect(form.grant_type).toBe("urn:ietf:params:oauth:grant-type:jwt-bearer");
  expect(decodeProtectedHeader(form.assertion)).toEqual({ alg: "RS256", typ: "JWT", kid: "key-id-1" });
  const { payload } = await jwtVerify(form.assertion, await importSPKI(account.publicKey, "RS256"), {
    issuer: account.account.client_email,
    audience: fake.tokenUri,
  });
  expect(payload.scope).toBe("https://www.googleapis.com/auth/firebase.messaging");
  expect(payload.exp! - payload.iat!).toBe(3600);
  expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(60);
});

test("the exact request: the project's messages:send, one device token, the notification and our data", async () => {
  await newClient().push(target("device-a"), notification);
  expect(fake.sends).toEqual([
    {
      path: "/v1/projects/demo-project/messages:send",
      authorization: "Bearer token-1",
      body: {
        message: {
          token: "device-a",
          notification: {
            title: "Spring sale",
            body: "Everything 20% off",
            image: "https://shop.example/banner.png",
          },
          data: { messageId: "msg-1", url: "https://shop.example/sale" },
          android: { priority: "HIGH" },
          webpush: {
            notification: { icon: "https://shop.example/icon.png" },
            fcm_options: { link: "https://shop.example/sale" },
          },
        },
      },
    },
  ]);

  fake.sends = [];
  await newClient().push(target("device-b"), { ...notification, url: null, icon: null, image: null });
  expect(fake.sends[0].body).toEqual({
    message: {
      token: "device-b",
      notification: { title: "Spring sale", body: "Everything 20% off" },
      data: { messageId: "msg-1" },
      android: { priority: "HIGH" },
    },
  });
});

test("outcomes come from details[].errorCode: UNREGISTERED is gone, INVALID_ARGUMENT failed, QUOTA_EXCEEDED and 5xx transient", async () => {
  const client = newClient();
  const answers: Record<string, { status: number; body: unknown }> = {
    dead: { status: 404, body: fcmError(404, "NOT_FOUND", "UNREGISTERED") },
    bad: { status: 400, body: fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT") },
    busy: { status: 429, body: fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED") },
    down: { status: 503, body: fcmError(503, "UNAVAILABLE", "UNAVAILABLE") },
    // The text says "unregistered"; only the code counts.
    wording: {
      status: 404,
      body: { error: { code: 404, message: "UNREGISTERED token", status: "NOT_FOUND" } },
    },
  };
  fake.sendAnswer = (send) => answers[send.body.message.token];
  expect(await client.push(target("dead"), notification)).toEqual({ status: "gone", code: "UNREGISTERED" });
  expect(await client.push(target("bad"), notification)).toEqual({
    status: "failed",
    code: "INVALID_ARGUMENT",
    transient: false,
  });
  expect(await client.push(target("busy"), notification)).toEqual({
    status: "failed",
    code: "QUOTA_EXCEEDED",
    transient: true,
  });
  expect(await client.push(target("down"), notification)).toEqual({
    status: "failed",
    code: "UNAVAILABLE",
    transient: true,
  });
  expect(await client.push(target("wording"), notification)).toEqual({
    status: "failed",
    code: "NOT_FOUND",
    transient: false,
  });
  expect(fake.tokenRequests).toHaveLength(1);
});

test("a token near its expiry is replaced before use, and the new one is kept", async () => {
  // Five minutes left is too little: the next send gets a new token.
  fake.tokenAnswer = (n) => ({
    status: 200,
    body: { access_token: `token-${n}`, expires_in: n === 1 ? 300 : 3599 },
  });
  const client = newClient();
  for (let i = 0; i < 4; i++) await client.push(target(`device-${i}`), notification);
  expect(fake.tokenRequests).toHaveLength(2);
  expect(fake.sends.map((s) => s.authorization)).toEqual([
    "Bearer token-1",
    "Bearer token-2",
    "Bearer token-2",
    "Bearer token-2",
  ]);
});

test("a 401 gets one new token, shared by the sends that saw it, and each send is tried once more", async () => {
  fake.sendAnswer = (send) =>
    send.authorization === "Bearer token-1"
      ? { status: 401, body: { error: { code: 401, status: "UNAUTHENTICATED", details: [] } } }
      : { status: 200, body: { name: "projects/demo-project/messages/0:2" } };
  const client = newClient();
  const outcomes = await Promise.all(
    Array.from({ length: 5 }, (_, i) => client.push(target(`device-${i}`), notification)),
  );
  expect(outcomes.every((o) => o.status === "accepted")).toBe(true);
  expect(fake.tokenRequests).toHaveLength(2);
  expect(fake.sends.filter((s) => s.authorization === "Bearer token-2")).toHaveLength(5);

  // Refused again with the new token: failed, not an endless refresh.
  fake.sendAnswer = () => ({ status: 401, body: { error: { code: 401, status: "UNAUTHENTICATED" } } });
  expect(await client.push(target("device-x"), notification)).toEqual({
    status: "failed",
    code: "UNAUTHENTICATED",
    transient: false,
  });
  expect(fake.tokenRequests).toHaveLength(3);
});

test("a refused token exchange fails the send with the OAuth error code and is not kept", async () => {
  fake.tokenAnswer = (n) =>
    n === 1
      ? { status: 400, body: { error: "invalid_grant", error_description: "Invalid JWT Signature." } }
      : { status: 200, body: { access_token: `token-${n}`, expires_in: 3599 } };
  const client = newClient();
  expect(await client.push(target("device-1"), notification)).toEqual({
    status: "failed",
    code: "oauth_invalid_grant",
    transient: false,
  });
  expect(fake.sends).toHaveLength(0);
  expect(await client.push(target("device-1"), notification)).toMatchObject({ status: "accepted" });
  expect(fake.tokenRequests).toHaveLength(2);
});

test("an unreachable API is a transient failure", async () => {
  const client = pushgw1Client(`provider-${++providers}`, {
    projectId: "demo-project",
    serviceAccount: serviceAccountFor("http://127.0.0.1:1/token").json,
  });
  expect(await client.push(target("device-1"), notification)).toEqual({
    status: "failed",
    code: "network",
    transient: true,
  });
});
