import { ServiceBroker } from "moleculer";
import {
  BUSINESS_METRICS,
  countMessages,
  setLiveEnrollments,
  setQueueGauges,
  timeProviderSend,
} from "../../lib/business-metrics";
import { queueFigures } from "../../lib/queue-stats";

const registryOf = (enabled: boolean) => new ServiceBroker({ logger: false, metrics: { enabled } }).metrics;

const valueOf = (metrics: ReturnType<typeof registryOf>, name: string, labels: Record<string, string>) =>
  metrics.getMetric(name).get(labels)?.value;

test("a queue's figures from its SQL row: counts as numbers, no due row as null, a clock skew as 0", () => {
  expect(queueFigures("q", { due: "3", waiting: "2", oldest: 12.5 })).toEqual({
    queue: "q",
    due: 3,
    waiting: 2,
    oldestDueSeconds: 12.5,
  });
  expect(queueFigures("q", { due: "0", waiting: "4", oldest: null }).oldestDueSeconds).toBeNull();
  expect(queueFigures("q", { due: 1, waiting: 0, oldest: -0.2 }).oldestDueSeconds).toBe(0);
  expect(queueFigures("q", undefined)).toEqual({ queue: "q", due: 0, waiting: 0, oldestDueSeconds: null });
});

test("with metrics off nothing is registered, and a provider send still runs", async () => {
  const metrics = registryOf(false);
  countMessages(metrics, "email", "sent");
  expect(
    await timeProviderSend(
      metrics,
      "smtp",
      () => false,
      async () => "ok",
    ),
  ).toBe("ok");
  expect(metrics.hasMetric(BUSINESS_METRICS.messages)).toBe(false);
});

test("counters, the provider timer and the gauges land in the registry with their labels", async () => {
  const metrics = registryOf(true);
  countMessages(metrics, "sms", "failed", 2);
  expect(valueOf(metrics, BUSINESS_METRICS.messages, { channel: "sms", status: "failed" })).toBe(2);

  const refused = new Error("429");
  await expect(
    timeProviderSend(
      metrics,
      "smsapi1",
      (err) => err === refused,
      () => Promise.reject(refused),
    ),
  ).rejects.toBe(refused);
  expect(
    valueOf(metrics, BUSINESS_METRICS.providerSendErrors, { provider_type: "smsapi1", kind: "transient" }),
  ).toBe(1);
  expect(
    metrics.getMetric(BUSINESS_METRICS.providerSendDuration).get({ provider_type: "smsapi1" }),
  ).toMatchObject({
    count: 1,
  });

  setQueueGauges(metrics, [{ queue: "messages", due: 5, waiting: 1, oldestDueSeconds: null }]);
  expect(valueOf(metrics, BUSINESS_METRICS.queueDepth, { queue: "messages", state: "due" })).toBe(5);
  expect(valueOf(metrics, BUSINESS_METRICS.queueOldestDue, { queue: "messages" })).toBe(0);

  setLiveEnrollments(metrics, [{ status: "waiting", count: 7 }]);
  expect(valueOf(metrics, BUSINESS_METRICS.liveEnrollments, { status: "waiting" })).toBe(7);
  expect(valueOf(metrics, BUSINESS_METRICS.liveEnrollments, { status: "active" })).toBe(0);
});
