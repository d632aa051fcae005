/**
 * Analytics answers from rollups against the same answers recomputed from the
 * raw rows, in one run, on its own database (`cms_bench_analytics`, recreated):
 *   - every built analytics route for a 90-day range through the gateway, p50/p99,
 *     beside the raw-row SQL of the same answer (p50/p99) and the ratio;
 *   - ingest (`events.record`, the real path) with the rollup trigger on and off,
 *     interleaved rounds, and the ratio;
 *   - the fold under a sustained ingest: the deltas' backlog each second while
 *     events are recorded without pause, the deltas appended and folded per second.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/analytics.ts
 *
 * Env: BENCH_CONTACTS (100000), BENCH_EVENTS (1000000), BENCH_MESSAGES (100000) over 365 days
 * (the issue's scale: BENCH_FULL=1 → 1,000,000 / 10,000,000 / 1,000,000), BENCH_SAMPLES (50 per route),
 * BENCH_RAW_SAMPLES (5 per raw recomputation), BENCH_INGEST (20000 events a round), BENCH_ROUNDS (2),
 * BENCH_SUSTAIN (30 seconds of sustained ingest for the fold; 0 skips it), BENCH_PARTS (routes,ingest,fold: the
 * parts to run), BENCH_REUSE=1 keeps the database of a previous run and its seeded workspace (skips the seeding);
 * BENCH_DB names the database (`cms_bench_analytics`; `cms_bench_analytics_full` with BENCH_FULL=1), so two runs
 * on one server keep apart. A reused database must hold the sizes asked for (a build stopped halfway is refused):
 * build the issue's scale once with BENCH_FULL=1, then run it again with BENCH_FULL=1 BENCH_REUSE=1.
 */
import type { AddressInfo } from "node:net";
import { ServiceBroker, type ServiceSchema } from "moleculer";
import { Client } from "pg";
import { QueryTypes } from "sequelize";
import { resetConfig } from "../lib/config";
import { database } from "../lib/database";
import { systemCall } from "../lib/system-call";
import * as answers from "../services/analytics/answers";
import { frameOf } from "../services/analytics/buckets";
import { ownerWithWorkspace } from "../test/helpers/http";
import { runNamespace } from "./events";
import { asWorkspaceId, type WorkspaceId } from "../lib/tenancy";
import { backendPids, cpuSeconds } from "./process-cpu";

const FULL = process.env.BENCH_FULL === "1";
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? (FULL ? 1_000_000 : 100_000));
const EVENTS = Number(process.env.BENCH_EVENTS ?? (FULL ? 10_000_000 : 1_000_000));
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? (FULL ? 1_000_000 : 100_000));
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const RAW_SAMPLES = Number(process.env.BENCH_RAW_SAMPLES ?? 5);
const INGEST = Number(process.env.BENCH_INGEST ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const REUSE = process.env.BENCH_REUSE === "1";
const SUSTAIN_S = Number(process.env.BENCH_SUSTAIN ?? 30);
const PARTS = new Set((process.env.BENCH_PARTS ?? "routes,ingest,fold").split(","));
// The issue's scale builds for an hour or more: its own database, so a run at the default size never drops it.
const DB_NAME = process.env.BENCH_DB ?? (FULL ? "cms_bench_analytics_full" : "cms_bench_analytics");
const CHUNK = 200_000;
const ZONE = "Europe/Berlin";

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};

async function prepareDatabase(baseUrl: string): Promise<string> {
  const admin = new Client({ connectionString: baseUrl });
  await admin.connect();
  const exists = (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [DB_NAME])).rowCount;
  if (!REUSE || !exists) {
    await admin.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${DB_NAME}"`);
  }
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${DB_NAME}`;
  return url.toString();
}

async function startServices(databaseUrl: string): Promise<{ broker: ServiceBroker; baseUrl: string }> {
  Object.assign(process.env, {
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: databaseUrl,
    NAMESPACE: runNamespace(),
  });
  delete process.env.NATS_URL;
  delete process.env.TRANSPORTER;
  resetConfig();
  const { brokerConfig } = require("../moleculer.config") as typeof import("../moleculer.config");
  const broker = new ServiceBroker({ ...brokerConfig(), logger: false });
  for (const file of [
    "api/api",
    "auth/auth",
    "workspaces/workspaces",
    "events/events",
    "analytics/analytics",
  ])
    broker.createService((require(`../services/${file}.service`) as { default: ServiceSchema }).default);
  await broker.start();
  const api = broker.getLocalService("api") as ServiceBroker["services"][number] & {
    server: { address(): AddressInfo };
    routes: Array<{ opts: { autoAliases?: boolean } }>;
    regenerateAutoAliases(route: unknown): void;
  };
  for (const route of api.routes) if (route.opts.autoAliases) api.regenerateAutoAliases(route);
  return { broker, baseUrl: `http://127.0.0.1:${api.server.address().port}` };
}

