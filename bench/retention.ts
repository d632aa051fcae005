/**
 * Retention while ingesting (issue 32, Speed): N old events seeded, then
 * `POST {ws}/events` measured for a few seconds before the purge (the
 * same-run reference) and while `POST {ws}/data-retention` deletes them.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/retention.ts
 *
 * Env: BENCH_EVENTS (500000; 5000000 for the size), BENCH_SECONDS (5), BENCH_CONNECTIONS (50).
 * The events path alone (no segments, scoring or campaigns loaded), anonymous events, so what moves
 * the ingest figures is the purge. Without DATABASE_URL the embedded PostgreSQL is used.
 */
import { QueryTypes } from "sequelize";
import { database } from "../lib/database";
import { bootApp, CONNECTIONS, ownerSession, runLoad, SECONDS, type LoadResult } from "./events";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 500_000);
const SEED_CHUNK = 250_000;

async function main() {
  const app = await bootApp(["api", "auth", "workspaces", "jobs", "events", "retention"]);
  try {
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const ws = `${app.baseUrl}/api/workspaces/${workspaceId}`;
    const sequelize = await database();
    const seedStart = Date.now();
    // Old events 40-400 days back (the rollup triggers run as for any insert), in chunks of one statement each.
    for (let from = 0; from < EVENTS; from += SEED_CHUNK) {
      await sequelize.query(
        `INSERT INTO events (id, workspace_id, type, metadata, session_id, timestamp)
         SELECT 'old-' || g, $1, CASE WHEN g % 10 = 0 THEN 'purchase' ELSE 'page_view' END, '{}'::jsonb,
                's-' || (g % 1000), now() - interval '40 days' - (g % 360) * interval '1 day' - (g % 86400) * interval '1 second'
           FROM generate_series($2::int, $3::int) g`,
        { bind: [workspaceId, from + 1, Math.min(EVENTS, from + SEED_CHUNK)] },
      );
    }
    await sequelize.query(`VACUUM ANALYZE events`);
    console.log(
      `retention bench: ${EVENTS} old events seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s; ${CONNECTIONS} connections, ${SECONDS} s per window`,
    );

    const bodies = Array.from({ length: 100 }, (_, i) =>
      JSON.stringify({ type: "page_view", sessionId: `live-${i}`, pageUrl: "https://shop.example/" }),
    );
    const job = async (id: string): Promise<{ status: string; result: unknown }> => {
      const res = await fetch(`${ws}/jobs?id=${id}`, { headers: { cookie } });
      return ((await res.json()) as { data: Array<{ status: string; result: unknown }> }).data[0];
    };
    const ingest = () => runLoad({ url: `${ws}/events`, method: "POST", headers: { cookie }, bodies });

    // A first window warms the path (compiled code, prepared statements, the pool); only then the reference.
    const warmUp = await ingest();
    console.log(JSON.stringify({ window: "warm-up", ...warmUp }));
    const before = await ingest();
    console.log(JSON.stringify({ window: "before", ...before }));

    const started = await fetch(`${ws}/data-retention`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ events: 30 }),
    });
    if (started.status !== 202) throw new Error(`data-retention: ${started.status} ${await started.text()}`);
    const { jobId } = (await started.json()) as { jobId: string };
    const purgeStart = Date.now();
    const during = await ingest();
    const stillRunningAfterWindow = (await job(jobId)).status === "running";
    console.log(JSON.stringify({ window: "during", ...during, purgeStillRunning: stillRunningAfterWindow }));

    let finished = await job(jobId);
    while (finished.status === "running") {
      await new Promise((r) => setTimeout(r, 250));
      finished = await job(jobId);
    }
    const purgeSeconds = (Date.now() - purgeStart) / 1000;
    const deleted = (finished.result as { deleted?: { events: number } } | null)?.deleted?.events ?? 0;
    const left = Number(
      (
        await sequelize.query<{ n: string }>(
          `SELECT count(*) AS n FROM events WHERE workspace_id = $1 AND timestamp < now() - interval '30 days'`,
          { bind: [workspaceId], type: QueryTypes.SELECT },
        )
      )[0].n,
    );
    const ratio = (a: LoadResult, b: LoadResult, key: "rps" | "p50" | "p99") => +(a[key] / b[key]).toFixed(2);
    console.log(
      JSON.stringify({
        summary: "POST {ws}/events before and during a retention purge",
        before: { rps: before.rps, p50: before.p50, p99: before.p99 },
        during: { rps: during.rps, p50: during.p50, p99: during.p99 },
        duringOverBefore: {
          rps: ratio(during, before, "rps"),
          p50: ratio(during, before, "p50"),
          p99: ratio(during, before, "p99"),
        },
        purge: {
          status: finished.status,
          deleted,
          oldLeft: left,
          seconds: +purgeSeconds.toFixed(1),
          rowsPerSec: Math.round(deleted / purgeSeconds),
        },
        purgeCoveredWindow: stillRunningAfterWindow,
      }),
    );
  } finally {
    await app.stop();
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
