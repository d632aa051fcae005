import type { BrokerOptions, Middleware } from "moleculer";
import { Middleware as ChannelsMiddleware } from "@moleculer/channels";
import { AnnounceServicesMiddleware } from "./lib/announce-services";
import { config } from "./lib/config";
import { DeclaredStatusMiddleware } from "./lib/define-service";
import { validatorMiddleware } from "./lib/validator";
import { EmbeddedChannelAdapter } from "./lib/embedded-channel";
import { NatsChannelAdapter } from "./lib/nats-channel";
import { healthServer } from "./lib/health";
import { operatorCommands } from "./lib/operator-commands";
import { ServiceWatchMiddleware } from "./lib/registry";
import { RequestIdMiddleware, requestIdLogFields } from "./lib/request-id";
import { tracingOptions } from "./lib/tracing";
import { AuthorizeMiddleware } from "./mixins/authorize.middleware";
import { OutboxRelayMiddleware } from "./mixins/outbox-relay";

/**
 * The broker, derived from the environment only (see README's table):
 * one broker with every service embedded; NATS, Redis and an external
 * PostgreSQL when their URLs are set.
 */
/**
 * Durable channels: JetStream when NATS is configured (survives restarts);
 * embedded, an in-process adapter whose send settles when the consumers have
 * handled the message (lib/embedded-channel.ts), so the outbox keeps a fact
 * until then. The package's typings mark every adapter option required and
 * its middleware's `name` clashes with Moleculer's Middleware index
 * signature, hence the loose types at this one seam.
 */
function channelsMiddleware(natsUrl: string | undefined): Middleware {
  // Without async traces: nats.js would capture a stack for every JetStream publish's acknowledgement (one per fact).
  // Reconnecting for ever, as the transporter does: nats.js gives up after 10 tries 2 s apart, and a NATS server
  // away 20 s would leave the channels closed for good (facts staged, never sent; consumers gone) until a restart.
  const adapter = natsUrl
    ? new NatsChannelAdapter({
        nats: { url: natsUrl, connectionOptions: { noAsyncTraces: true, maxReconnectAttempts: -1 } },
        maxRetries: 5,
        maxInFlight: 20,
      })
    : new EmbeddedChannelAdapter();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return ChannelsMiddleware({ adapter } as any) as any;
}

export function brokerConfig(): BrokerOptions {
  const cfg = config();
  return {
    namespace: cfg.namespace,
    nodeID: process.env.NODE_ID || undefined,
    logger: {
      type: "Pino",
      // Each line written while a call runs carries its request id (lib/request-id.ts), on whichever node runs it.
      options: {
        level: cfg.logLevel,
        pino: { options: { base: null, level: cfg.logLevel, mixin: requestIdLogFields } },
      },
    },
    logLevel: cfg.logLevel as BrokerOptions["logLevel"],
    transporter: cfg.natsUrl ?? null,
    cacher: cfg.redisUrl
      ? {
          type: "Redis",
          options: { prefix: `cms-${cfg.namespace}`, ttl: 300, redis: cfg.redisUrl },
        }
      : "Memory",
    serializer: "JSON",
    requestTimeout: 15_000,
    // A node killed without a goodbye (kill -9, the OOM killer) gets requests until its peers miss its
    // heartbeats, each waiting for the request timeout: found within 15 s instead of Moleculer's 30.
    heartbeatInterval: 5,
    heartbeatTimeout: 15,
    retryPolicy: { enabled: false },
    registry: { strategy: "RoundRobin", preferLocal: true },
    circuitBreaker: { enabled: false },
    // A stopping node (rolling restart, SIGTERM) finishes the requests it is running before its
    // services stop, so an event that was accepted is recorded, chained and published.
    tracking: { enabled: true, shutdownTimeout: 10_000 },
    // Off for actions; channel handlers inherit `maxQueueSize: 0` (unbounded), so the
    // in-memory channel adapter never drops a domain event with QUEUE_FULL.
    bulkhead: { enabled: false, concurrency: 10, maxQueueSize: 0 },
    // Validation runs inside authorization (lib/validator.ts validatorMiddleware), not as the built-in outer step.
    validator: false,
    metrics: cfg.metricsPort
      ? {
          enabled: true,
          reporter: [{ type: "Prometheus", options: { port: cfg.metricsPort, path: "/metrics" } }],
        }
      : { enabled: false },
    // Off unless TRACING_EXPORTER names an exporter (lib/tracing.ts); the trace id is the request id.
    tracing: tracingOptions(cfg.tracing),
    // The operators' REPL commands (`npm run repl`): queues, retry-webhook, retry-message, retry-inbound, recompute-segment, rebuild-analytics, usage.
    replCommands: operatorCommands(),
    // The outbox relay's hooks after the channels' (started in order, stopped in reverse).
    // The first is innermost: params are validated after the Authorize middleware has let the call in.
    middlewares: [
      validatorMiddleware(),
      DeclaredStatusMiddleware,
      AuthorizeMiddleware,
      channelsMiddleware(cfg.natsUrl),
      OutboxRelayMiddleware,
      healthServer(),
      AnnounceServicesMiddleware,
      ServiceWatchMiddleware,
      // Last, so outermost: the handlers and every middleware's own lines run under the request id.
      RequestIdMiddleware,
    ],
  };
}

export default brokerConfig();
