import fs from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { ServiceBroker, type BrokerOptions, type Middleware, type ServiceSchema } from "moleculer";
import { config, resetConfig } from "../../lib/config";
import { createTestDatabase } from "./database";
import { HttpClient } from "./http";

const SERVICES_DIR = path.resolve(__dirname, "../../services");

/** Every `*.service.ts` under services/, as moleculer-runner would load them. */
export function allServiceFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(".service.ts")) found.push(full);
    }
  };
  walk(SERVICES_DIR);
  return found.sort();
}

/** A service file's name as `SERVICES` gives it to moleculer-runner: `crm/deals` for services/crm/deals.service.ts. */
export function serviceFileName(file: string): string {
  return path
    .relative(SERVICES_DIR, file)
    .replace(/\\/g, "/")
    .replace(/\.service\.ts$/, "");
}

export interface TestApp {
  broker: ServiceBroker;
  baseUrl: string;
  databaseUrl: string;
  http: () => HttpClient;
  stop: () => Promise<void>;
}

export interface StartOptions {
  /** Service names to load (folder names under services/); all when omitted. */
  services?: string[];
  /** Service files to load instead, as `SERVICES` names them for moleculer-runner (`crm/deals`: services/crm/deals.service.ts). */
  files?: string[];
  /** Extra environment for this app (set before the config is read). */
  env?: Record<string, string | undefined>;
  broker?: Partial<BrokerOptions>;
  /** Reuse an existing database instead of a fresh clone. */
  databaseUrl?: string;
  /** Skip the gateway's HTTP server (a worker node in a cluster test). */
  withoutGateway?: boolean;
  /** Middlewares added after the configured ones (e.g. a recorder in a cluster test). */
  middlewares?: Middleware[];
  /** Services (possibly on other nodes) to wait for before the gateway's routes are built. */
  waitForServices?: string[];
}

/**
 * A real broker with the real services on a fresh PostgreSQL database and
 * the gateway on an ephemeral port. Call `stop()` in afterAll.
 */
export async function startApp(options: StartOptions = {}): Promise<TestApp> {
  const db = options.databaseUrl ? undefined : await createTestDatabase();
  const databaseUrl = options.databaseUrl ?? db!.url;
  // A transporter is opt-in per app (pass `env: { NATS_URL }`): test files run in
  // parallel, and brokers of different files must never find each other.
  const ambient = { NATS_URL: process.env.NATS_URL, TRANSPORTER: process.env.TRANSPORTER };
  // Put back when the app stops: suites share their worker's environment, and this app's settings are its own.
  const settings = ["PORT", "HOST", "DATABASE_URL", ...Object.keys(options.env ?? {})];
  const before = Object.fromEntries(settings.map((key) => [key, process.env[key]]));
  delete process.env.NATS_URL;
  delete process.env.TRANSPORTER;
  Object.assign(process.env, { PORT: "0", HOST: "127.0.0.1", DATABASE_URL: databaseUrl, ...options.env });
  for (const [key, value] of Object.entries(options.env ?? {}))
    if (value === undefined) delete process.env[key];
  resetConfig();
  config(); // read now, so the restored ambient values below do not leak into this app
  for (const [key, value] of Object.entries(ambient)) {
    if (value !== undefined && !(options.env && key in options.env)) process.env[key] = value;
  }

  // Loaded after the environment is set: service settings read the config at import.
  const { brokerConfig } = require("../../moleculer.config") as typeof import("../../moleculer.config");
  const base = brokerConfig();
  const broker = new ServiceBroker({
    ...base,
    ...(process.env.TEST_LOGS ? {} : { logger: false }),
    ...options.broker,
    ...(options.middlewares
      ? { middlewares: [...(options.broker?.middlewares ?? base.middlewares ?? []), ...options.middlewares] }
      : {}),
  });
  const files = allServiceFiles().filter((file) => {
    const area = path.basename(path.dirname(file));
    if (options.withoutGateway && area === "api") return false;
    if (options.files) return options.files.includes(serviceFileName(file));
    return !options.services || options.services.includes(area);
  });
  for (const file of files) {
    const schema = require(file).default as ServiceSchema;
    broker.createService(schema);
  }
  await broker.start();
  if (options.waitForServices?.length) await broker.waitForServices(options.waitForServices, 10_000);

  let baseUrl = "";
  const api = broker.getLocalService("api") as unknown as
    | {
        server?: { address(): AddressInfo };
        routes: Array<{ opts: { autoAliases?: boolean } }>;
        regenerateAutoAliases(route: unknown): void;
      }
    | undefined;
  if (api?.server) {
    // moleculer-web rebuilds aliases on a debounce after services change; do it now.
    for (const route of api.routes) if (route.opts.autoAliases) api.regenerateAutoAliases(route);
    baseUrl = `http://127.0.0.1:${api.server.address().port}`;
  }

  return {
    broker,
    baseUrl,
    databaseUrl,
    http: () => new HttpClient(baseUrl),
    async stop() {
      await broker.stop();
      await db?.drop();
      for (const [key, value] of Object.entries(before)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    },
  };
}