/**
 * A year of facts, inserted set-based in chunks with the triggers skipped (`session_replication_role = replica`:
 * no analytics trigger and no per-row foreign-key check; every id referred to exists), then the rollups and
 * per-contact facts built from the raw rows in one pass (`analytics.rebuildRollups`). With the triggers, the
 * 10 M events alone took 2,623 s (bench/HISTORY.md).
 */
async function seed(broker: ServiceBroker, ws: WorkspaceId) {
  const sequelize = await database();
  const seedStart = process.hrtime.bigint();
  const run = async (label: string, total: number, sql: string) => {
    const t0 = process.hrtime.bigint();
    for (let from = 1; from <= total; from += CHUNK)
      await sequelize.transaction(async (transaction) => {
        await sequelize.query(`SET LOCAL session_replication_role = replica`, { transaction });
        await sequelize.query(sql, { bind: [ws, from, Math.min(total, from + CHUNK - 1)], transaction });
      });
    console.log(`seed ${label.padEnd(40)} ${(ms(t0) / 1000).toFixed(1)} s`);
  };
  // Spread over the 365 days before now, deterministic per row.
  const at = (g: string) => `now() - make_interval(secs => ((${g}::bigint * 7919) % 31536000))`;
  await run(
    `${CONTACTS.toLocaleString()} contacts`,
    CONTACTS,
    `INSERT INTO contacts (id, workspace_id, email, created_at)
     SELECT 'c' || g, $1, 'user' || g || '@example.test', ${at("g")} FROM generate_series($2::int, $3::int) g`,
  );
  await run(
    `${EVENTS.toLocaleString()} events`,
    EVENTS,
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata, utm_source, timestamp)
     SELECT 'e' || g, $1, 'c' || (1 + g % ${CONTACTS}),
            (ARRAY['page_view','page_view','page_view','signup','message.open','message.click','purchase','download'])[1 + g % 8],
            CASE WHEN g % 8 = 6 THEN jsonb_build_object('amount', (g % 200) + 0.5, 'campaignId', 'cmp' || (g % 20))
                 WHEN g % 8 IN (4, 5) THEN jsonb_build_object('campaignId', 'cmp' || (g % 20), 'channel', 'email',
                                                             'url', 'https://shop.example/p' || (g % 10))
                 ELSE '{}'::jsonb END,
            (ARRAY['news', 'ads', NULL])[1 + g % 3], ${at("g")}
       FROM generate_series($2::int, $3::int) g`,
  );
  // Statuses by row: every one sent except failed/suppressed; then delivered, opened, clicked, bounced, complained.
  await run(
    `${MESSAGES.toLocaleString()} messages`,
    MESSAGES,
    `INSERT INTO messages (id, workspace_id, contact_id, channel, status, reason, to_address, campaign_id,
                           created_at, sent_at, delivered_at, opened_at, clicked_at, history)
     SELECT 'm' || g, $1, 'c' || (1 + g % ${CONTACTS}), s.channel, s.status,
            CASE s.status WHEN 'suppressed' THEN 'dnc' WHEN 'bounced' THEN 'hard_bounce' END,
            'user' || g || (ARRAY['@gmail.com', '@yahoo.com', '@example.org', '@mail.example'])[1 + g % 4],
            'cmp' || (g % 20), t.at,
            CASE WHEN s.status NOT IN ('failed', 'suppressed') THEN t.at END,
            CASE WHEN s.status IN ('delivered', 'opened', 'clicked', 'complained') THEN t.at + interval '1 minute' END,
            CASE WHEN s.status IN ('opened', 'clicked') THEN t.at + interval '1 hour' END,
            CASE WHEN s.status = 'clicked' THEN t.at + interval '2 hours' END,
            jsonb_build_array(jsonb_build_object('status', s.status, 'at',
              to_char((t.at + interval '3 hours') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'reason', NULL))
       FROM generate_series($2::int, $3::int) g
       CROSS JOIN LATERAL (SELECT ${at("g")} AS at) t
       CROSS JOIN LATERAL (SELECT CASE WHEN g % 10 < 7 THEN 'email' ELSE 'sms' END AS channel,
              (ARRAY['sent','delivered','delivered','opened','opened','clicked','bounced','complained','failed','suppressed'])[1 + g % 10] AS status) s`,
  );
  await sequelize.query("ANALYZE");
  const raw = ms(seedStart);
  const t0 = process.hrtime.bigint();
  await systemCall(broker, ws, "analytics.rebuildRollups", {});
  const rebuild = ms(t0);
  // What autovacuum does to freshly written tables before the first dashboard asks: with it off (as on this
  // machine's server) no page is marked all-visible, and every index-only scan, raw or rollup, reads the heap too.
  await sequelize.query("VACUUM (ANALYZE)");
  console.log(
    `seed split: raw rows ${(raw / 1000).toFixed(1)} s, rebuild ${(rebuild / 1000).toFixed(1)} s, then VACUUM ANALYZE ${((ms(t0) - rebuild) / 1000).toFixed(1)} s`,
  );
}

/** Each route's question, and the same answer from the raw rows (plain SQL, as a report would have run it). */
function cases(frame: { from: string; to: string }, ws: WorkspaceId) {
  const scope = { workspaceId: ws, frame: frameOf({ ...frame, granularity: "day", timezone: ZONE }) };
  const range = `from=${frame.from}&to=${frame.to}&timezone=${encodeURIComponent(ZONE)}`;
  // $1 workspace, $2 start, $3 end, $4 zone
  const day = (col: string) => `date_trunc('day', ${col} AT TIME ZONE $4) AT TIME ZONE $4`;
  const reached = `SELECT m.channel, m.campaign_id, m.to_address, s.status, s.at FROM messages m
      CROSS JOIN LATERAL (SELECT 'sent' AS status, m.sent_at AS at UNION ALL SELECT 'delivered', m.delivered_at
        UNION ALL SELECT 'opened', m.opened_at UNION ALL SELECT 'clicked', m.clicked_at
        UNION ALL SELECT m.status, (SELECT min((h ->> 'at')::timestamptz) FROM jsonb_array_elements(m.history) h
                                     WHERE h ->> 'status' = m.status)
         WHERE m.status IN ('failed', 'bounced', 'complained', 'suppressed')) s
     WHERE m.workspace_id = $1 AND s.at >= $2 AND s.at < $3`;
  return [
    {
      name: "overview",
      path: `analytics?${range}`,
      direct: () => answers.overview(scope),
      raw: `SELECT (SELECT count(*) FROM contacts WHERE workspace_id = $1 AND created_at < $3) AS total,
                   (SELECT count(*) FROM contacts WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3) AS new,
                   (SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM (${reached}) r GROUP BY 1) c) AS counts,
                   (SELECT count(*) FROM events WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3) AS events,
                   (SELECT sum((metadata ->> 'amount')::numeric) FROM events
                     WHERE workspace_id = $1 AND type = 'purchase' AND timestamp >= $2 AND timestamp < $3) AS revenue,
                   $4::text AS zone`,
    },
    {
      name: "timeseries?metric=events",
      path: `analytics/timeseries?metric=events&${range}`,
      direct: () => answers.timeseries(scope, "events"),
      raw: `SELECT ${day("timestamp")} AS t, count(*) FROM events
             WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3 GROUP BY 1`,
    },
    {
      name: "timeseries?metric=opened",
      path: `analytics/timeseries?metric=opened&${range}`,
      direct: () => answers.timeseries(scope, "opened"),
      raw: `SELECT ${day("opened_at")} AS t, count(*) FROM messages
             WHERE workspace_id = $1 AND opened_at >= $2 AND opened_at < $3 GROUP BY 1`,
    },
    {
      name: "deliverability",
      path: `analytics/deliverability?${range}`,
      direct: () => answers.deliverability(scope),
      raw: `SELECT channel, status, count(*), $4::text FROM (${reached}) r GROUP BY 1, 2`,
    },
    {
      name: "domains",
      path: `analytics/domains?${range}`,
      direct: () => answers.domains(scope),
      raw: `SELECT lower(split_part(to_address, '@', 2)), status, count(*), $4::text FROM (${reached}) r
             WHERE channel = 'email' GROUP BY 1, 2`,
    },
    {
      name: "activity",
      path: `analytics/activity?${range}`,
      direct: () => answers.activity(scope),
      raw: `SELECT ${day("timestamp")} AS t, type, count(*) FROM events
             WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3 GROUP BY 1, 2`,
    },
    {
      name: "revenue",
      path: `analytics/revenue?${range}`,
      direct: () => answers.revenue(scope),
      raw: `SELECT ${day("timestamp")} AS t, metadata ->> 'campaignId', sum((metadata ->> 'amount')::numeric), count(*)
              FROM events WHERE workspace_id = $1 AND type = 'purchase' AND timestamp >= $2 AND timestamp < $3
             GROUP BY 1, 2`,
    },
    {
      name: "funnel (3 steps, 30 days)",
      path: `analytics/funnel?steps=signup,page_view,purchase&${range}`,
      direct: () => answers.funnel(scope, ["signup", "page_view", "purchase"], 30),
      raw: `WITH firsts AS (SELECT contact_id, type, min(timestamp) AS at FROM events
                         WHERE workspace_id = $1 AND contact_id IS NOT NULL GROUP BY 1, 2)
            SELECT count(f0.at), count(f1.at), count(f2.at), $4::text
              FROM firsts f0
              LEFT JOIN firsts f1 ON f1.contact_id = f0.contact_id AND f1.type = 'page_view' AND f1.at >= f0.at
                                 AND f1.at <= f0.at + interval '30 days'
              LEFT JOIN firsts f2 ON f2.contact_id = f0.contact_id AND f2.type = 'purchase' AND f2.at >= f1.at
                                 AND f2.at <= f0.at + interval '30 days'
             WHERE f0.type = 'signup' AND f0.at >= $2 AND f0.at < $3`,
    },
    {
      name: "cohorts?event=signup",
      path: `analytics/cohorts?event=signup&${range}`,
      direct: () => answers.cohorts(scope, "signup"),
      raw: `WITH firsts AS (SELECT contact_id, min(timestamp) AS at FROM events
                         WHERE workspace_id = $1 AND type = 'signup' AND contact_id IS NOT NULL GROUP BY 1),
                 cohort AS (SELECT contact_id, ${day("at")} AS t FROM firsts WHERE at >= $2 AND at < $3)
            SELECT c.t, ${day("e.timestamp")}, count(DISTINCT c.contact_id) FROM cohort c
              JOIN events e ON e.contact_id = c.contact_id AND e.timestamp >= c.t AND e.timestamp < $3
             WHERE e.workspace_id = $1 GROUP BY 1, 2`,
    },
    {
      name: "attribution (last_touch)",
      path: `analytics/attribution?model=last_touch&${range}`,
      direct: () => answers.attribution(scope, "last_touch", "purchase"),
      raw: `WITH conversions AS (SELECT id, contact_id, timestamp AS at, metadata FROM events
                               WHERE workspace_id = $1 AND type = 'purchase' AND contact_id IS NOT NULL
                                 AND timestamp >= $2 AND timestamp < $3),
                 touches AS (SELECT contact_id, timestamp AS at, 'source' AS kind, utm_source AS key FROM events
                              WHERE workspace_id = $1 AND utm_source IS NOT NULL AND contact_id IS NOT NULL
                                AND timestamp >= $2::timestamptz - interval '30 days' AND timestamp < $3
                             UNION ALL
                             SELECT contact_id, sent_at, 'campaign', campaign_id FROM messages
                              WHERE workspace_id = $1 AND campaign_id IS NOT NULL AND contact_id IS NOT NULL
                                AND sent_at >= $2::timestamptz - interval '30 days' AND sent_at < $3)
            SELECT kind, key, count(*), sum(amount), $4::text FROM (
              SELECT DISTINCT ON (c.id) c.id, t.kind, t.key, (c.metadata ->> 'amount')::numeric AS amount
                FROM conversions c JOIN touches t ON t.contact_id = c.contact_id AND t.at <= c.at
                                                 AND t.at > c.at - interval '30 days'
               ORDER BY c.id, t.at DESC, t.kind DESC, t.key DESC) x
             GROUP BY 1, 2`,
    },
    {
      name: "campaigns/{id}",
      path: `analytics/campaigns/cmp3?${range}`,
      direct: () => answers.campaign({ ...scope, campaignId: "cmp3" }),
      raw: `SELECT (SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM (${reached}) r
                                                           WHERE campaign_id = 'cmp3' GROUP BY 1) c) AS counts,
                   (SELECT jsonb_object_agg(url, n) FROM (SELECT metadata ->> 'url' AS url, count(*) AS n FROM events
                      WHERE workspace_id = $1 AND type = 'message.click' AND metadata ->> 'campaignId' = 'cmp3'
                        AND timestamp >= $2 AND timestamp < $3 GROUP BY 1) l) AS links, $4::text`,
    },
  ];
}

async function measureRoutes(client: Awaited<ReturnType<typeof ownerWithWorkspace>>, ws: string) {
  const sequelize = await database();
  // 90 days, whole Berlin days: the frame the answers use.
  const to = new Date();
  const from = new Date(to.getTime() - 89 * 86_400_000);
  const frame = { from: from.toISOString().slice(0, 10), to: to.toISOString().slice(0, 10) };
  const [{ start, end }] = await sequelize.query<{ start: Date; end: Date }>(
    `SELECT ($1::date::timestamp AT TIME ZONE $3) AS start, (($2::date + 1)::timestamp AT TIME ZONE $3) AS end`,
    { bind: [frame.from, frame.to, ZONE], type: QueryTypes.SELECT },
  );
  console.log(`\nroutes over 90 days (${frame.from} .. ${frame.to}, ${ZONE}); p50 / p99 in ms`);
  console.log(
    `${"answer".padEnd(28)} ${"route (gateway)".padStart(16)} ${"in process".padStart(14)} ${"raw rows".padStart(14)} ${"ratio p99".padStart(10)} ${"in process".padStart(10)}`,
  );
  // As a dashboard asks: a plain fetch with the session cookie. The tests' client also checks each answer against
  // the OpenAPI document (its route found among every path, its schema validated), which is no part of the answer.
  const http = client.owner.client;
  const cookie = [...http.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  const get = async (path: string) => {
    const res = await fetch(`${http.baseUrl}${client.ws}/${path}`, { headers: { cookie } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text}`);
  };
  for (const c of cases(frame, asWorkspaceId(ws))) {
    const inProcess: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      await c.direct();
      inProcess.push(ms(t0));
    }
    const fast: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      await get(c.path);
      fast.push(ms(t0));
    }
    const slow: number[] = [];
    for (let i = 0; i < RAW_SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      await sequelize.query(c.raw, { bind: [ws, start, end, ZONE], type: QueryTypes.SELECT });
      slow.push(ms(t0));
    }
    const [f50, f99, s50, s99] = [
      quantile(fast, 0.5),
      quantile(fast, 0.99),
      quantile(slow, 0.5),
      quantile(slow, 0.99),
    ];
    const [d50, d99] = [quantile(inProcess, 0.5), quantile(inProcess, 0.99)];
    console.log(
      `${c.name.padEnd(28)} ${`${f50.toFixed(1)} / ${f99.toFixed(1)}`.padStart(16)} ${`${d50.toFixed(1)} / ${d99.toFixed(1)}`.padStart(14)} ${`${s50.toFixed(0)} / ${s99.toFixed(0)}`.padStart(14)} ${`${(s99 / f99).toFixed(0)}×`.padStart(10)} ${`${(s99 / d99).toFixed(0)}×`.padStart(10)}`,
    );
  }
  const realtime: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = process.hrtime.bigint();
    await get("analytics/realtime");
    realtime.push(ms(t0));
  }
  console.log(
    `${"realtime (raw, 30 min)".padEnd(28)} ${`${quantile(realtime, 0.5).toFixed(1)} / ${quantile(realtime, 0.99).toFixed(1)}`.padStart(16)}`,
  );
}

