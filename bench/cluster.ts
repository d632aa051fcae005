/**
 * The cluster shapes against the embedded shape, in the same run, on this
 * machine: the compiled product (dist/, built first) as `npm start` runs it
 * (one process, no transporter), as `npm run start:cluster` runs it (one
 * process per group of lib/cluster-plan.ts over NATS) and as
 * `npm run start:cluster -- --replicas N` runs it (N copies of the whole
 * product serving one port, over NATS), each on a fresh database, all up at
 * once, measured in alternating rounds beside a bare node:http server.
 *
 *   DATABASE_URL=… NATS_URL=… REDIS_URL=… npx ts-node --transpile-only bench/cluster.ts
 *
 * Parts (BENCH_PARTS, `ratio,soak`):
 * - `ratio`: `POST {ws}/events` with the chain (four segments and a scoring rule that do not match the event, a
 *   segment and a rule that do), BENCH_ROUNDS (3) rounds of BENCH_SECONDS (10) windows, one for bare node:http
 *   and one for each shape of BENCH_SHAPES (`embedded,cluster`; `replicas` adds the replicas shape with
 *   BENCH_REPLICAS copies, 2); each shape's rate against the embedded one's and the bare one's in its round, and
 *   CPU per request of each process (utime+stime from /proc over the window, a runner's copies included), the
 *   PostgreSQL backends of each shape's database, and the NATS server (shared with other users of it).
 * - `soak`: BENCH_SOAK_SECONDS (600) of mixed traffic on the cluster shape at fixed rates (BENCH_SOAK_RATES,
 *   `ingest=100,send=10,read=40` per second): events, message sends (the log provider), reads (contacts, events),
 *   and the webhook deliveries of the events to a receiver here; every 30 s a row of rates, latency percentiles,
 *   errors and RSS per process; at the end the totals, the errors by kind (route, status, the answer's code or
 *   the socket's error, when first and last seen, their latency) and docs/cluster-soak.svg.
 * Env: BENCH_CONNECTIONS (50), BENCH_CONTACTS (1000), BENCH_NO_BUILD=1 to use dist/ as it is, and the
 * PostgreSQL pool of each process (a shared PostgreSQL has 100 connections): BENCH_POOL_EMBEDDED (10),
 * BENCH_POOL_CLUSTER (5 per process, 30 in all), BENCH_POOL_REPLICA (10 per copy).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { ServiceBroker } from "moleculer";
import { clusterPlan, replicaPlan, serviceFiles } from "../lib/cluster-plan";
import { CONNECTIONS, median, ROUNDS, runLoad, startBareServer, type LoadResult } from "./events";
import { backendPids, cpuSeconds, processTree } from "./process-cpu";
import { emptyDatabase } from "../test/helpers/database";

const ROOT = path.resolve(__dirname, "..");
const DIST = path.join(ROOT, "dist");
const RUNNER = path.join(path.dirname(require.resolve("moleculer")), "bin", "moleculer-runner.js");
const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PARTS = (process.env.BENCH_PARTS ?? "ratio,soak").split(",");
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
const SOAK_RATES = Object.fromEntries(
  (process.env.BENCH_SOAK_RATES ?? "ingest=100,send=10,read=40").split(",").map((pair) => {
    const [op, rate] = pair.split("=");
    return [op, Number(rate)];
  }),
) as Record<"ingest" | "send" | "read", number>;
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1000);
const SHAPES = (process.env.BENCH_SHAPES ?? "embedded,cluster").split(",") as Array<Shape["name"]>;
const REPLICAS = process.env.BENCH_REPLICAS ?? "2";

type Json = Record<string, unknown>;

interface Proc {
  name: string;
  child: ChildProcess;
  healthPort: number;
}

interface Shape {
  name: "embedded" | "cluster" | "replicas";
  procs: Proc[];
  baseUrl: string;
  databaseUrl: string;
  databaseName: string;
  cookie: string;
  workspaceId: string;
  bodies: string[];
  contactIds: string[];
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Polls `check` every 250 ms until it is truthy, or fails naming `what`. */
async function until<T>(check: () => Promise<T | undefined>, seconds: number, what: string): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  } catch {
    return 0;
  }
}

/** The NATS server's pid, when it runs on this machine (its CPU is shared by whoever uses it). */
function natsPid(): number | undefined {
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "nats-server") return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** A fresh database for one shape, dropped when the bench ends. */
async function createDatabase(
  base: string,
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const db = await emptyDatabase(base, "cms_bench_cluster");
  drops.push(db.drop);
  return db;
}

