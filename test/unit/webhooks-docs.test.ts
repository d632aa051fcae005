import fs from "node:fs";
import path from "node:path";
import { signOutbound } from "../../services/webhooks/signature";

/** The receiver example in docs/webhooks.md is real code: run it against our own signer. */
type Verify = (
  secret: string,
  raw: string | Buffer,
  headers: Record<string, string>,
  tolerance?: number,
) => boolean;

function loadExample(): Verify {
  const doc = fs.readFileSync(path.resolve(__dirname, "../../docs/webhooks.md"), "utf8");
  const block = /```js\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error("no js example in docs/webhooks.md");
  return new Function("require", `${block}\nreturn verifyWebhook;`)(require) as Verify;
}

test("the documented receiver accepts our deliveries and rejects tampered, foreign or stale ones", () => {
  const verify = loadExample();
  const secret = "whsec_" + "ab".repeat(24);
  const body = '{"event":"purchase","timestamp":"2026-11-22T08:00:00.000Z","data":{"amount":1}}';
  const now = Math.floor(Date.now() / 1000);
  const headers = (ts: number, b = body, s = secret) => ({
    "x-webhook-timestamp": String(ts),
    "x-webhook-signature": signOutbound(s, ts, b),
  });
  expect(verify(secret, body, headers(now))).toBe(true);
  expect(verify(secret, Buffer.from(body), headers(now))).toBe(true);
  expect(verify(secret, body + " ", headers(now))).toBe(false);
  expect(verify(secret, body, headers(now, body, "whsec_other"))).toBe(false);
  expect(verify(secret, body, headers(now - 301))).toBe(false);
  expect(verify(secret, body, headers(now + 301))).toBe(false);
  expect(verify(secret, body, headers(now - 299))).toBe(true);
  expect(verify(secret, body, { "x-webhook-timestamp": String(now) })).toBe(false);
});
