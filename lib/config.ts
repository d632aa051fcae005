import path from "node:path";
import { TRACING_EXPORTERS, type TracingConfig, type TracingExporter } from "./tracing";

/** Everything the process reads from its environment, in one place. */
export interface AppConfig {
  nodeEnv: string;
  port: number;
  host: string;
  /**
   * How long the gateway keeps an idle client connection open. Longer than the idle timeout of the proxies
   * in front (60 s at AWS ALB, nginx ingress): a server that closes first races the proxy's next request on
   * that connection, which the client sees as a reset (a 502 through a proxy).
   */
  httpKeepAliveMs: number;
  /** Public origin used for every absolute URL we build (NextAuth's NEXTAUTH_URL). */
  publicUrl: string;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  natsUrl?: string;
  /** Moleculer's namespace (NAMESPACE): brokers meet only their own, and our Redis keys (cache, rate limits) carry it. */
  namespace: string;
  authSecret?: string;
  cronSecret?: string;
  smtpUrl?: string;
  mailFrom: string;
  logLevel: string;
  corsOrigins: string[];
  /** Which peers' X-Forwarded-For is believed: true, false, a hop count, or addresses/CIDRs/names (proxy-addr). */
  trustProxy: string;
  metricsPort?: number;
  /** Where spans go (TRACING_EXPORTER, off when unset), and how many. */
  tracing: TracingConfig;
  /** Whether a process migrates the database when it opens it; false: it waits for a migration job (bin/migrate.ts). */
  migrate: boolean;
  /** Where the probe server answers `/ready` and `/live` (lib/health.ts); unset: none. */
  healthPort?: number;
  allowPrivateWebhookTargets: boolean;
  /** Outbound webhook dispatcher: waits before retries 2 and 3, per-attempt timeout, claim lease, poll period, sends in flight. */
  webhookRetryDelaysMs: number[];
  webhookTimeoutMs: number;
  webhookLeaseMs: number;
  webhookPollMs: number;
  webhookConcurrency: number;
  /** Of those, how many one endpoint may hold (a failing endpoint holds one), so a slow or failing one cannot take them all. */
  webhookEndpointConcurrency: number;
  /** How often the outbox relay looks for facts staged by a process that did not publish them (it died). */
  outboxPollMs: number;
  /** Statement timeout of a segment preview; over it the preview answers 400 QUERY_TOO_EXPENSIVE. */
  segmentPreviewTimeoutMs: number;
  /** Workspaces with more contacts than this compute a created/changed segment as a job (202). */
  segmentSyncLimit: number;
  /** How often a segment whose filter reads the clock (`within_last`, event `within`) is recomputed. */
  segmentTimeRefreshMs: number;
  tableStatsIntervalMs: number;
  /** scrypt cost (log2 N); lowered only by tests to keep them fast. */
  passwordCost: number;
  /** The send path: worker batch, claim lease, poll period, transient retry waits, and sends per second by provider type (none: unlimited). */
  messageBatch: number;
  messageLeaseMs: number;
  messagePollMs: number;
  messageWorkers: number;
  messageRetryDelaysMs: number[];
  /**
   * The waits before an event's chain runs again after a step failed (a service unreachable): the i-th
   * retry waits the i-th delay, later ones the last (an event's chain is never given up).
   */
  chainRetryDelaysMs: number[];
  /** How often the inbox wakes snoozed threads, hands waiting ones to members with room and moves unanswered ones. */
  inboxPollMs: number;
  /** How often analytics folds the appended rollup deltas into the rollups (each pass drains them). */
  analyticsFoldMs: number;
  /** How often the journey runner looks for due enrollment steps (waits ending, new enrollments) and scheduled campaigns. */
  campaignPollMs: number;
  /** How long a claimed enrollment step is its runner's before another replica may take it (a runner that died). */
  campaignLeaseMs: number;
  /** How often the website script's event streams get a `ping`, so proxies keep them open. */
  scriptHeartbeatMs: number;
  providerRateLimits: Record<string, number>;
  /** Where uploaded assets are kept: S3-compatible storage when a bucket is named, else DATA_DIR/assets. */
  assetsS3: AssetsS3Config | null;
  providerTimeoutMs: number;
  providerHttpConnections: number;
  /** Extra CA certificates (PEM file) web push trusts beside the system's: a private push relay, local fakes in tests. */
  pushCaFile: string | null;
  dnsServers: string[];
  providerFailoverThreshold: number;
  providerProbeIntervalMs: number;
}

