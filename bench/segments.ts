/**
 * Segment evaluation speed, in its own database (`cms_bench_segments`, recreated each run):
 *   - full recompute of an attribute segment over BENCH_CONTACTS contacts (from empty, then diff-only)
 *   - a behavioural segment over BENCH_CONTACTS contacts and BENCH_EVENTS events
 *   - one contact against 50 segments (p50 / p99 over BENCH_SAMPLES contacts)
 *   - preview count over BENCH_CONTACTS contacts
 * Beside the wall time of each full recompute, the CPU the database's backends spent on it (PostgreSQL on
 * this machine): on a shared machine the wall time measures the neighbours as much as the statement.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/segments.ts
 *
 * Env: BENCH_CONTACTS (1000000), BENCH_EVENTS (10000000), BENCH_SAMPLES (1000), BENCH_REUSE=1 keeps
 * the database of a previous run (skips data generation), BENCH_DB names that database (so a small dataset
 * does not replace the full one).
 */
import { Client } from "pg";
import { QueryTypes } from "sequelize";
import { resetConfig } from "../lib/config";
import { acquireDatabase, releaseDatabase } from "../lib/database";
import type { FilterGroup } from "../services/segments/filter-schema";
import { validateFilter } from "../services/segments/filter-schema";
import { evaluateContacts, recomputeSegment } from "../services/segments/membership";
import { preview } from "../services/segments/matching.repo";
import { backendPids, cpuSeconds } from "./process-cpu";
import { asWorkspaceId } from "../lib/tenancy";

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1000);
const REUSE = process.env.BENCH_REUSE === "1";
const DB_NAME = process.env.BENCH_DB ?? "cms_bench_segments";
const WS = asWorkspaceId("bench-ws");

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const fmt = (n: number) => `${n.toFixed(n < 10 ? 2 : 0)} ms`;
async function timed<T>(label: string, work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await work();
  const took = ms(t0);
  console.log(`${label.padEnd(72)} ${fmt(took)}`);
  return { ms: took, value };
}

/** CPU seconds the bench database's backends have used so far (those connected now). */
async function databaseCpu(probe: Client): Promise<number> {
  const pids = await backendPids(probe, DB_NAME);
  return pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
}

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

