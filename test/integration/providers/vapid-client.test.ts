import webPush from "web-push";
import { resetConfig } from "../../../lib/config";
import type { PushClient, PushTarget } from "../../../services/providers/clients/push";
import { vapidClient, WEB_PUSH_TTL_SECONDS } from "../../../services/providers/vapid/client";
import {
  browser,
  HANG,
  startPushService,
  verifyVapid,
  type FakePushService,
} from "../../helpers/push-service";

/**
 * The vapid client against a local push service: the exact request (RFC 8291
 * payload decrypted with the browser's own keys, RFC 8292 JWT verified,
 * TTL, aes128gcm), connections kept alive, and each answer in our words.
 */

let service: FakePushService;
let client: PushClient;
const vapid = { ...webPush.generateVAPIDKeys(), subject: "mailto:ops@example.com" };
const notification = {
  messageId: "msg-1",
  title: "Sale",
  body: "Everything is half price",
  url: "https://shop.example.com/sale",
  icon: "https://shop.example.com/icon.png",
  image: null,
};

const target = (name: string): PushTarget & { read: ReturnType<typeof browser>["read"] } => {
  const b = browser(service, name);
  return { subscriptionId: name, type: "web", token: null, ...b.subscription, read: b.read };
};

beforeAll(async () => {
  service = await startPushService();
  process.env.PUSH_CA_FILE = service.caFile;
  process.env.PROVIDER_TIMEOUT_MS = "500";
  resetConfig();
  client = vapidClient("provider-1", vapid);
});

afterAll(async () => {
  await client.close?.();
  await service.stop();
  delete process.env.PUSH_CA_FILE;
  delete process.env.PROVIDER_TIMEOUT_MS;
  resetConfig();
});

test("a push is encrypted for the browser's keys and signed with the workspace's VAPID pair", async () => {
  const to = target("alice");
  const outcome = await client.push(to, notification);
  expect(outcome).toEqual({ status: "accepted", providerMessageId: expect.stringContaining("/messages/") });
  const request = service.requests.at(-1)!;
  expect(request.path).toBe("/push/alice");
  expect(request.headers).toMatchObject({
    "content-encoding": "aes128gcm",
    "content-type": "application/octet-stream",
    ttl: String(WEB_PUSH_TTL_SECONDS),
  });
  expect(to.read(request)).toEqual({ ...notification });
  const claims = await verifyVapid(request, vapid.publicKey, service.origin);
  const now = Math.floor(Date.now() / 1000);
  expect(claims.sub).toBe(vapid.subject);
  expect(claims.exp).toBeGreaterThan(now);
  expect(claims.exp! - now).toBeLessThanOrEqual(24 * 3600);
  // Another browser's keys cannot read it.
  expect(() => target("mallory").read(request)).toThrow();
});

test("sends reuse their connection (a keep-alive agent per client)", async () => {
  const before = service.connections();
  for (let i = 0; i < 5; i++) await client.push(target(`keep-${i}`), notification);
  expect(service.connections() - before).toBeLessThanOrEqual(1);
  // One VAPID token per push service, reused (RFC 8292 lets it live up to a day).
  const tokens = new Set(service.requests.slice(-5).map((r) => r.headers.authorization));
  expect(tokens.size).toBe(1);
});

test("404 and 410 are gone; 429 and 5xx transient; other 4xx permanent; the network transient", async () => {
  const answers: Array<[number, unknown]> = [
    [410, { status: "gone", code: "410" }],
    [404, { status: "gone", code: "404" }],
    [429, { status: "failed", code: "429", transient: true }],
    [503, { status: "failed", code: "503", transient: true }],
    [400, { status: "failed", code: "400", transient: false }],
    [413, { status: "failed", code: "413", transient: false }],
  ];
  for (const [status, expected] of answers) {
    service.answers.set(`/push/answer-${status}`, status);
    expect(await client.push(target(`answer-${status}`), notification)).toEqual(expected);
  }
  service.answers.set("/push/hangs", HANG);
  expect(await client.push(target("hangs"), notification)).toEqual({
    status: "failed",
    code: "timeout",
    transient: true,
  });
  const closed = { ...target("nowhere"), endpoint: "https://127.0.0.1:1/push/nowhere" };
  expect(await client.push(closed, notification)).toEqual({
    status: "failed",
    code: "ECONNREFUSED",
    transient: true,
  });
});
