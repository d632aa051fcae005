import { ServiceBroker } from "moleculer";
import { BUSINESS_METRICS } from "../../lib/business-metrics";
import type { PushClient, PushOutcome } from "../../services/providers/clients/push";
import {
  notificationOf,
  pushFailure,
  pushToAll,
  verdictOf,
  type PushAttempt,
} from "../../services/messages/push";
import type { SendTarget } from "../../services/push/for-send";

/** The push channel's outcome per message from its subscriptions' outcomes (push.ts). */

const client = (id: string): PushClient => ({
  id,
  type: "vapid",
  push: () => Promise.reject(new Error("not called")),
});
const target = (id: string, type: SendTarget["type"] = "web"): SendTarget => ({
  subscriptionId: id,
  contactId: "c1",
  type,
  endpoint: `https://push.example.com/${id}`,
  token: null,
  keys: null,
});
const vapid = client("p-vapid");
const gateway = client("p-gw1");
const attempt = (
  id: string,
  outcome: PushAttempt["outcome"],
  via: PushClient | null = vapid,
): PushAttempt => ({
  target: target(id),
  client: via,
  outcome,
});

test("one accepted subscription makes the message sent, through that subscription's provider", () => {
  expect(
    verdictOf([
      attempt("a", { status: "gone", code: "410" }),
      attempt("b", { status: "accepted", providerMessageId: "loc-1" }),
    ]),
  ).toEqual({ kind: "sent", client: vapid, providerMessageId: "loc-1" });
});

test("every attempt on one provider failed transiently: retried; else failed naming each code", () => {
  const down = [
    attempt("a", { status: "failed", code: "503", transient: true }),
    attempt("b", { status: "failed", code: "400", transient: false }, gateway),
  ];
  expect(verdictOf(down)).toEqual({
    kind: "retry",
    error: "No subscription accepted the push: web 503, web 400",
  });
  const mixed = [
    attempt("a", { status: "failed", code: "503", transient: true }),
    attempt("b", { status: "failed", code: "400", transient: false }),
    attempt("c", { status: "skipped", code: "not_configured" }, null),
  ];
  expect(verdictOf(mixed)).toEqual({
    kind: "failed",
    error: "No subscription accepted the push: web 503, web 400, web not_configured",
  });
  expect(verdictOf([attempt("a", { status: "skipped", code: "not_configured" }, null)]).kind).toBe("failed");
});

test("a subscription whose type has no provider is skipped; a client that throws fails only its own", async () => {
  const throwing: PushClient = { id: "p", type: "vapid", push: () => Promise.reject(new Error("boom")) };
  const attempts = await pushToAll(
    [target("a"), target("b", "pushgw1")],
    new Map([["web", throwing]]),
    notificationOf("m1", { title: "T", body: "B", url: "", icon: "https://x.example/i.png" }),
  );
  expect(attempts.map((a) => a.outcome)).toEqual([
    { status: "failed", code: "error", transient: true },
    { status: "skipped", code: "not_configured" },
  ]);
  expect(notificationOf("m1", { title: "T", body: "B", url: "", icon: "https://x.example/i.png" })).toEqual({
    messageId: "m1",
    title: "T",
    body: "B",
    url: null,
    icon: "https://x.example/i.png",
    image: null,
  });
});

test("each push request is timed by its provider type; failures, gone and thrown ones count as send errors", async () => {
  const metrics = new ServiceBroker({ logger: false, metrics: { enabled: true } }).metrics;
  const answering = (type: PushClient["type"], outcome: PushOutcome): PushClient => ({
    id: `p-${type}`,
    type,
    push: async () => outcome,
  });
  const throwing: PushClient = {
    id: "p-gw2",
    type: "pushgw2",
    push: () => Promise.reject(new Error("boom")),
  };
  const notification = notificationOf("m1", { title: "T", body: "B" });
  await pushToAll(
    [target("a"), target("b", "pushgw1")],
    new Map([
      ["web", answering("vapid", { status: "accepted", providerMessageId: null })],
      ["pushgw1", answering("pushgw1", { status: "failed", code: "503", transient: true })],
    ]),
    notification,
    metrics,
  );
  await pushToAll(
    [target("c", "pushgw1"), target("d", "pushgw2")],
    new Map([
      ["pushgw1", answering("pushgw1", { status: "gone", code: "UNREGISTERED" })],
      ["pushgw2", throwing],
    ]),
    notification,
    metrics,
  );
  const count = (type: string) =>
    metrics.getMetric(BUSINESS_METRICS.providerSendDuration).get({ provider_type: type })?.count;
  expect([count("vapid"), count("pushgw1"), count("pushgw2")]).toEqual([1, 2, 1]);
  const errors = (type: string, kind: string) =>
    metrics.getMetric(BUSINESS_METRICS.providerSendErrors).get({ provider_type: type, kind })?.value;
  expect(errors("vapid", "transient") ?? 0).toBe(0);
  expect(errors("vapid", "permanent") ?? 0).toBe(0);
  expect(errors("pushgw1", "transient")).toBe(1);
  expect(errors("pushgw1", "permanent")).toBe(1);
  expect(errors("pushgw2", "transient")).toBe(1);
  expect(pushFailure({ status: "failed", code: "400", transient: false })).toBe("permanent");
});