/**
 * `events.record` (the real path: insert with its outbox fact, triggers) at 50 in flight, `n` events or until
 * `until()` says stop; events per second.
 */
async function ingestRate(
  broker: ServiceBroker,
  ws: string,
  n: number,
  until: () => boolean = () => false,
): Promise<number> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (next < n && !until()) {
      const i = next++;
      await systemCall(broker, asWorkspaceId(ws), "events.record", {
        type: i % 10 === 0 ? "purchase" : "page_view",
        contactId: `c${1 + (i % CONTACTS)}`,
        metadata: i % 10 === 0 ? { amount: 12.5, campaignId: `cmp${i % 20}` } : {},
      });
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
  return next / (ms(t0) / 1000);
}

/** CPU seconds used so far: this process (the services and the bench) and each backend of the bench database. */
async function cpuNow(probe: Client): Promise<{ node: number; backends: Map<number, number> }> {
  const usage = process.cpuUsage();
  const pids = await backendPids(probe, DB_NAME);
  return {
    node: (usage.user + usage.system) / 1e6,
    backends: new Map(pids.map((pid) => [pid, cpuSeconds(pid)])),
  };
}

/** CPU spent between two readings: Node, and the database's backends (one connected since counts from 0). */
function cpuSpent(from: Awaited<ReturnType<typeof cpuNow>>, to: Awaited<ReturnType<typeof cpuNow>>) {
  let db = 0;
  for (const [pid, seconds] of to.backends) db += seconds - (from.backends.get(pid) ?? 0);
  return { node: to.node - from.node, db };
}

