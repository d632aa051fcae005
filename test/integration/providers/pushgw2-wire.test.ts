import { decodeProtectedHeader, importSPKI, jwtVerify } from "jose";
import type { PushClient, PushNotification, PushTarget } from "../../../services/providers/clients/push";
import { pushgw2Client } from "../../../services/providers/pushgw2/client";
import { waitFor } from "../../helpers/wait";
import { apnsKey, startApnsFake, type ApnsFake } from "./push-gateway-fakes";

/** pushgw2 (the APNs token wire) against a local HTTP/2 fake (h2c). */

let fake: ApnsFake;
const key = apnsKey();
let providers = 0;
const clients: PushClient[] = [];

beforeAll(async () => {
  fake = await startApnsFake();
});

beforeEach(() => {
  fake.requests = [];
  fake.sessions = [];
  fake.answer = () => ({ status: 200 });
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close?.()));
});

afterAll(async () => {
  await fake.close();
});

/** A client of its own provider (tokens are kept per provider, so each test starts with none). */
function newClient(): PushClient {
  const client = pushgw2Client(`provider-${++providers}`, {
    teamId: "TEAM123456",
    keyId: "KEY1234567",
    privateKey: key.privateKey,
    bundleId: "com.example.shop",
    production: true,
    baseUrl: fake.baseUrl,
  });
  clients.push(client);
  return client;
}

const target = (token: string): PushTarget => ({
  subscriptionId: `sub-${token}`,
  type: "pushgw2",
  endpoint: null,
  token,
  keys: null,
});

const notification: PushNotification = {
  messageId: "msg-1",
  title: "Spring sale",
  body: "Everything 20% off",
  url: "https://shop.example/sale",
  icon: null,
  image: "https://shop.example/banner.png",
};

test("many sends go over ONE HTTP/2 session with ONE provider token, signed ES256 with the team's key", async () => {
  const client = newClient();
  const concurrent = await Promise.all(
    Array.from({ length: 20 }, (_, i) => client.push(target(`device${i}`), notification)),
  );
  const later = [];
  for (let i = 20; i < 25; i++) later.push(await client.push(target(`device${i}`), notification));
  for (const outcome of [...concurrent, ...later])
    expect(outcome).toEqual({ status: "accepted", providerMessageId: expect.stringMatching(/^apns-\d+$/) });

  expect(fake.sessions).toHaveLength(1);
  expect(fake.requests).toHaveLength(25);
  const bearers = new Set(fake.requests.map((r) => r.headers.authorization));
  expect(bearers.size).toBe(1);
  const jwt = String([...bearers][0]).replace(/^bearer /, "");
  expect(decodeProtectedHeader(jwt)).toEqual({ alg: "ES256", kid: "KEY1234567" });
  const { payload } = await jwtVerify(jwt, await importSPKI(key.publicKey, "ES256"), {
    issuer: "TEAM123456",
  });
  expect(Object.keys(payload).sort()).toEqual(["iat", "iss"]);
  expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(60);
});

test("the exact request: POST /3/device/{token}, the APNs headers and the alert payload", async () => {
  await newClient().push(target("a1b2c3"), notification);
  const [request] = fake.requests;
  expect(request.headers).toMatchObject({
    ":method": "POST",
    ":path": "/3/device/a1b2c3",
    "apns-topic": "com.example.shop",
    "apns-push-type": "alert",
    "apns-priority": "10",
    authorization: expect.stringMatching(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/),
  });
  const expiration = Number(request.headers["apns-expiration"]);
  expect(Math.abs(expiration - (Date.now() / 1000 + 24 * 3600))).toBeLessThan(60);
  expect(request.body).toEqual({
    aps: { alert: { title: "Spring sale", body: "Everything 20% off" }, "mutable-content": 1 },
    messageId: "msg-1",
    url: "https://shop.example/sale",
    image: "https://shop.example/banner.png",
  });
});