const COMMON_ENV = {
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  NODE_ENV: "production",
  MIGRATE: "false",
  AUTH_SECRET: "bench-cluster-secret-bench-cluster-secret",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS_MS: "1000,2000",
  SERVICEDIR: path.join(DIST, "services"),
};

/** moleculer-runner with `env` (and `args`), in a process group of its own: a runner's copies stop with it. */
function startProcess(
  name: string,
  env: Record<string, string | undefined>,
  args: string[] = [],
): ChildProcess {
  const child = spawn(
    process.execPath,
    [RUNNER, "--config", path.join(DIST, "moleculer.config.js"), ...args],
    {
      env: Object.fromEntries(
        Object.entries(env).filter(([, value]) => value !== undefined),
      ) as NodeJS.ProcessEnv,
      stdio: ["ignore", "inherit", "inherit"],
      detached: true,
    },
  );
  started.push(child);
  child.on("exit", (code, signal) => {
    if (!stopping && !stopped.has(child)) console.error(`cluster bench: ${name} exited (${signal ?? code})`);
  });
  return child;
}
let stopping = false;
/** Every process started and database made, so a failed start stops and drops them too. */
const started: ChildProcess[] = [];
const drops: Array<() => Promise<void>> = [];
/** Processes stopped on purpose before the end (the embedded shape before the soak). */
const stopped = new WeakSet<ChildProcess>();

async function startShape(name: Shape["name"]): Promise<Shape & { drop: () => Promise<void> }> {
  const db = await createDatabase(process.env.DATABASE_URL!);
  const base: Record<string, string | undefined> = { ...process.env, ...COMMON_ENV, DATABASE_URL: db.url };
  execFileSync(process.execPath, [path.join(DIST, "bin", "migrate.js")], { env: base as NodeJS.ProcessEnv });
  const port = await freePort();
  const procs: Proc[] = [];
  if (name === "embedded") {
    const healthPort = await freePort();
    // No transporter: the product as `npm start` runs it.
    const env = {
      ...base,
      DATABASE_POOL_MAX: process.env.BENCH_POOL_EMBEDDED ?? "10",
      PORT: String(port),
      HEALTH_PORT: String(healthPort),
      NODE_ID: "embedded",
      NATS_URL: undefined,
      TRANSPORTER: undefined,
    };
    procs.push({ name: "embedded", child: startProcess("embedded", env), healthPort });
  } else if (name === "replicas") {
    const healthPort = await freePort();
    const namespace = `bench-replicas-${Date.now().toString(36)}`;
    const unit = replicaPlan(REPLICAS, serviceFiles(path.join(DIST, "services")), base, os.hostname());
    const env = {
      ...base,
      DATABASE_POOL_MAX: process.env.BENCH_POOL_REPLICA ?? "10",
      ...unit.env,
      NAMESPACE: namespace,
      PORT: String(port),
      HEALTH_PORT: String(healthPort),
    };
    const child = startProcess("replicas", env, ["--instances", String(unit.instances)]);
    procs.push({ name: "replicas", child, healthPort });
    await everyCopyServing(namespace, unit.instances!);
  } else {
    const namespace = `bench-cluster-${Date.now().toString(36)}`;
    const plan = clusterPlan("groups", serviceFiles(path.join(DIST, "services")), base, os.hostname());
    for (const unit of plan) {
      const healthPort = await freePort();
      const env = {
        ...base,
        DATABASE_POOL_MAX: process.env.BENCH_POOL_CLUSTER ?? "5",
        ...unit.env,
        NAMESPACE: namespace,
        PORT: String(port),
        HEALTH_PORT: String(healthPort),
      };
      procs.push({ name: unit.name, child: startProcess(unit.name, env), healthPort });
    }
  }
  for (const proc of procs)
    await until(
      async () => (await fetch(`http://127.0.0.1:${proc.healthPort}/ready`)).ok || undefined,
      120,
      `${name}/${proc.name} to be ready`,
    );
  const baseUrl = `http://127.0.0.1:${port}`;
  // The gateway builds its routes as the other nodes' services appear: wait for every route the bench takes.
  const routes = ["events", "segments", "scoring-rules", "webhooks", "messages", "contacts"];
  await until(
    async () => {
      const doc = (await (await fetch(`${baseUrl}/api/openapi`)).json()) as { paths: Json };
      return routes.every((r) => `/api/workspaces/{workspaceId}/${r}` in doc.paths) || undefined;
    },
    120,
    `${name}: the gateway's routes`,
  );
  const { cookie, workspaceId } = await ownerSession(baseUrl);
  const shape = {
    name,
    procs,
    baseUrl,
    databaseUrl: db.url,
    databaseName: db.name,
    cookie,
    workspaceId,
    bodies: [] as string[],
    contactIds: [] as string[],
    drop: db.drop,
  };
  await seed(shape);
  return shape;
}