/** Until the fold has taken every stored event and every delta (the work the triggers left for it). */
async function folded() {
  for (;;) {
    const { held } = await deltaCounters();
    if (held === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function measureIngest(broker: ServiceBroker, ws: string, databaseUrl: string) {
  const sequelize = await database();
  const probe = new Client({ connectionString: databaseUrl });
  await probe.connect();
  // The analytics trigger of stored events (migration 0112): it appends each event for the fold, which derives the
  // rollup deltas, the contacts' first times and sources, activity, touches, attribution and conversions.
  const toggle = (on: boolean) =>
    sequelize.query(`ALTER TABLE events ${on ? "ENABLE" : "DISABLE"} TRIGGER analytics_events_stored`);
  await ingestRate(broker, ws, Math.min(2000, INGEST)); // warm-up
  await folded();
  const on: number[] = [];
  const off: number[] = [];
  const cpu = { on: { node: 0, db: 0 }, off: { node: 0, db: 0 } };
  // A round's CPU runs until the fold has taken what the round left, so "on" pays for its fold.
  const round = async (side: "on" | "off") => {
    await toggle(side === "on");
    const before = await cpuNow(probe);
    (side === "on" ? on : off).push(await ingestRate(broker, ws, INGEST));
    await folded();
    const spent = cpuSpent(before, await cpuNow(probe));
    cpu[side].node += spent.node;
    cpu[side].db += spent.db;
  };
  for (let i = 0; i < ROUNDS; i++) {
    await round("off");
    await round("on");
  }
  await toggle(true);
  await probe.end();
  const median = (v: number[]) => quantile(v, 0.5);
  const pairs = on.map((rate, i) => rate / off[i]);
  const perEvent = (seconds: number) => (seconds * 1000) / (INGEST * ROUNDS);
  const total = (side: "on" | "off") => perEvent(cpu[side].node + cpu[side].db);
  console.log(
    `\ningest ${INGEST.toLocaleString()} events × ${ROUNDS} rounds: rollups on ${on.map((r) => r.toFixed(0)).join(", ")}/s, off ${off.map((r) => r.toFixed(0)).join(", ")}/s; on/off by round ${pairs.map((r) => r.toFixed(2)).join(", ")}, median of the rounds ${median(pairs).toFixed(2)}`,
  );
  console.log(
    `CPU an event (ms, the fold included): on ${total("on").toFixed(3)} (Node ${perEvent(cpu.on.node).toFixed(3)}, database ${perEvent(cpu.on.db).toFixed(3)}), off ${total("off").toFixed(3)} (Node ${perEvent(cpu.off.node).toFixed(3)}, database ${perEvent(cpu.off.db).toFixed(3)}); off/on ${(total("off") / total("on")).toFixed(2)} (the rate ratio on a machine whose both cores this ingest fills)`,
  );
}

/**
 * The fold's backlog now (the deltas held and the stored events whose facts are not yet derived, migration
 * 0112), and the deltas appended and deleted (folded) so far as the server's statistics count them (each backend
 * reports about once a second, so rates are read over several seconds).
 */
async function deltaCounters() {
  const sequelize = await database();
  const [row] = await sequelize.query<{ held: string; appended: string; folded: string }>(
    `SELECT (SELECT count(*) FROM analytics_rollup_deltas) + (SELECT count(*) FROM analytics_events_pending) AS held,
            n_tup_ins AS appended, n_tup_del AS folded
       FROM pg_stat_user_tables WHERE relname = 'analytics_rollup_deltas'`,
    { type: QueryTypes.SELECT },
  );
  return {
    held: Number(row.held),
    appended: Number(row.appended),
    folded: Number(row.folded),
  };
}

/**
 * The fold (the service's own timer, every ANALYTICS_FOLD_MS) under `events.record` without pause for
 * SUSTAIN_S seconds: each second the deltas held and the events recorded; every 5 seconds the deltas appended
 * and folded per second; then how long the backlog takes to drain once the ingest stops.
 */
async function measureFold(broker: ServiceBroker, ws: string) {
  let recorded = 0;
  let stop = false;
  const start = Date.now();
  const first = await deltaCounters();
  const ingest = ingestRate(broker, ws, Number.MAX_SAFE_INTEGER, () => {
    if (Date.now() - start >= SUSTAIN_S * 1000) stop = true;
    if (!stop) recorded++;
    return stop;
  });
  console.log(
    `\nfold under ${SUSTAIN_S} s of sustained ingest (backlog: deltas held and events not yet derived; rates per second)`,
  );
  console.log(
    `${"s".padStart(4)} ${"events/s".padStart(9)} ${"backlog".padStart(8)} ${"appended/s".padStart(11)} ${"folded/s".padStart(9)}`,
  );
  let last = { at: start, recorded: 0, counters: first };
  let window = last;
  for (let second = 1; !stop; second++) {
    await new Promise((resolve) => setTimeout(resolve, start + second * 1000 - Date.now()));
    if (stop) break;
    const counters = await deltaCounters();
    const now = { at: Date.now(), recorded, counters };
    const perSecond = (now.recorded - last.recorded) / ((now.at - last.at) / 1000);
    let rates = "";
    if (second % 5 === 0) {
      const span = (now.at - window.at) / 1000;
      rates = `${((counters.appended - window.counters.appended) / span).toFixed(0).padStart(11)} ${((counters.folded - window.counters.folded) / span).toFixed(0).padStart(9)}`;
      window = now;
    }
    console.log(
      `${String(second).padStart(4)} ${perSecond.toFixed(0).padStart(9)} ${String(counters.held).padStart(8)} ${rates}`,
    );
    last = now;
  }
  const rate = await ingest;
  const stopped = Date.now();
  let drained = await deltaCounters();
  while (drained.held > 0) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    drained = await deltaCounters();
  }
  await new Promise((resolve) => setTimeout(resolve, 1500)); // the statistics of the last folds reported
  const total = await deltaCounters();
  const span = (Date.now() - start) / 1000;
  console.log(
    `ingest ${rate.toFixed(0)} events/s; deltas appended ${((total.appended - first.appended) / span).toFixed(0)}/s and folded ${((total.folded - first.folded) / span).toFixed(0)}/s over the run (${(total.appended - first.appended).toLocaleString()} and ${(total.folded - first.folded).toLocaleString()}); backlog drained ${((Date.now() - 1500 - stopped) / 1000).toFixed(1)} s after the ingest stopped`,
  );
}

/**
 * The fold's backlog (stored events and deltas) taken (the fold's own timer may hold the locks, so wait for both
 * to empty) and the tables vacuumed, as autovacuum leaves them: the routes are timed on a settled database, not
 * beside a fold of a year of facts.
 */
async function settleRollups(broker: ServiceBroker) {
  const sequelize = await database();
  for (;;) {
    // A year of deltas folds for minutes: no call timeout.
    await broker.call("analytics.foldRollups", {}, { timeout: 0 });
    const { held } = await deltaCounters();
    if (held === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The fold's two queues, emptied by its deletes, as autovacuum would keep them (this machine's server runs
  // without it): an answer's fold reads the pending events' index, which dead entries would fill.
  await sequelize.query("VACUUM ANALYZE analytics_rollup_deltas, analytics_events_pending");
}

/**
 * A reused workspace holds the contacts and messages asked for, and at least the events (each run's ingest adds
 * some): else the figures would be of another size, or of a build stopped halfway.
 */
async function checkSeededSize(ws: string) {
  const sequelize = await database();
  const [held] = await sequelize.query<{ contacts: string; events: string; messages: string }>(
    `SELECT (SELECT count(*) FROM contacts WHERE workspace_id = $1) AS contacts,
            (SELECT sum(value) FROM analytics_rollups WHERE workspace_id = $1 AND metric = 'all:events' AND tier = 2)
              AS events,
            (SELECT count(*) FROM messages WHERE workspace_id = $1) AS messages`,
    { bind: [ws], type: QueryTypes.SELECT },
  );
  const [contacts, events, messages] = [held.contacts, held.events, held.messages].map(Number);
  if (contacts !== CONTACTS || messages !== MESSAGES || events < EVENTS)
    throw new Error(
      `${DB_NAME} holds ${contacts} contacts, ${events} events and ${messages} messages, not the ${CONTACTS}, ${EVENTS} and ${MESSAGES} asked for: run without BENCH_REUSE to build it again, or name another BENCH_DB`,
    );
}

async function main() {
  const base = process.env.DATABASE_URL;
  if (!base)
    throw new Error("Set DATABASE_URL to a PostgreSQL server (the bench creates its own database there)");
  const databaseUrl = await prepareDatabase(base);
  const { broker, baseUrl } = await startServices(databaseUrl);
  try {
    let client = await ownerWithWorkspace(baseUrl);
    const sequelize = await database();
    const [seeded] = REUSE
      ? await sequelize.query<{ workspace_id: string }>(
          `SELECT workspace_id FROM analytics_rollups WHERE metric = 'all:events' AND tier = 2
            GROUP BY 1 ORDER BY sum(value) DESC LIMIT 1`,
          { type: QueryTypes.SELECT },
        )
      : [];
    if (seeded) {
      await checkSeededSize(seeded.workspace_id);
      // The new owner joins the seeded workspace.
      await sequelize.query(
        `INSERT INTO members (id, workspace_id, user_id, role) VALUES (gen_random_uuid()::text, $1, $2, 'OWNER')`,
        { bind: [seeded.workspace_id, client.owner.id] },
      );
      client = {
        ...client,
        workspaceId: asWorkspaceId(seeded.workspace_id),
        ws: `/api/workspaces/${seeded.workspace_id}`,
      };
    }
    console.log(
      `scale: ${CONTACTS.toLocaleString()} contacts, ${EVENTS.toLocaleString()} events, ${MESSAGES.toLocaleString()} messages over 365 days; ${SAMPLES} samples a route, ${RAW_SAMPLES} a raw recomputation`,
    );
    if (!seeded) await seed(broker, client.workspaceId);
    const t0 = process.hrtime.bigint();
    await settleRollups(broker);
    console.log(`the fold's backlog folded and its queues vacuumed in ${(ms(t0) / 1000).toFixed(1)} s`);
    if (PARTS.has("routes")) await measureRoutes(client, client.workspaceId);
    if (PARTS.has("ingest")) await measureIngest(broker, client.workspaceId, databaseUrl);
    if (PARTS.has("fold") && SUSTAIN_S > 0) await measureFold(broker, client.workspaceId);
  } finally {
    await broker.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
