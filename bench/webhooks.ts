/**
 * Outbound webhook dispatch: the dispatcher (claim with SKIP LOCKED, sign, POST through keep-alive agents,
 * grouped result writes) against a local receiver in another process, beside the bare ceiling measured in
 * the same run: signed POSTs from a plain keep-alive http.Agent loop to the same receiver.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/webhooks.ts
 *
 * Each round runs the ceiling, a dispatcher run with every endpoint healthy and one with a fifth failing;
 * "healthy kept" is the median over rounds of (healthy deliveries/s while a fifth fail) / (all healthy), so a
 * round's two runs share the machine's load of the moment. Statements per delivery: what the process's `pg` clients
 * sent during the healthy runs (claims, records, the dispatcher's other steps; the bench's own probe not counted),
 * per delivery; BENCH_STATEMENTS=1 also prints the statements most run.
 *
 * Env: BENCH_SECONDS (5, ceiling run), BENCH_ROUNDS (3), BENCH_DELIVERIES (15000 per dispatcher run),
 * BENCH_CONNECTIONS (50, also WEBHOOK_CONCURRENCY), BENCH_ENDPOINTS (10), BENCH_FAILURE (`status`: failing
 * endpoints answer 500 at once; `hang`: they never answer, so each attempt holds its slot until
 * WEBHOOK_TIMEOUT_MS). WEBHOOK_* settings of the dispatcher pass through.
 */
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import http from "node:http";
import { Client } from "pg";
import { database } from "../lib/database";
import { bootApp, CONNECTIONS, median, ownerSession, ROUNDS, SECONDS } from "./events";
import { ignoreClient, startCounting, stopCounting, type StatementCount } from "./pg-statements";

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 15000);
const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 10);
const FAILURE = process.env.BENCH_FAILURE === "hang" ? "hang" : "status";

/** Receiver process: `/ok/*` answers 200, `/fail/*` answers 500, `/hang/*` never answers. */
const RECEIVER_JS = `
const http = require("node:http");
http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    if (req.url.startsWith("/hang")) return;
    res.writeHead(req.url.startsWith("/fail") ? 500 : 200, { "content-type": "application/json" });
    res.end('{"ok":true}');
  });
}).listen(0, "127.0.0.1", function () { console.log(this.address().port); });
`;

function startReceiver(): Promise<{ port: number; child: ChildProcess }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-e", RECEIVER_JS]);
    child.stdout!.once("data", (d) => resolve({ port: Number(String(d).trim()), child }));
  });
}

/** The ceiling (performance.md C14): signed POSTs through a keep-alive agent, CONNECTIONS in flight. */
async function bareSignedPosts(port: number, seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const secret = "whsec_" + crypto.randomBytes(24).toString("hex");
  const lat: number[] = [];
  let ok = 0;
  const end = Date.now() + seconds * 1000;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < end) {
        const body = JSON.stringify({
          event: "contact.created",
          timestamp: new Date().toISOString(),
          data: { contactId: crypto.randomUUID(), email: "a@example.test", firstName: "A", lastName: "B" },
        });
        const ts = Math.floor(Date.now() / 1000);
        const headers = {
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "x-webhook-signature": crypto.createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex"),
          "x-webhook-timestamp": String(ts),
          "x-webhook-event": "contact.created",
          "x-webhook-delivery": crypto.randomUUID(),
          "x-webhook-attempt": "1",
        };
        const s = process.hrtime.bigint();
        const status = await new Promise<number>((resolve) => {
          const req = http.request(
            `http://127.0.0.1:${port}/ok/ceiling`,
            { method: "POST", agent, headers },
            (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            },
          );
          req.on("error", () => resolve(0));
          req.end(body);
        });
        lat.push(Number(process.hrtime.bigint() - s) / 1e6);
        if (status === 200) ok++;
      }
    }),
  );
  agent.destroy();
  lat.sort((a, b) => a - b);
  return {
    deliveriesPerSec: Math.round(ok / ((Date.now() - t0) / 1000)),
    p99ms: +lat[Math.floor(lat.length * 0.99)].toFixed(1),
  };
}