/**
 * The copies share one port, so a probe cannot tell which answered: wait
 * until the registry over NATS holds `count` nodes serving the gateway.
 */
async function everyCopyServing(namespace: string, count: number): Promise<void> {
  const watcher = new ServiceBroker({
    namespace,
    nodeID: `bench-watch-${process.pid}`,
    transporter: process.env.NATS_URL,
    logger: false,
  });
  await watcher.start();
  try {
    await until(
      async () => {
        const services = watcher.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{
          name: string;
        }>;
        return services.filter((s) => s.name === "api").length >= count || undefined;
      },
      120,
      `${count} replicas serving the gateway`,
    );
  } finally {
    await watcher.stop();
  }
}

async function api(shape: Shape, method: string, route: string, body?: Json): Promise<Json> {
  const res = await fetch(`${shape.baseUrl}/api/workspaces/${shape.workspaceId}/${route}`, {
    method,
    headers: { "content-type": "application/json", cookie: shape.cookie },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${shape.name}: ${method} ${route}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Json;
}

/** The events bench's `quiet` then `scored` workspace: contacts, segments and rules, one event body per contact. */
async function seed(shape: Shape): Promise<void> {
  const db = new Client({ connectionString: shape.databaseUrl });
  await db.connect();
  shape.contactIds = Array.from({ length: CONTACTS }, (_, i) => `bench-contact-${i}`);
  await db.query(
    `INSERT INTO contacts (id, workspace_id, email, first_name, attributes)
     SELECT id, $2, 'bench-' || ord || '@example.test', 'Bench', jsonb_build_object('plan', CASE WHEN ord % 3 = 0 THEN 'pro' ELSE 'free' END)
       FROM unnest($1::text[]) WITH ORDINALITY AS t(id, ord)`,
    [shape.contactIds, shape.workspaceId],
  );
  await db.end();
  const condition = (field: string, operator: string, value: unknown) => ({
    match: "all",
    conditions: [{ field, operator, value }],
  });
  const filters = [
    condition("attributes.plan", "eq", "pro"),
    condition("email", "ends_with", "@example.test"),
    {
      match: "all",
      conditions: [{ event: "page_view", operator: "performed", count: { gte: 3 }, within: { days: 7 } }],
    },
    condition("score", "gte", 50),
    { match: "all", conditions: [{ event: "purchase", operator: "performed", within: { days: 30 } }] },
  ];
  for (const [i, filter] of filters.entries())
    await api(shape, "POST", "segments", { name: `Bench ${i}`, type: "dynamic", filter });
  await api(shape, "POST", "scoring-rules", { name: "Page view", eventType: "page_view", points: 1 });
  await api(shape, "POST", "scoring-rules", {
    name: "Purchase",
    eventType: "purchase",
    points: 5,
    where: [{ field: "metadata.amount", operator: "gt", value: 10 }],
  });
  shape.bodies = shape.contactIds.map((contactId) =>
    JSON.stringify({
      type: "purchase",
      contactId,
      metadata: { amount: 42, sku: "A-1" },
      sessionId: "s-1",
      pageUrl: "https://shop.example/checkout",
      utmSource: "newsletter",
    }),
  );
}

/** Register, sign in and create a workspace, as a client address of its own (the registration limit is per address). */
async function ownerSession(baseUrl: string): Promise<{ cookie: string; workspaceId: string }> {
  const email = `bench-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.test`;
  const password = "correct horse battery";
  const headers = {
    "content-type": "application/json",
    "x-forwarded-for": `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
  };
  const post = (route: string, body: Json, cookie = "") =>
    fetch(`${baseUrl}/api/${route}`, {
      method: "POST",
      headers: { ...headers, cookie },
      body: JSON.stringify(body),
    });
  const registered = await post("auth/register", { name: "Bench", email, password });
  if (!registered.ok) throw new Error(`register: ${registered.status} ${await registered.text()}`);
  const signedIn = await post("auth/callback/credentials", { email, password, json: "true" });
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const ws = await post("workspaces", { name: "Bench" }, cookie);
  if (!ws.ok) throw new Error(`workspace: ${ws.status} ${await ws.text()}`);
  return { cookie, workspaceId: ((await ws.json()) as { id: string }).id };
}

interface CpuSample {
  procs: Record<string, number>;
  postgres: number;
  nats: number;
  /** The shape database's commits and rows written so far (pg_stat_database, flushed about each second). */
  commits: number;
  rowsWritten: number;
}

async function sampleCpu(shape: Shape, admin: Client, nats: number | undefined): Promise<CpuSample> {
  const pids = await backendPids(admin, shape.databaseName);
  const treeCpu = (pid: number) => processTree(pid).reduce((sum, p) => sum + cpuSeconds(p), 0);
  const {
    rows: [db],
  } = await admin.query<{ commits: string; written: string }>(
    `SELECT xact_commit AS commits, tup_inserted + tup_updated + tup_deleted AS written
       FROM pg_stat_database WHERE datname = $1`,
    [shape.databaseName],
  );
  return {
    procs: Object.fromEntries(shape.procs.map((p) => [p.name, treeCpu(p.child.pid!)])),
    postgres: pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0),
    nats: nats ? cpuSeconds(nats) : 0,
    commits: Number(db.commits),
    rowsWritten: Number(db.written),
  };
}

/** CPU milliseconds per request of each process between two samples, and the database's commits and rows written. */
function perRequest(before: CpuSample, after: CpuSample, requests: number): Record<string, number> {
  const ms = (a: number, b: number) => +(((b - a) * 1000) / Math.max(1, requests)).toFixed(3);
  const out: Record<string, number> = {};
  for (const name of Object.keys(after.procs)) out[name] = ms(before.procs[name], after.procs[name]);
  out.total = +Object.values(out)
    .reduce((a, b) => a + b, 0)
    .toFixed(3);
  // Backends that closed during the window are not counted; the pools keep theirs open.
  out.postgres = ms(before.postgres, after.postgres);
  out.nats = ms(before.nats, after.nats);
  // Not CPU, but per request too: what the database was asked to do.
  out.commits = +((after.commits - before.commits) / Math.max(1, requests)).toFixed(2);
  out.rowsWritten = +((after.rowsWritten - before.rowsWritten) / Math.max(1, requests)).toFixed(2);
  return out;
}

async function ingestRound(shape: Shape, admin: Client, nats: number | undefined) {
  const recordedBefore = await countEvents(shape);
  const before = await sampleCpu(shape, admin, nats);
  const load = await runLoad({
    url: `${shape.baseUrl}/api/workspaces/${shape.workspaceId}/events`,
    method: "POST",
    headers: { cookie: shape.cookie },
    bodies: shape.bodies,
    seconds: WINDOW_SECONDS,
  });
  const after = await sampleCpu(shape, admin, nats);
  // Per event recorded over the CPU window (the load generator's warm-up second included).
  const recorded = (await countEvents(shape)) - recordedBefore;
  return { load, recorded, cpuMsPerRequest: perRequest(before, after, recorded) };
}

/** Each round: bare node:http, then every shape in turn; each shape against the embedded one and the bare one. */
async function ratioPart(shapes: Shape[], admin: Client) {
  const nats = natsPid();
  const embedded = shapes.find((shape) => shape.name === "embedded");
  console.log(
    `cluster bench, ratio: POST {ws}/events with the chain, ${ROUNDS} rounds of ${WINDOW_SECONDS} s windows, ` +
      `${CONNECTIONS} connections, ${CONTACTS} contacts; shapes: ` +
      shapes.map((shape) => `${shape.name} (${shape.procs.map((p) => p.name).join(", ")})`).join("; ") +
      (shapes.some((shape) => shape.name === "replicas") ? `; ${REPLICAS} replicas` : ""),
  );
  const bare = await startBareServer();
  const rounds: Array<{
    bare: LoadResult;
    shapes: Record<string, LoadResult>;
    cpu: Record<string, Record<string, number>>;
  }> = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const row = {
        bare: await runLoad({ url: bare.url, seconds: WINDOW_SECONDS }),
        shapes: {},
        cpu: {},
      } as (typeof rounds)[number];
      for (const shape of shapes) {
        const result = await ingestRound(shape, admin, nats);
        row.shapes[shape.name] = result.load;
        row.cpu[shape.name] = result.cpuMsPerRequest;
      }
      rounds.push(row);
      console.log(JSON.stringify({ round, ...row }));
    }
  } finally {
    await bare.close();
  }
  const medianOf = (rows: Array<Record<string, number>>) =>
    Object.fromEntries(Object.keys(rows[0]).map((k) => [k, median(rows.map((r) => r[k]))]));
  const ratio = (a: number, b: number) => +(a / Math.max(1, b)).toFixed(3);
  console.log(
    JSON.stringify({
      summary:
        "POST {ws}/events with the chain: each shape, beside the embedded shape and bare node:http, same rounds",
      bareNodeHttpPerSec: median(rounds.map((r) => r.bare.rps)),
      shapes: Object.fromEntries(
        shapes.map((shape) => {
          const own = rounds.map((r) => r.shapes[shape.name]);
          return [
            shape.name,
            {
              perSec: median(own.map((l) => l.rps)),
              p99ms: median(own.map((l) => l.p99)),
              failed: own.reduce((n, l) => n + l.failed, 0),
              toBare: rounds.map((r) => ratio(r.shapes[shape.name].rps, r.bare.rps)),
              toEmbedded: embedded
                ? rounds.map((r) => ratio(r.shapes[shape.name].rps, r.shapes.embedded.rps))
                : [],
              cpuMsPerRequest: medianOf(rounds.map((r) => r.cpu[shape.name])),
            },
          ];
        }),
      ),
      targets: "cluster/embedded >= 0.6; events >= 0.15 of bare node:http (issue 34)",
      load: os.loadavg().map((l) => +l.toFixed(1)),
    }),
  );
}

/** The soak's load generator: fixed rates per operation, one JSON line of per-second figures to stdout. */
const SOAK_JS = `
const http = require("node:http");
const cfg = JSON.parse(require("node:fs").readFileSync(process.env.SOAK_CONFIG_FILE, "utf8"));
const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
const OPS = {
  ingest: (i) => ({ method: "POST", path: "/events", body: cfg.bodies[i % cfg.bodies.length] }),
  send: (i) => ({ method: "POST", path: "/messages", body: JSON.stringify({ contactId: cfg.contactIds[i % cfg.contactIds.length], channel: "email", transactional: true, content: { subject: "Soak " + i, html: "<p>Soak</p>" } }) }),
  read: (i) => i % 2 ? { method: "GET", path: "/contacts?limit=20" } : { method: "GET", path: "/events?limit=20" },
};
const stats = {}; const all = {}; let inFlight = {}; const failures = {};
for (const op of Object.keys(cfg.rates)) { stats[op] = { ok: 0, failed: 0, skipped: 0, lat: [], codes: {} }; all[op] = []; inFlight[op] = 0; }
function fire(op, i) {
  if (inFlight[op] >= cfg.maxInFlight) { stats[op].skipped++; return; }
  inFlight[op]++;
  const r = OPS[op](i); const t = process.hrtime.bigint();
  const route = r.method + " " + r.path.split("?")[0];
  let settled = false;
  const done = (status, reason) => {
    if (settled) return; // a socket error after the answer ended
    settled = true;
    inFlight[op]--;
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    const s = stats[op];
    if (status >= 200 && status < 300) s.ok++;
    else {
      s.failed++; s.codes[status] = (s.codes[status] || 0) + 1;
      // Each failure by what it was: route, status (0: no answer) and the body's code or the socket's error.
      const key = route + " " + status + " " + reason;
      const f = (failures[key] ??= { route, status, reason, n: 0, firstS: Math.round((Date.now() - start) / 1000), ms: [] });
      f.n++; f.lastS = Math.round((Date.now() - start) / 1000); f.ms.push(ms);
    }
    s.lat.push(ms); all[op].push(ms);
  };
  const headers = { cookie: cfg.cookie, ...(r.body ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(r.body)) } : {}) };
  const req = http.request(cfg.base + r.path, { method: r.method, agent, headers }, (res) => {
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    let body = "";
    if (ok) res.resume(); else res.on("data", (c) => { if (body.length < 500) body += c; });
    res.on("end", () => done(res.statusCode, ok ? undefined : reasonOf(body)));
    res.on("error", (err) => done(res.statusCode, "answer cut: " + (err.code || err.message)));
  });
  req.on("error", (err) => done(0, err.code || err.message));
  req.end(r.body);
}
function reasonOf(body) {
  try { const b = JSON.parse(body); return b.code ? b.code + ": " + b.error : String(b.error || body); } catch { return body.slice(0, 120); }
}
const q = (xs, p) => { if (!xs.length) return 0; const s = [...xs].sort((a, b) => a - b); return +s[Math.min(s.length - 1, Math.floor(s.length * p))].toFixed(1); };
const start = Date.now(); const counters = {}; for (const op of Object.keys(cfg.rates)) counters[op] = 0;
const tick = setInterval(() => {
  const elapsed = (Date.now() - start) / 1000;
  for (const [op, rate] of Object.entries(cfg.rates)) while (counters[op] < Math.floor(elapsed * rate)) fire(op, counters[op]++);
}, 10);
const report = setInterval(() => {
  const line = { t: Math.round((Date.now() - start) / 1000), ops: {} };
  for (const [op, s] of Object.entries(stats)) { line.ops[op] = { ok: s.ok, failed: s.failed, skipped: s.skipped, p50: q(s.lat, 0.5), p99: q(s.lat, 0.99), codes: s.codes }; stats[op] = { ok: 0, failed: 0, skipped: 0, lat: [], codes: {} }; }
  console.log(JSON.stringify(line));
  if (Date.now() - start >= cfg.seconds * 1000) {
    clearInterval(tick); clearInterval(report);
    const total = {}; for (const [op, xs] of Object.entries(all)) total[op] = { n: xs.length, p50: q(xs, 0.5), p95: q(xs, 0.95), p99: q(xs, 0.99), max: q(xs, 1) };
    const failed = Object.values(failures).sort((a, b) => b.n - a.n).map(({ ms, ...c }) => ({ ...c, p50ms: q(ms, 0.5), maxMs: q(ms, 1) }));
    console.log(JSON.stringify({ total, failed }));
    setTimeout(() => { agent.destroy(); process.exit(0); }, 5000).unref();
  }
}, 1000);
`;

interface SoakSecond {
  t: number;
  ops: Record<string, { ok: number; failed: number; skipped: number; p50: number; p99: number; codes: Json }>;
  delivered: number;
  rss: Record<string, number>;
}

async function soakPart(shape: Shape) {
  let delivered = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      delivered++;
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  await api(shape, "POST", "webhooks", {
    url: `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`,
    events: ["purchase"],
  });
  const probe = await fetch(`${shape.baseUrl}/api/workspaces/${shape.workspaceId}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: shape.cookie },
    body: JSON.stringify({
      contactId: shape.contactIds[0],
      channel: "email",
      transactional: true,
      content: { subject: "Soak probe", html: "<p>Soak</p>" },
    }),
  });
  if (!probe.ok) throw new Error(`soak: a send is refused: ${probe.status} ${await probe.text()}`);
  const eventsBefore = await countEvents(shape);
  console.log(
    `cluster bench, soak: ${SOAK_SECONDS} s on the cluster shape at ${JSON.stringify(SOAK_RATES)} per second, ` +
      `webhook deliveries of every purchase to a receiver here; load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
  );
  const configFile = path.join(os.tmpdir(), `cms-bench-soak-${process.pid}.json`);
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      base: `${shape.baseUrl}/api/workspaces/${shape.workspaceId}`,
      cookie: shape.cookie,
      bodies: shape.bodies,
      contactIds: shape.contactIds,
      rates: SOAK_RATES,
      seconds: SOAK_SECONDS,
      maxInFlight: 200,
    }),
  );
  const seconds: SoakSecond[] = [];
  let total: Json = {};
  let failed: Json[] = [];
  let lastDelivered = 0;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", SOAK_JS], {
      env: { ...process.env, SOAK_CONFIG_FILE: configFile },
    });
    let partial = "";
    child.stdout.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines.filter(Boolean)) {
        const parsed = JSON.parse(line) as Json;
        if (parsed.total) {
          total = parsed.total as Json;
          failed = parsed.failed as Json[];
          continue;
        }
        const second = parsed as unknown as SoakSecond;
        second.delivered = delivered - lastDelivered;
        lastDelivered = delivered;
        second.rss = Object.fromEntries(shape.procs.map((p) => [p.name, rssMb(p.child.pid!)]));
        seconds.push(second);
        if (second.t % 30 === 0) printSoakRow(seconds.slice(-30));
      }
    });
    child.stderr.on("data", (c) => process.stderr.write(c));
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`soak load generator exited ${code}`)),
    );
  });
  fs.rmSync(configFile, { force: true });
  // Deliveries still due when the load stops: wait until they stop arriving.
  let settled = -1;
  await until(
    async () => {
      const done = delivered === settled;
      settled = delivered;
      return done || undefined;
    },
    120,
    "the webhook deliveries to settle",
  ).catch(() => undefined);
  const recorded = (await countEvents(shape)) - eventsBefore;
  const errors = Object.fromEntries(
    Object.keys(SOAK_RATES).map((op) => [op, seconds.reduce((n, s) => n + (s.ops[op]?.failed ?? 0), 0)]),
  );
  const skipped = Object.fromEntries(
    Object.keys(SOAK_RATES).map((op) => [op, seconds.reduce((n, s) => n + (s.ops[op]?.skipped ?? 0), 0)]),
  );
  console.log(
    JSON.stringify({
      summary: `soak, ${SOAK_SECONDS} s, cluster shape`,
      latencyMs: total,
      errors,
      errorsByKind: failed,
      skippedAtInFlightCap: skipped,
      purchasesRecorded: recorded,
      webhookDeliveriesReceived: delivered,
      rssMbFirst: seconds[0]?.rss,
      rssMbLast: seconds.at(-1)?.rss,
      load: os.loadavg().map((l) => +l.toFixed(1)),
    }),
  );
  const svg = soakSvg(seconds);
  fs.writeFileSync(path.join(ROOT, "docs", "cluster-soak.svg"), svg);
  console.log("cluster bench: wrote docs/cluster-soak.svg");
  await new Promise((resolve) => receiver.close(resolve));
}

async function countEvents(shape: Shape): Promise<number> {
  const db = new Client({ connectionString: shape.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM events WHERE workspace_id = $1 AND type = 'purchase'",
      [shape.workspaceId],
    );
    return Number(rows[0].n);
  } finally {
    await db.end();
  }
}

function printSoakRow(window: SoakSecond[]) {
  const last = window.at(-1)!;
  const ops = Object.fromEntries(
    Object.keys(last.ops).map((op) => [
      op,
      {
        perSec: +(window.reduce((n, s) => n + s.ops[op].ok, 0) / window.length).toFixed(1),
        p50: median(window.map((s) => s.ops[op].p50)),
        p99: Math.max(...window.map((s) => s.ops[op].p99)),
        failed: window.reduce((n, s) => n + s.ops[op].failed, 0),
      },
    ]),
  );
  const deliveries = +(window.reduce((n, s) => n + s.delivered, 0) / window.length).toFixed(1);
  console.log(
    JSON.stringify({
      t: last.t,
      ops,
      deliveriesPerSec: deliveries,
      rssMb: last.rss,
      load: +os.loadavg()[0].toFixed(1),
    }),
  );
}

/** Throughput, p99 latency and RSS over time, one panel each, as a plain SVG. */
export function soakSvg(seconds: SoakSecond[]): string {
  const W = 900;
  const H = 220;
  const M = { l: 60, r: 150, t: 28, b: 30 };
  const colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"];
  const tMax = Math.max(1, ...seconds.map((s) => s.t));
  // Rates and latencies over 10 s buckets, so the lines show trends rather than each second's noise.
  const buckets: SoakSecond[][] = [];
  for (const s of seconds) (buckets[Math.floor((s.t - 1) / 10)] ??= []).push(s);
  const ops = Object.keys(seconds[0]?.ops ?? {});
  const panel = (
    index: number,
    title: string,
    unit: string,
    series: Array<{ name: string; points: Array<[number, number]> }>,
  ) => {
    const top = index * (H + 20);
    const yMax = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p[1]))) * 1.1;
    const x = (t: number) => M.l + ((W - M.l - M.r) * t) / tMax;
    const y = (v: number) => top + M.t + (H - M.t - M.b) * (1 - v / yMax);
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * yMax);
    const tTicks = Array.from({ length: 6 }, (_, i) => Math.round((tMax * i) / 5));
    return [
      `<text x="${M.l}" y="${top + 18}" font-size="14" font-weight="bold">${title}</text>`,
      ...ticks.map(
        (v) =>
          `<line x1="${M.l}" x2="${W - M.r}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${M.l - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${v >= 100 ? Math.round(v) : v.toFixed(1)}</text>`,
      ),
      ...tTicks.map(
        (t) =>
          `<text x="${x(t)}" y="${top + H - M.b + 16}" font-size="11" text-anchor="middle">${t} s</text>`,
      ),
      `<text x="14" y="${top + (H + M.t - M.b) / 2}" font-size="11" transform="rotate(-90 14 ${top + (H + M.t - M.b) / 2})" text-anchor="middle">${unit}</text>`,
      ...series.map((s, i) => {
        const d = s.points
          .map(([t, v], j) => `${j ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`)
          .join(" ");
        return `<path d="${d}" fill="none" stroke="${colors[i % colors.length]}" stroke-width="1.6"/><text x="${W - M.r + 8}" y="${top + M.t + 14 + i * 16}" font-size="12" fill="${colors[i % colors.length]}">${s.name}</text>`;
      }),
    ].join("\n");
  };
  const at = (bucket: SoakSecond[]) => bucket.at(-1)!.t;
  const throughput = [
    ...ops.map((op) => ({
      name: `${op} ok/s`,
      points: buckets.map(
        (b) => [at(b), b.reduce((n, s) => n + s.ops[op].ok, 0) / b.length] as [number, number],
      ),
    })),
    {
      name: "webhook deliveries/s",
      points: buckets.map(
        (b) => [at(b), b.reduce((n, s) => n + s.delivered, 0) / b.length] as [number, number],
      ),
    },
  ];
  const latency = ops.map((op) => ({
    name: `${op} p99`,
    points: buckets.map((b) => [at(b), Math.max(...b.map((s) => s.ops[op].p99))] as [number, number]),
  }));
  const procNames = Object.keys(seconds[0]?.rss ?? {});
  const rss = procNames.map((name) => ({
    name,
    points: buckets.map((b) => [at(b), b.at(-1)!.rss[name]] as [number, number]),
  }));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${3 * (H + 20)}" font-family="sans-serif" viewBox="0 0 ${W} ${3 * (H + 20)}">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(0, "Throughput (10 s means)", "per second", throughput),
    panel(1, "Latency p99 (worst second of each 10 s)", "ms", latency),
    panel(2, "RSS per process", "MB", rss),
    "</svg>",
    "",
  ].join("\n");
}

