import type { MetricRegistry } from "moleculer";

/**
 * The business metrics an operator watches (Prometheus, METRICS_PORT), in
 * Moleculer's registry of the process where each fact happens: counters
 * where the fact is made, gauges set from the owners' queue statistics
 * (lib/queue-stats.ts). Registered on first use; with metrics off every
 * call is a no-op. Prometheus names are these with `.` as `_`.
 */
export const BUSINESS_METRICS = {
  eventsIngested: "app.events.ingested.total",
  messages: "app.messages.total",
  providerSendDuration: "app.provider.send.duration",
  providerSendErrors: "app.provider.send.errors.total",
  webhookDeliveries: "app.webhook.deliveries.total",
  liveEnrollments: "app.campaign.enrollments.live",
  queueDepth: "app.queue.depth",
  queueOldestDue: "app.queue.oldest.due.seconds",
} as const;

type Definition = Parameters<MetricRegistry["register"]>[0];

const DEFINITIONS: Definition[] = [
  {
    name: BUSINESS_METRICS.eventsIngested,
    type: "counter",
    labelNames: [],
    description: "Events recorded (every origin: API, inbound webhooks, forms, tracking, channels)",
  },
  {
    name: BUSINESS_METRICS.messages,
    type: "counter",
    labelNames: ["channel", "status"],
    description: "Messages reaching a status (queued, suppressed, sent, failed, delivered, ...), by channel",
  },
  {
    name: BUSINESS_METRICS.providerSendDuration,
    type: "histogram",
    labelNames: ["provider_type"],
    unit: "millisecond",
    description: "Duration of a provider's send request (a single send or a batch), by provider type",
    quantiles: true,
    buckets: true,
  },
  {
    name: BUSINESS_METRICS.providerSendErrors,
    type: "counter",
    labelNames: ["provider_type", "kind"],
    description: "Provider send requests that failed, by provider type and kind (transient, permanent)",
  },
  {
    name: BUSINESS_METRICS.webhookDeliveries,
    type: "counter",
    labelNames: ["outcome"],
    description: "Outbound webhook delivery attempts by outcome (delivered, retry, dead)",
  },
  {
    name: BUSINESS_METRICS.liveEnrollments,
    type: "gauge",
    labelNames: ["status"],
    description:
      "Campaign enrollments still running, by status (active: a step to run; waiting: a wait or an event)",
  },
  {
    name: BUSINESS_METRICS.queueDepth,
    type: "gauge",
    labelNames: ["queue", "state"],
    description: "Rows of each durable queue: due now, or waiting for a later time",
  },
  {
    name: BUSINESS_METRICS.queueOldestDue,
    type: "gauge",
    labelNames: ["queue"],
    description: "Age of each durable queue's oldest due row (0 when none is due); the outbox's is its lag",
  },
];

/** The registry with the business metrics registered, or null when metrics are off. */
function registry(metrics: MetricRegistry | undefined): MetricRegistry | null {
  if (!metrics?.isEnabled()) return null;
  if (!metrics.hasMetric(BUSINESS_METRICS.eventsIngested))
    for (const definition of DEFINITIONS)
      if (!metrics.hasMetric(definition.name)) metrics.register(definition);
  return metrics;
}

export function countEventsIngested(metrics: MetricRegistry | undefined, n: number): void {
  if (n > 0) registry(metrics)?.increment(BUSINESS_METRICS.eventsIngested, {}, n);
}

/** Messages of one channel that reached `status`. */
export function countMessages(
  metrics: MetricRegistry | undefined,
  channel: string,
  status: string,
  n = 1,
): void {
  if (n > 0) registry(metrics)?.increment(BUSINESS_METRICS.messages, { channel, status }, n);
}

/** Why a provider's send request failed: passing (retried) or not. */
export type SendErrorKind = "transient" | "permanent";

/**
 * Times a provider's send request, counting it as an error when it throws
 * (and rethrowing), or when `failureOf` names its answer a failure (push
 * clients answer their failures instead of throwing them).
 */
export async function timeProviderSend<T>(
  metrics: MetricRegistry | undefined,
  providerType: string,
  isTransient: (err: unknown) => boolean,
  send: () => Promise<T>,
  failureOf?: (answer: T) => SendErrorKind | null,
): Promise<T> {
  const reg = registry(metrics);
  if (!reg) return send();
  const started = performance.now();
  const countError = (kind: SendErrorKind) =>
    reg.increment(BUSINESS_METRICS.providerSendErrors, { provider_type: providerType, kind });
  try {
    const answer = await send();
    const failure = failureOf?.(answer);
    if (failure) countError(failure);
    return answer;
  } catch (err) {
    countError(isTransient(err) ? "transient" : "permanent");
    throw err;
  } finally {
    reg.observe(BUSINESS_METRICS.providerSendDuration, performance.now() - started, {
      provider_type: providerType,
    });
  }
}

export function countWebhookDeliveries(
  metrics: MetricRegistry | undefined,
  outcome: "delivered" | "retry" | "dead",
  n = 1,
): void {
  if (n > 0) registry(metrics)?.increment(BUSINESS_METRICS.webhookDeliveries, { outcome }, n);
}

/** The live statuses of an enrollment (finished ones are completed, exited or failed). */
export const LIVE_ENROLLMENT_STATUSES = ["active", "waiting"] as const;

export function setLiveEnrollments(
  metrics: MetricRegistry | undefined,
  counts: Array<{ status: string; count: number }>,
): void {
  const reg = registry(metrics);
  if (!reg) return;
  for (const status of LIVE_ENROLLMENT_STATUSES)
    reg.set(BUSINESS_METRICS.liveEnrollments, counts.find((c) => c.status === status)?.count ?? 0, {
      status,
    });
}

/** One durable queue's figures (lib/queue-stats.ts). */
export interface QueueFigures {
  queue: string;
  due: number;
  waiting: number;
  oldestDueSeconds: number | null;
}

export function setQueueGauges(metrics: MetricRegistry | undefined, stats: QueueFigures[]): void {
  const reg = registry(metrics);
  if (!reg) return;
  for (const s of stats) {
    reg.set(BUSINESS_METRICS.queueDepth, s.due, { queue: s.queue, state: "due" });
    reg.set(BUSINESS_METRICS.queueDepth, s.waiting, { queue: s.queue, state: "waiting" });
    reg.set(BUSINESS_METRICS.queueOldestDue, s.oldestDueSeconds ?? 0, { queue: s.queue });
  }
}