/** An S3-compatible bucket; credentials and region fall back to the AWS SDK's own chain (environment, web identity). */
export interface AssetsS3Config {
  bucket: string;
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** `bucket` in the path rather than the host name, which most S3-compatible servers want. */
  forcePathStyle: boolean;
}

function assetsS3(env: NodeJS.ProcessEnv): AssetsS3Config | null {
  if (!env.ASSETS_S3_BUCKET) return null;
  return {
    bucket: env.ASSETS_S3_BUCKET,
    endpoint: env.ASSETS_S3_ENDPOINT || undefined,
    region: env.ASSETS_S3_REGION || env.AWS_REGION || "us-east-1",
    accessKeyId: env.ASSETS_S3_ACCESS_KEY_ID || undefined,
    secretAccessKey: env.ASSETS_S3_SECRET_ACCESS_KEY || undefined,
    forcePathStyle:
      (env.ASSETS_S3_FORCE_PATH_STYLE ?? (env.ASSETS_S3_ENDPOINT ? "true" : "false")) === "true",
  };
}

function int(value: string | undefined, fallback: number): number {
  const parsed = value ? Number.parseInt(value, 10) : NaN;
  return Number.isFinite(parsed) ? parsed : fallback;
}

/** A comma list of delays in ms (non-negative integers; others dropped). */
function delays(value: string): number[] {
  return value
    .split(",")
    .map((v) => Number.parseInt(v.trim(), 10))
    .filter((n) => Number.isFinite(n) && n >= 0);
}

/** A share between 0 and 1 (clamped); the fallback when unset or not a number. */
function share(value: string | undefined, fallback: number): number {
  const parsed = value ? Number(value) : NaN;
  return Number.isFinite(parsed) ? Math.min(1, Math.max(0, parsed)) : fallback;
}

function tracingExporter(value: string | undefined): TracingExporter | undefined {
  const name = (value ?? "").trim().toLowerCase();
  if (!name || name === "off") return undefined;
  if ((TRACING_EXPORTERS as readonly string[]).includes(name)) return name as TracingExporter;
  throw new Error(`TRACING_EXPORTER must be one of ${TRACING_EXPORTERS.join(", ")} or off, not '${value}'`);
}

