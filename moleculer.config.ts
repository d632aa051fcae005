import type { BrokerOptions } from "moleculer";
import { config } from "./lib/config";
import { AuthorizeMiddleware } from "./mixins/authorize.middleware";

/**
 * The broker, derived from the environment only (see README's table):
 * one broker with every service embedded; NATS, Redis and an external
 * PostgreSQL when their URLs are set.
 */
export function brokerConfig(): BrokerOptions {
  const cfg = config();
  return {
    namespace: process.env.NAMESPACE ?? "",
    nodeID: process.env.NODE_ID || undefined,
    logger: {
      type: "Pino",
      options: { level: cfg.logLevel, pino: { options: { base: null, level: cfg.logLevel } } },
    },
    logLevel: cfg.logLevel as BrokerOptions["logLevel"],
    transporter: cfg.natsUrl ?? null,
    cacher: cfg.redisUrl ? { type: "Redis", options: { prefix: "cms", ttl: 300, redis: cfg.redisUrl } } : "Memory",
    serializer: "JSON",
    requestTimeout: 15_000,
    retryPolicy: { enabled: false },
    registry: { strategy: "RoundRobin", preferLocal: true },
    circuitBreaker: { enabled: false },
    validator: true,
    metrics: cfg.metricsPort
      ? { enabled: true, reporter: [{ type: "Prometheus", options: { port: cfg.metricsPort, path: "/metrics" } }] }
      : { enabled: false },
    tracing: { enabled: false },
    middlewares: [AuthorizeMiddleware],
  };
}

export default brokerConfig();
