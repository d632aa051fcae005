import {
  newSecret,
  signInbound,
  signOutbound,
  verifyInbound,
  verifyOutbound,
} from "../../services/webhooks/signature";
import { deliveryBody, deliveryHeaders, retryDelay } from "../../services/webhooks/dispatcher";
import { open, seal } from "../../lib/secret-box";

describe("webhook signatures", () => {
  test("outbound: hex HMAC-SHA256 of `<timestamp>.<raw body>` (reference vector)", () => {
    const body = '{"event":"contact.created","data":{"id":"c_1"}}';
    expect(signOutbound("whsec_test", 1700000000, body)).toBe(
      "70a5c276352d2463bdbbcada20047aaafceff5e531927aa2b268a93e2d05523f",
    );
  });

  test("inbound: hex HMAC-SHA256 of the raw body (GitHub's published vector)", () => {
    const expected = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(signInbound("It's a Secret to Everybody", "Hello, World!")).toBe(expected);
    expect(verifyInbound("It's a Secret to Everybody", "Hello, World!", expected)).toBe(true);
    expect(verifyInbound("It's a Secret to Everybody", "Hello, World!", expected.toUpperCase())).toBe(true);
    expect(verifyInbound("It's a Secret to Everybody", "Hello, World?", expected)).toBe(false);
    expect(verifyInbound("It's a Secret to Everybody", "Hello, World!", expected.slice(0, 10))).toBe(false);
    expect(verifyInbound("It's a Secret to Everybody", "Hello, World!", undefined)).toBe(false);
  });

  test("receiver check: signature and the 300-second tolerance both ways", () => {
    const secret = newSecret();
    const body = deliveryBody({ event: "purchase", timestamp: "2026-01-01T00:00:00.000Z", data: { a: 1 } });
    const ts = 1_800_000_000;
    const signature = signOutbound(secret, ts, body);
    const headers = { signature, timestamp: String(ts) };
    expect(verifyOutbound(secret, body, headers, ts)).toBe(true);
    expect(verifyOutbound(secret, body, headers, ts + 300)).toBe(true);
    expect(verifyOutbound(secret, body, headers, ts + 301)).toBe(false);
    expect(verifyOutbound(secret, body, headers, ts - 301)).toBe(false);
    expect(verifyOutbound(secret, body + " ", headers, ts)).toBe(false);
    expect(verifyOutbound("whsec_other", body, headers, ts)).toBe(false);
    expect(verifyOutbound(secret, body, { signature, timestamp: "12abc" }, ts)).toBe(false);
  });

  test("secrets are whsec_ + 48 hex and differ each time", () => {
    const a = newSecret();
    expect(a).toMatch(/^whsec_[0-9a-f]{48}$/);
    expect(newSecret()).not.toBe(a);
  });

  test("body is exactly {event, timestamp, data} in that order; headers carry the attempt's signature", () => {
    const body = deliveryBody({ data: { x: 1 }, timestamp: "t", event: "e" } as never);
    expect(body).toBe('{"event":"e","timestamp":"t","data":{"x":1}}');
    const headers = deliveryHeaders("whsec_k", body, { id: "d1", event: "e" }, 2, 1700000000);
    expect(headers).toMatchObject({
      "Content-Type": "application/json",
      "X-Webhook-Timestamp": "1700000000",
      "X-Webhook-Event": "e",
      "X-Webhook-Delivery": "d1",
      "X-Webhook-Attempt": "2",
      "X-Webhook-Signature": signOutbound("whsec_k", 1700000000, body),
    });
  });

  test("retry schedule: 2 s after attempt 1, 8 s after attempt 2, then none (3 attempts)", () => {
    expect(retryDelay(1, [2000, 8000])).toBe(2000);
    expect(retryDelay(2, [2000, 8000])).toBe(8000);
    expect(retryDelay(3, [2000, 8000])).toBeNull();
  });
});

describe("secret box", () => {
  test("seal/open round trip; ciphertext differs each time and hides the secret", () => {
    const secret = newSecret();
    const a = seal(secret);
    const b = seal(secret);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice(6));
    expect(open(a)).toBe(secret);
    expect(open(b)).toBe(secret);
  });

  test("a tampered ciphertext is refused", () => {
    const sealed = seal("whsec_abc");
    const parts = sealed.split(".");
    parts[3] = Buffer.from("whsec_xyz").toString("base64url");
    expect(() => open(parts.join("."))).toThrow();
  });
});