function natsFromTransporter(env: NodeJS.ProcessEnv): string | undefined {
  if (env.NATS_URL) return env.NATS_URL;
  if (env.TRANSPORTER?.startsWith("nats://")) return env.TRANSPORTER;
  return undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const port = int(env.PORT, 3000);
  return {
    nodeEnv: env.NODE_ENV ?? "development",
    port,
    host: env.HOST ?? "0.0.0.0",
    httpKeepAliveMs: int(env.HTTP_KEEP_ALIVE_MS, 65_000),
    publicUrl: (env.PUBLIC_URL ?? env.NEXTAUTH_URL ?? `http://localhost:${port}`).replace(/\/+$/, ""),
    dataDir: path.resolve(env.DATA_DIR ?? ".data"),
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    natsUrl: natsFromTransporter(env),
    namespace: env.NAMESPACE ?? "",
    authSecret: env.AUTH_SECRET || env.NEXTAUTH_SECRET || undefined,
    cronSecret: env.CRON_SECRET || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM ?? "Campaign Service <no-reply@localhost>",
    logLevel: env.LOG_LEVEL ?? "info",
    corsOrigins: (env.CORS_ORIGINS ?? "")
      .split(",")
      .map((o) => o.trim())
      .filter(Boolean),
    trustProxy: (env.TRUST_PROXY ?? "").trim() || "loopback, linklocal, uniquelocal",
    metricsPort: env.METRICS_PORT ? int(env.METRICS_PORT, 3030) : undefined,
    tracing: {
      exporter: tracingExporter(env.TRACING_EXPORTER),
      url: (env.TRACING_URL || "http://localhost:9411").replace(/\/+$/, ""),
      sampleRate: share(env.TRACING_SAMPLE_RATE, 1),
      intervalSeconds: int(env.TRACING_INTERVAL_SECONDS, 5),
    },
    migrate: env.MIGRATE !== "false",
    healthPort: env.HEALTH_PORT ? int(env.HEALTH_PORT, 3001) : undefined,
    allowPrivateWebhookTargets: env.WEBHOOK_ALLOW_PRIVATE_TARGETS === "true",
    webhookRetryDelaysMs: delays(env.WEBHOOK_RETRY_DELAYS_MS ?? "2000,8000"),
    webhookTimeoutMs: int(env.WEBHOOK_TIMEOUT_MS, 10_000),
    webhookLeaseMs: int(env.WEBHOOK_LEASE_MS, 30_000),
    webhookPollMs: int(env.WEBHOOK_POLL_MS, 1_000),
    webhookConcurrency: int(env.WEBHOOK_CONCURRENCY, 50),
    webhookEndpointConcurrency: int(env.WEBHOOK_ENDPOINT_CONCURRENCY, 10),
    outboxPollMs: int(env.OUTBOX_POLL_MS, 1_000),
    segmentPreviewTimeoutMs: int(env.SEGMENT_PREVIEW_TIMEOUT_MS, 5_000),
    segmentSyncLimit: int(env.SEGMENT_SYNC_LIMIT, 100_000),
    segmentTimeRefreshMs: int(env.SEGMENT_TIME_REFRESH_MS, 3_600_000),
    tableStatsIntervalMs: int(env.TABLE_STATS_INTERVAL_MS, 5_000),
    passwordCost: int(env.PASSWORD_HASH_COST, 15),
    messageBatch: int(env.MESSAGE_BATCH, 200),
    messageLeaseMs: int(env.MESSAGE_LEASE_MS, 60_000),
    messagePollMs: int(env.MESSAGE_POLL_MS, 1_000),
    messageWorkers: int(env.MESSAGE_WORKERS, 2),
    campaignPollMs: int(env.CAMPAIGN_POLL_MS, 1_000),
    inboxPollMs: int(env.INBOX_POLL_MS, 30_000),
    analyticsFoldMs: int(env.ANALYTICS_FOLD_MS, 1_000),
    campaignLeaseMs: int(env.CAMPAIGN_LEASE_MS, 60_000),
    scriptHeartbeatMs: int(env.SCRIPT_HEARTBEAT_MS, 25_000),
    messageRetryDelaysMs: delays(env.MESSAGE_RETRY_DELAYS_MS ?? "30000,120000,600000,3600000"),
    chainRetryDelaysMs: delays(env.EVENT_CHAIN_RETRY_DELAYS_MS ?? "5000,30000,120000,600000,3600000"),
    providerRateLimits: Object.fromEntries(
      (env.PROVIDER_RATE_LIMITS ?? "")
        .split(",")
        .map((pair) => pair.split("=").map((p) => p.trim()))
        .filter(([type, rate]) => type && Number.parseInt(rate, 10) > 0)
        .map(([type, rate]) => [type, Number.parseInt(rate, 10)]),
    ),
    assetsS3: assetsS3(env),
    providerTimeoutMs: int(env.PROVIDER_TIMEOUT_MS, 10_000),
    providerHttpConnections: int(env.PROVIDER_HTTP_CONNECTIONS, 50),
    pushCaFile: env.PUSH_CA_FILE?.trim() || null,
    providerFailoverThreshold: int(env.PROVIDER_FAILOVER_THRESHOLD, 5),
    providerProbeIntervalMs: int(env.PROVIDER_PROBE_INTERVAL_MS, 60_000),
    dnsServers: (env.DNS_SERVERS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  };
}

/** The configuration of this process, read once. Tests that change env call `resetConfig()`. */
let current: AppConfig | undefined;
export function config(): AppConfig {
  current ??= loadConfig();
  return current;
}
export function resetConfig(): void {
  current = undefined;
}