async function main() {
  if (!process.env.DATABASE_URL || !process.env.NATS_URL || !process.env.REDIS_URL)
    throw new Error("the cluster bench needs DATABASE_URL, NATS_URL and REDIS_URL (see README, Benchmarks)");
  if (process.env.BENCH_NO_BUILD !== "1") {
    console.log("cluster bench: building dist/ (npm run build)");
    execFileSync(
      process.execPath,
      [require.resolve("typescript/bin/tsc"), "-p", path.join(ROOT, "tsconfig.build.json")],
      {
        stdio: "inherit",
      },
    );
  }
  const admin = new Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  const shapes: Array<Shape & { drop: () => Promise<void> }> = [];
  const stopAll = async () => {
    stopping = true;
    const running = started.filter((child) => child.exitCode === null && child.signalCode === null);
    const exited = running.map((child) => new Promise((resolve) => child.once("exit", resolve)));
    for (const child of running) process.kill(-child.pid!, "SIGTERM");
    await Promise.all(exited);
    for (const drop of drops) await drop().catch(() => undefined);
    await admin.end();
  };
  try {
    const wanted = new Set<Shape["name"]>(PARTS.includes("ratio") ? SHAPES : []);
    if (PARTS.includes("soak")) wanted.add("cluster");
    for (const name of wanted) shapes.push(await startShape(name));
    if (PARTS.includes("ratio")) await ratioPart(shapes, admin);
    if (PARTS.includes("soak")) {
      const cluster = shapes.find((s) => s.name === "cluster")!;
      // The other shapes stop first: the soak has the machine to the cluster shape alone.
      for (const proc of shapes.filter((s) => s.name !== "cluster").flatMap((s) => s.procs)) {
        stopped.add(proc.child);
        process.kill(-proc.child.pid!, "SIGTERM");
      }
      await soakPart(cluster);
    }
  } finally {
    await stopAll();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
