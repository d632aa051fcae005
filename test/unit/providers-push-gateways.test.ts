import { KeptTokens, tokenSlot } from "../../services/providers/clients/kept-token";
import { fcmOutcome } from "../../services/providers/pushgw1/client";
import { apnsOutcome } from "../../services/providers/pushgw2/client";

/** The push gateways' kept tokens (one made at a time, reused until renewal) and their answers read as outcomes. */

function maker(renewIn: number | ((n: number) => number) = 60_000) {
  let made = 0;
  const releases: Array<() => void> = [];
  const make = () => {
    const n = ++made;
    return new Promise<{ value: string; renewAt: number }>((resolve) => {
      releases.push(() =>
        resolve({
          value: `t${n}`,
          renewAt: Date.now() + (typeof renewIn === "number" ? renewIn : renewIn(n)),
        }),
      );
    });
  };
  return { make, made: () => made, release: () => releases.shift()?.() };
}

test("concurrent askers share the one token being made, then it is reused", async () => {
  const tokens = new KeptTokens();
  const m = maker();
  const asked = [tokens.get("p", m.make), tokens.get("p", m.make), tokens.get("p", m.make)];
  m.release();
  expect((await Promise.all(asked)).map((t) => t.value)).toEqual(["t1", "t1", "t1"]);
  expect((await tokens.get("p", m.make)).value).toBe("t1");
  expect(m.made()).toBe(1);
});

test("a token past its renewAt is replaced; a stale one is replaced once however many report it", async () => {
  const tokens = new KeptTokens();
  const m = maker((n) => (n === 1 ? -1 : 60_000));
  const first = tokens.get("p", m.make);
  m.release();
  expect((await first).value).toBe("t1");
  const second = tokens.get("p", m.make);
  m.release();
  expect((await second).value).toBe("t2");

  const refreshed = [tokens.get("p", m.make, "t2"), tokens.get("p", m.make, "t2")];
  m.release();
  expect((await Promise.all(refreshed)).map((t) => t.value)).toEqual(["t3", "t3"]);
  // A send still holding t2 reports it after t3 came: t3 is kept.
  expect((await tokens.get("p", m.make, "t2")).value).toBe("t3");
  expect(m.made()).toBe(3);
});

test("a failed make is not kept, and providers (and config versions) have their own slots", async () => {
  const tokens = new KeptTokens();
  await expect(tokens.get("p", () => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
  const m = maker();
  const next = tokens.get("p", m.make);
  m.release();
  expect((await next).value).toBe("t1");

  expect(tokenSlot("p", "key-a")).toBe(tokenSlot("p", "key-a"));
  expect(tokenSlot("p", "key-a")).not.toBe(tokenSlot("p", "key-b"));
  expect(tokenSlot("p", "key-a")).not.toBe(tokenSlot("q", "key-a"));
  expect(tokenSlot("p", "secret-key")).not.toContain("secret-key");
});

test("FCM answers: a message name, errorCode before status, status when no code", () => {
  expect(fcmOutcome({ status: 200, body: '{"name":"projects/p/messages/1"}' })).toEqual({
    status: "accepted",
    providerMessageId: "projects/p/messages/1",
  });
  const body = (errorCode: string, status = "X") =>
    JSON.stringify({ error: { status, details: [{ "@type": "t", errorCode }] } });
  expect(fcmOutcome({ status: 404, body: body("UNREGISTERED") })).toEqual({
    status: "gone",
    code: "UNREGISTERED",
  });
  // A code that says permanent wins over a 5xx status, and a transient one over a 4xx.
  expect(fcmOutcome({ status: 500, body: body("INVALID_ARGUMENT") })).toMatchObject({ transient: false });
  expect(fcmOutcome({ status: 400, body: body("INTERNAL") })).toMatchObject({ transient: true });
  expect(fcmOutcome({ status: 502, body: "<html>Bad gateway</html>" })).toEqual({
    status: "failed",
    code: "http_502",
    transient: true,
  });
  expect(fcmOutcome({ status: 403, body: body("SENDER_ID_MISMATCH", "PERMISSION_DENIED") })).toEqual({
    status: "failed",
    code: "SENDER_ID_MISMATCH",
    transient: false,
  });
});

test("APNs answers: apns-id, gone by reason (or 410), transient for 429 and 5xx", () => {
  expect(apnsOutcome({ status: 200, apnsId: "id-1", body: "" })).toEqual({
    status: "accepted",
    providerMessageId: "id-1",
  });
  expect(apnsOutcome({ status: 410, apnsId: null, body: "" })).toEqual({ status: "gone", code: "http_410" });
  expect(apnsOutcome({ status: 400, apnsId: null, body: '{"reason":"BadDeviceToken"}' })).toEqual({
    status: "gone",
    code: "BadDeviceToken",
  });
  expect(apnsOutcome({ status: 400, apnsId: null, body: '{"reason":"BadTopic"}' })).toEqual({
    status: "failed",
    code: "BadTopic",
    transient: false,
  });
  expect(apnsOutcome({ status: 500, apnsId: null, body: "oops" })).toEqual({
    status: "failed",
    code: "http_500",
    transient: true,
  });
});