async function main() {
  const receiver = await startReceiver();
  const app = await bootApp(["api", "auth", "workspaces", "webhooks"], {
    WEBHOOK_CONCURRENCY: String(CONNECTIONS),
  });
  // The bench's own reads go through a client of their own, not counted with the dispatcher's statements.
  const probe = new Client({ connectionString: process.env.DATABASE_URL });
  try {
    await probe.connect();
    ignoreClient(probe);
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const sequelize = await database();
    const healthyStatements: StatementCount = { statements: 0, commits: 0, byText: new Map() };
    let healthyDeliveries = 0;
    const dispatcher = (app.broker.getLocalService("webhooks") as unknown as { dispatcher: { wake(): void } })
      .dispatcher;

    async function endpoints(failing: number): Promise<Array<{ id: string; healthy: boolean }>> {
      await sequelize.query(`DELETE FROM webhook_endpoints`);
      const out: Array<{ id: string; healthy: boolean }> = [];
      for (let i = 0; i < ENDPOINTS; i++) {
        const healthy = i >= failing;
        const res = await fetch(`${app.baseUrl}/api/workspaces/${workspaceId}/webhooks`, {
          method: "POST",
          headers: { "content-type": "application/json", cookie },
          body: JSON.stringify({
            url: `http://127.0.0.1:${receiver.port}/${healthy ? "ok" : FAILURE === "hang" ? "hang" : "fail"}/${i}`,
            events: ["*"],
          }),
        });
        out.push({ id: ((await res.json()) as { id: string }).id, healthy });
      }
      return out;
    }

    /** Queue N deliveries spread over the endpoints, make them due at once, time until the healthy ones are sent. */
    async function dispatchRun(failing: number) {
      const eps = await endpoints(failing);
      await sequelize.query(
        `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at)
         SELECT gen_random_uuid()::text, :ws, (CAST(:eps AS text[]))[1 + g % ${ENDPOINTS}], 'contact.created', 'OUTBOUND',
                json_build_object('event', 'contact.created', 'timestamp', now(), 'data',
                  json_build_object('contactId', md5(g::text), 'email', 'user' || g || '@example.test', 'firstName', 'A', 'lastName', 'B'))::text,
                now() + interval '1 day'
           FROM generate_series(1, :n) g`,
        { replacements: { ws: workspaceId, eps: `{${eps.map((e) => e.id).join(",")}}`, n: DELIVERIES } },
      );
      const healthyIds = eps.filter((e) => e.healthy).map((e) => e.id);
      if (failing === 0) startCounting();
      const t0 = Date.now();
      await probe.query(`UPDATE webhook_delivery_queue SET next_attempt_at = now()`);
      dispatcher.wake();
      let healthyDone = 0;
      let healthyTotal = 0;
      for (;;) {
        const {
          rows: [row],
        } = await probe.query<{ done: string; total: string }>(
          `SELECT count(*) FILTER (WHERE success) AS done, count(*) AS total FROM webhook_deliveries WHERE endpoint_id = ANY($1::text[])`,
          [healthyIds],
        );
        healthyDone = Number(row.done);
        healthyTotal = Number(row.total);
        if (healthyDone >= healthyTotal) break;
        if (Date.now() - t0 > 120_000) throw new Error(`stalled at ${healthyDone}/${healthyTotal}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const seconds = (Date.now() - t0) / 1000;
      let statementsPerDelivery: number | undefined;
      if (failing === 0) {
        const counted = stopCounting();
        healthyStatements.statements += counted.statements;
        healthyStatements.commits += counted.commits;
        for (const [text, n] of counted.byText)
          healthyStatements.byText.set(text, (healthyStatements.byText.get(text) ?? 0) + n);
        healthyDeliveries += healthyTotal;
        statementsPerDelivery = +(counted.statements / healthyTotal).toFixed(4);
      }
      const {
        rows: [lat],
      } = await probe.query<{ p50: number; p99: number; failing: string }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE success) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE success) AS p99,
                sum(attempt) FILTER (WHERE NOT (endpoint_id = ANY($1::text[]))) AS failing
           FROM webhook_deliveries`,
        [healthyIds],
      );
      // TRUNCATE waits for the dispatcher's writes still going (failing retries); a DELETE could deadlock with them.
      await probe.query(`TRUNCATE webhook_deliveries, webhook_delivery_queue`);
      return {
        healthyDelivered: healthyTotal,
        seconds: +seconds.toFixed(2),
        healthyPerSec: Math.round(healthyTotal / seconds),
        sendP50ms: Number(lat.p50),
        sendP99ms: Number(lat.p99),
        // Attempts recorded for failing endpoints by the time the healthy ones were done.
        failingAttempts: Number(lat.failing ?? 0),
        ...(statementsPerDelivery === undefined ? {} : { statementsPerDelivery }),
      };
    }

    console.log(
      `webhooks bench: ${DELIVERIES} deliveries per run over ${ENDPOINTS} endpoints, ${CONNECTIONS} in flight, failing: ${FAILURE}`,
    );
    // Warm-up (JIT, pool, agents), not reported.
    await bareSignedPosts(receiver.port, 1);
    await dispatchRun(0);
    const ceilings: Array<Awaited<ReturnType<typeof bareSignedPosts>>> = [];
    const healthyRuns: Array<Awaited<ReturnType<typeof dispatchRun>>> = [];
    const degradedRuns: Array<Awaited<ReturnType<typeof dispatchRun>>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const ceiling = await bareSignedPosts(receiver.port, SECONDS);
      const healthy = await dispatchRun(0);
      const degraded = await dispatchRun(Math.round(ENDPOINTS / 5));
      ceilings.push(ceiling);
      healthyRuns.push(healthy);
      degradedRuns.push(degraded);
      console.log(
        JSON.stringify({ round, ceiling, dispatcher: healthy, dispatcherWith20PercentFailing: degraded }),
      );
    }
    const h = median(healthyRuns.map((r) => r.healthyPerSec));
    const d = median(degradedRuns.map((r) => r.healthyPerSec));
    const kept = median(degradedRuns.map((r, i) => r.healthyPerSec / healthyRuns[i].healthyPerSec));
    const c = median(ceilings.map((r) => r.deliveriesPerSec));
    console.log(
      JSON.stringify({
        summary: "outbound dispatch to a local receiver",
        deliveriesPerSec: h,
        sendP99ms: median(healthyRuns.map((r) => r.sendP99ms)),
        bareSignedPostsPerSec: c,
        bareP99ms: median(ceilings.map((r) => r.p99ms)),
        ratioToBare: +median(
          healthyRuns.map((r, i) => r.healthyPerSec / ceilings[i].deliveriesPerSec),
        ).toFixed(3),
        healthyPerSecWhileFifthFail: d,
        healthyKept: +kept.toFixed(3),
        statementsPerDelivery: +(healthyStatements.statements / healthyDeliveries).toFixed(4),
        commitsPerDelivery: +(healthyStatements.commits / healthyDeliveries).toFixed(4),
        targets: "deliveries/s >= 2500, p99 <= 50 ms, healthy kept >= 0.8, ratio to bare >= 0.6",
      }),
    );
    if (process.env.BENCH_STATEMENTS)
      for (const [text, n] of [...healthyStatements.byText].sort((a, b) => b[1] - a[1]).slice(0, 20))
        console.log(`${(n / healthyDeliveries).toFixed(4)}  ${text}`);
  } finally {
    await probe.end();
    await app.stop();
    receiver.child.kill();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