async function main() {
  const base = process.env.DATABASE_URL;
  if (!base)
    throw new Error("Set DATABASE_URL to a PostgreSQL server (the bench creates its own database there)");
  process.env.DATABASE_URL = await prepareDatabase(base);
  resetConfig();
  const sequelize = await acquireDatabase(); // runs the migrations
  const q = (sql: string, bind: unknown[] = []) => sequelize.query(sql, { bind, type: QueryTypes.SELECT });
  const [{ n: existing }] = (await q(`SELECT count(*)::int AS n FROM contacts`)) as Array<{ n: number }>;

  console.log(
    `contacts ${CONTACTS.toLocaleString()}, events ${EVENTS.toLocaleString()}, PostgreSQL ${(await q("SHOW server_version")).map((r: any) => r.server_version)}`,
  );
  if (!REUSE || existing === 0) {
    await q(
      `INSERT INTO users (id, name, email, password_hash) VALUES ('bench-user', 'Bench', 'bench@x.test', 'x') RETURNING id`,
    );
    await q(`INSERT INTO workspaces (id, name, slug) VALUES ($1, 'Bench', 'bench') RETURNING id`, [WS]);
    await timed(`generate ${CONTACTS.toLocaleString()} contacts`, () =>
      sequelize.query(
        `INSERT INTO contacts (id, workspace_id, email, first_name, country, tags, attributes, score, stage, consent, created_at, updated_at)
         SELECT 'c' || g, $1, 'user' || g || '@example.test', 'Name' || (g % 1000),
                (ARRAY['DE','FR','US','GB','ES'])[1 + g % 5],
                CASE WHEN g % 7 = 0 THEN ARRAY['vip'] WHEN g % 3 = 0 THEN ARRAY['beta','news'] ELSE '{}'::text[] END,
                jsonb_build_object('plan', (ARRAY['pro','free','free','team','free','free','free','free','free','free'])[1 + g % 10],
                                   'seats', g % 50, 'signup', to_char(now() - make_interval(days => g % 700), 'YYYY-MM-DD')),
                (g * 37) % 100, (ARRAY['lead','customer','subscriber'])[1 + g % 3],
                CASE WHEN g % 4 = 0 THEN '{"email":{"status":"opted_out"}}'::jsonb ELSE '{"email":{"status":"opted_in"}}'::jsonb END,
                now() - make_interval(secs => g % 31536000), now()
           FROM generate_series(1, $2::int) AS g`,
        { bind: [WS, CONTACTS] },
      ),
    );
    const batch = 2_000_000;
    // Bulk load: the events indexes are dropped for the load and rebuilt after (same definitions).
    const indexes = (await q(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' AND indexname <> 'events_pkey'`,
    )) as Array<{
      indexname: string;
      indexdef: string;
    }>;
    for (const ix of indexes) await sequelize.query(`DROP INDEX ${ix.indexname}`);
    await timed(`generate ${EVENTS.toLocaleString()} events`, async () => {
      for (let start = 1; start <= EVENTS; start += batch) {
        // Without the per-row foreign-key check and the analytics triggers (every contact id exists, and
        // nothing here reads the analytics tables): with them the 10 M took 2,623 s on a busy machine.
        await sequelize.transaction(async (transaction) => {
          await sequelize.query(`SET LOCAL session_replication_role = replica`, { transaction });
          await sequelize.query(
            `INSERT INTO events (id, workspace_id, contact_id, type, metadata, timestamp)
             SELECT 'e' || g, $1, 'c' || (1 + (g::bigint * 7919) % $4::int),
                    (ARRAY['page_view','page_view','page_view','purchase','signup'])[1 + g % 5],
                    jsonb_build_object('amount', g % 500), now() - make_interval(secs => (g::bigint * 13) % 7776000)
               FROM generate_series($2::int, $3::int) AS g`,
            { bind: [WS, start, Math.min(EVENTS, start + batch - 1), CONTACTS], transaction },
          );
        });
      }
    });
    await timed("rebuild events indexes", async () => {
      for (const ix of indexes) await sequelize.query(ix.indexdef);
    });
  }
  // Freshly loaded tables: set hint bits and the visibility map once, as any settled database has them.
  await timed("VACUUM ANALYZE", () => sequelize.query("VACUUM ANALYZE"));
  // ... and flush the load's dirty pages now, so a checkpoint storm does not land inside a measurement.
  await timed("CHECKPOINT", () => sequelize.query("CHECKPOINT"));

  const insertSegment = async (id: string, filter: FilterGroup) => {
    const { issues, facts } = validateFilter(filter);
    if (issues.length) throw new Error(JSON.stringify(issues));
    await q(
      `INSERT INTO segments (id, workspace_id, name, type, filter, depends_on, event_types, uses_score)
       VALUES ($1, $2, $1, 'dynamic', $3::jsonb, $4::text[], $5::text[], $6)
       ON CONFLICT (id) DO UPDATE SET filter = EXCLUDED.filter RETURNING id`,
      [id, WS, JSON.stringify(filter), facts.segmentIds, facts.eventTypes, facts.usesScore],
    );
    await q(`DELETE FROM segment_members WHERE segment_id = $1 RETURNING 1`, [id]);
  };

  const figures: Record<string, number> = {};
  const probe = new Client({ connectionString: process.env.DATABASE_URL });
  await probe.connect();
  /** A full recompute, timed, with the database CPU it took. */
  const recompute = async (label: string, id: string, filter: FilterGroup) => {
    const cpu0 = await databaseCpu(probe);
    const run = await timed(label, () => recomputeSegment(WS, id, filter));
    const cpu = (await databaseCpu(probe)) - cpu0;
    console.log(`${"".padEnd(4)}database CPU ${cpu.toFixed(2)} s`);
    return { ...run, cpu };
  };
  console.log("");

  // 1. Attribute segment (10 % of contacts): full build from empty, then a diff-only recompute.
  const attribute: FilterGroup = {
    match: "all",
    conditions: [{ field: "attributes.plan", operator: "eq", value: "pro" }],
  };
  await insertSegment("attr", attribute);
  const built = await recompute("full recompute, attribute segment (from empty)", "attr", attribute);
  console.log(
    `${"".padEnd(4)}members ${built.value.memberCount.toLocaleString()} (added ${built.value.added.toLocaleString()})`,
  );
  figures.attributeFull = built.ms;
  // 8,000 contacts switch between free and pro (every run flips them, so a reused database changes too).
  await q(
    `UPDATE contacts SET attributes = attributes || jsonb_build_object('plan', CASE WHEN attributes->>'plan' = 'pro' THEN 'free' ELSE 'pro' END)
      WHERE id IN (SELECT 'c' || g FROM generate_series(2, 20000, 2) g WHERE g % 10 <> 0) RETURNING 1`,
  );
  const diff = await timed("diff recompute, attribute segment (8,000 contacts changed)", () =>
    recomputeSegment(WS, "attr", attribute),
  );
  console.log(
    `${"".padEnd(4)}added ${diff.value.added.toLocaleString()}, removed ${diff.value.removed.toLocaleString()}`,
  );
  figures.attributeDiff = diff.ms;
  const same = await timed("diff recompute, attribute segment (nothing changed)", () =>
    recomputeSegment(WS, "attr", attribute),
  );
  figures.attributeNoop = same.ms;

  // 2. Behavioural segment over all events.
  const behaviour: FilterGroup = {
    match: "all",
    conditions: [
      {
        event: "purchase",
        operator: "performed",
        count: { gte: 2 },
        within: { days: 30 },
        where: [{ field: "metadata.amount", operator: "gt", value: 100 }],
      },
    ],
  };
  await insertSegment("behaviour", behaviour);
  const beh = await recompute(
    "full recompute, behavioural segment (purchase ≥2 in 30 d, amount > 100)",
    "behaviour",
    behaviour,
  );
  console.log(`${"".padEnd(4)}members ${beh.value.memberCount.toLocaleString()}`);
  figures.behaviourFull = beh.ms;
  const mixed: FilterGroup = {
    match: "any",
    conditions: [
      { field: "tags", operator: "contains", value: "vip" },
      { event: "signup", operator: "not_performed", within: { days: 60 } },
    ],
  };
  await insertSegment("mixed", mixed);
  const mix = await recompute("full recompute, attribute OR not-performed (any-group)", "mixed", mixed);
  console.log(`${"".padEnd(4)}members ${mix.value.memberCount.toLocaleString()}`);
  figures.mixedFull = mix.ms;
  // The same-run reference of the other shapes: the attribute segment's full recompute.
  figures.behaviourRatio = beh.ms / built.ms;
  figures.mixedRatio = mix.ms / built.ms;
  figures.attributeFullCpu = built.cpu * 1000;
  figures.behaviourFullCpu = beh.cpu * 1000;
  figures.mixedFullCpu = mix.cpu * 1000;
  console.log(
    `${"".padEnd(4)}against the attribute segment's full recompute in this run: behavioural ${figures.behaviourRatio.toFixed(2)}×, any-group ${figures.mixedRatio.toFixed(2)}× (members ${(beh.value.memberCount / built.value.memberCount).toFixed(2)}× and ${(mix.value.memberCount / built.value.memberCount).toFixed(2)}× as many)`,
  );
  console.log(
    `${"".padEnd(4)}by database CPU: behavioural ${(beh.cpu / built.cpu).toFixed(2)}×, any-group ${(mix.cpu / built.cpu).toFixed(2)}×`,
  );

  // 3. One contact against 50 segments.
  await q(`DELETE FROM segments WHERE id LIKE 's50-%' RETURNING 1`);
  const plans = ["pro", "free", "team"];
  for (let i = 0; i < 50; i += 1) {
    let filter: FilterGroup;
    if (i % 5 === 0) {
      filter = {
        match: "all",
        conditions: [
          {
            event: i % 2 ? "purchase" : "page_view",
            operator: "performed",
            count: { gte: 1 + (i % 3) },
            within: { days: 30 + i },
          },
        ],
      };
    } else if (i % 5 === 1) {
      filter = {
        match: "all",
        conditions: [
          { field: "score", operator: "gte", value: i },
          { field: "consent.email", operator: "eq", value: "opted_in" },
        ],
      };
    } else if (i % 5 === 2) {
      filter = {
        match: "any",
        conditions: [
          { field: "tags", operator: "contains", value: "vip" },
          { field: "attributes.seats", operator: "between", value: [i % 10, 40] },
        ],
      };
    } else if (i % 5 === 3) {
      filter = {
        match: "all",
        conditions: [
          { field: "attributes.plan", operator: "eq", value: plans[i % 3] },
          { field: "country", operator: "in", value: ["DE", "FR"] },
          { field: "email", operator: "ends_with", value: "@example.test" },
        ],
      };
    } else {
      filter = {
        match: "all",
        conditions: [
          { field: "createdAt", operator: "within_last", value: { days: 30 + i } },
          { segment: `s50-${i - 1}`, operator: "not_in" },
        ],
      };
    }
    await insertSegment(`s50-${i}`, filter);
  }
  const [{ n: segCount }] = (await q(`SELECT count(*)::int AS n FROM segments WHERE workspace_id = $1`, [
    WS,
  ])) as Array<{ n: number }>;
  const sampleIds = Array.from({ length: SAMPLES + 50 }, (_, i) => `c${1 + ((i * 104729) % CONTACTS)}`);
  // Steady state for the sampled contacts: one evaluation writes their current memberships.
  await timed(`settle the ${sampleIds.length} sampled contacts (first evaluation, writes)`, async () => {
    for (const id of sampleIds) await evaluateContacts(WS, [id], { kind: "contact" });
  });
  const percentile = (xs: number[], x: number) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(x * xs.length))];
  // (a) a contact change that leaves memberships as they are (the common case): a read only.
  const readOnly: number[] = [];
  for (const [i, id] of sampleIds.entries()) {
    const t0 = process.hrtime.bigint();
    await evaluateContacts(WS, [id], { kind: "contact" });
    if (i >= 50) readOnly.push(ms(t0)); // the first 50 warm the pool and caches
  }
  // (b) a change that moves the contact in or out of segments (tag 'vip' toggled): evaluation + locked write.
  const writes: number[] = [];
  let moved = 0;
  for (const [i, id] of sampleIds.entries()) {
    await q(
      `UPDATE contacts SET tags = CASE WHEN 'vip' = ANY(tags) THEN '{}'::text[] ELSE '{vip}'::text[] END WHERE id = $1 RETURNING 1`,
      [id],
    );
    const t0 = process.hrtime.bigint();
    const r = await evaluateContacts(WS, [id], { kind: "contact" });
    if (i >= 50) writes.push(ms(t0));
    moved += r.entered.length + r.exited.length;
  }
  console.log(
    `${`one contact vs ${segCount} segments, no membership change (${SAMPLES})`.padEnd(72)} p50 ${fmt(percentile(readOnly, 0.5))}, p99 ${fmt(percentile(readOnly, 0.99))}`,
  );
  console.log(
    `${`one contact vs ${segCount} segments, memberships change (${SAMPLES})`.padEnd(72)} p50 ${fmt(percentile(writes, 0.5))}, p99 ${fmt(percentile(writes, 0.99))}`,
  );
  console.log(`${"".padEnd(4)}${moved.toLocaleString()} entries/exits written`);
  figures.oneContactP50 = percentile(readOnly, 0.5);
  figures.oneContactP99 = percentile(readOnly, 0.99);
  figures.oneContactChangedP50 = percentile(writes, 0.5);
  figures.oneContactChangedP99 = percentile(writes, 0.99);

  // 4. Preview count over every contact.
  const previewFilter: FilterGroup = {
    match: "all",
    conditions: [
      { field: "attributes.plan", operator: "in", value: ["pro", "team"] },
      { field: "score", operator: "gte", value: 50 },
    ],
  };
  await preview(WS, previewFilter); // warm
  const pv = await timed("preview count (plan in [pro,team] AND score ≥ 50)", () =>
    preview(WS, previewFilter),
  );
  console.log(`${"".padEnd(4)}count ${pv.value.count.toLocaleString()}`);
  figures.preview = pv.ms;
  const pv2 = await timed("preview count (email ends_with, any-group with tags)", () =>
    preview(WS, {
      match: "any",
      conditions: [
        { field: "email", operator: "ends_with", value: "7@example.test" },
        { field: "tags", operator: "contains", value: "vip" },
      ],
    }),
  );
  console.log(`${"".padEnd(4)}count ${pv2.value.count.toLocaleString()}`);
  figures.preview2 = pv2.ms;

  console.log("\nfigures (ms):", JSON.stringify(figures));
  console.log(
    [
      `targets: attribute full ≤ 2500 (${figures.attributeFull <= 2500 ? "ok" : "MISSED"})`,
      `diff ≤ 1200 (${figures.attributeDiff <= 1200 ? "ok" : "MISSED"})`,
      `behavioural ≤ 10000 (${figures.behaviourFull <= 10_000 ? "ok" : "MISSED"})`,
      `every shape ≤ 10000 and ≤ 2× attribute (${Math.max(figures.behaviourFull, figures.mixedFull) <= 10_000 && Math.max(figures.behaviourRatio, figures.mixedRatio) <= 2 ? "ok" : "MISSED"})`,
      `one contact p99 ≤ 5 (no change ${figures.oneContactP99 <= 5 ? "ok" : "MISSED"}, with writes ${figures.oneContactChangedP99 <= 5 ? "ok" : "MISSED"})`,
      `preview ≤ 1000 (${Math.max(figures.preview, figures.preview2) <= 1000 ? "ok" : "MISSED"})`,
    ].join(", "),
  );
  await probe.end();
  await releaseDatabase();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