test("BadDeviceToken, Unregistered and DeviceTokenNotForTopic are gone; 429 and 5xx transient; other reasons failed", async () => {
  const answers: Record<string, { status: number; body?: unknown }> = {
    "/3/device/bad": { status: 400, body: { reason: "BadDeviceToken" } },
    "/3/device/unregistered": { status: 410, body: { reason: "Unregistered", timestamp: 1700000000000 } },
    "/3/device/othertopic": { status: 400, body: { reason: "DeviceTokenNotForTopic" } },
    "/3/device/busy": { status: 429, body: { reason: "TooManyRequests" } },
    "/3/device/down": { status: 503, body: { reason: "ServiceUnavailable" } },
    "/3/device/big": { status: 413, body: { reason: "PayloadTooLarge" } },
  };
  fake.answer = (r) => answers[String(r.headers[":path"])];
  const client = newClient();
  const outcome = (token: string) => client.push(target(token), notification);
  expect(await outcome("bad")).toEqual({ status: "gone", code: "BadDeviceToken" });
  expect(await outcome("unregistered")).toEqual({ status: "gone", code: "Unregistered" });
  expect(await outcome("othertopic")).toEqual({ status: "gone", code: "DeviceTokenNotForTopic" });
  expect(await outcome("busy")).toEqual({ status: "failed", code: "TooManyRequests", transient: true });
  expect(await outcome("down")).toEqual({ status: "failed", code: "ServiceUnavailable", transient: true });
  expect(await outcome("big")).toEqual({ status: "failed", code: "PayloadTooLarge", transient: false });
  expect(fake.sessions).toHaveLength(1);
});

test("ExpiredProviderToken: a new token, the send tried again, and the new token kept for the next sends", async () => {
  let expired: string | undefined;
  fake.answer = (r) => {
    expired ??= r.headers.authorization as string;
    return r.headers.authorization === expired
      ? { status: 403, body: { reason: "ExpiredProviderToken" } }
      : { status: 200 };
  };
  const client = newClient();
  const outcomes = await Promise.all(
    Array.from({ length: 3 }, (_, i) => client.push(target(`device${i}`), notification)),
  );
  expect(outcomes.map((o) => o.status)).toEqual(["accepted", "accepted", "accepted"]);
  expect(await client.push(target("device9"), notification)).toMatchObject({ status: "accepted" });

  const used = fake.requests.map((r) => r.headers.authorization);
  expect(used.filter((a) => a === expired)).toHaveLength(3);
  const renewed = used.filter((a) => a !== expired);
  expect(renewed).toHaveLength(4);
  expect(new Set(renewed).size).toBe(1);
  const jwt = String(renewed[0]).replace(/^bearer /, "");
  await jwtVerify(jwt, await importSPKI(key.publicKey, "ES256"), { issuer: "TEAM123456" });
  expect(fake.sessions).toHaveLength(1);

  // Refused again with the new token: failed, not a loop.
  fake.answer = () => ({ status: 403, body: { reason: "ExpiredProviderToken" } });
  expect(await client.push(target("device10"), notification)).toEqual({
    status: "failed",
    code: "ExpiredProviderToken",
    transient: false,
  });
});

test("a session the server closed is replaced by a new one; close() ends it", async () => {
  const client = newClient();
  expect(await client.push(target("device1"), notification)).toMatchObject({ status: "accepted" });
  fake.sessions[0].close();
  await waitFor(async () => (await client.push(target("device2"), notification)).status === "accepted");
  expect(fake.sessions).toHaveLength(2);

  const [, second] = fake.sessions;
  await client.close!();
  await waitFor(() => second.closed, 5_000, "the client's session to close");
});

test("an unreachable APNs is a transient failure, send after send (no dead session kept)", async () => {
  const client = pushgw2Client(`provider-${++providers}`, {
    teamId: "TEAM123456",
    keyId: "KEY1234567",
    privateKey: key.privateKey,
    bundleId: "com.example.shop",
    production: false,
    baseUrl: "http://127.0.0.1:1",
  });
  clients.push(client);
  for (let i = 0; i < 2; i++)
    expect(await client.push(target("device1"), notification)).toEqual({
      status: "failed",
      code: "network",
      transient: true,
    });
});
