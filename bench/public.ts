/**
 * The public web surface (issue 16), through the real gateway, beside a bare node:http ceiling measured in
 * the same run:
 * - `POST /api/forms/{formId}/submit` with the chain (a segment and a scoring rule read `form.submitted`, a
 *   campaign triggers on it): each submission a new visitor from its own address (the per-address limit is
 *   the contract's), creating its contact;
 * - `GET /api/script/config?key=` from the cache (focus items and forms configured), once the submissions' work
 *   after their answers (journey steps, relayed facts) has ended, so config is measured alone;
 * - `GET /api/script/stream` held open by BENCH_STREAMS clients in another process, pinged every second,
 *   with this process's RSS printed over time.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/public.ts
 *
 * Env: BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50), BENCH_SUBMIT_CONNECTIONS (200),
 * BENCH_STREAMS (1000), BENCH_HOLD_SECONDS (20), BENCH_PHASES (submit,config,streams: which to run).
 * Targets: submissions >= 1,000/s and >= 0.06 of bare node:http with p99 <= 100 ms; config >= 10,000 requests/s;
 * streams held with flat memory.
 */
import { spawn } from "node:child_process";
import { QueryTypes } from "sequelize";
import { database } from "../lib/database";
import { refreshStatistics } from "../lib/table-stats";
import {
  bootApp,
  CONNECTIONS,
  median,
  ownerSession,
  ROUNDS,
  runLoad,
  startBareServer,
  type LoadResult,
} from "./events";

const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
/**
 * Submissions come from visitors, each with its own connection, not from clients posting in a loop: at
 * 1,000 a second answered in 100–200 ms, 100–200 are in flight at once (Little's law).
 */
const SUBMIT_CONNECTIONS = Number(process.env.BENCH_SUBMIT_CONNECTIONS ?? 200);
const HOLD_SECONDS = Number(process.env.BENCH_HOLD_SECONDS ?? 20);
/** Which measures run: submit, config, streams (all by default). */
const PHASES = (process.env.BENCH_PHASES ?? "submit,config,streams").split(",");
const EMPTY: LoadResult = { rps: 0, p50: 0, p99: 0, ok: 0, failed: 0 };

type Json = Record<string, unknown>;

/** Stream clients in their own process: open `count` event streams, count `ready` and `ping` frames, report each second. */
const STREAMS_JS = `
const http = require("node:http");
const [url, count] = [process.env.STREAM_URL, Number(process.env.STREAM_COUNT)];
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let open = 0, ready = 0, pings = 0, failed = 0;
for (let i = 0; i < count; i++) {
  http.get(url, { agent }, (res) => {
    if (res.statusCode !== 200) { failed++; res.resume(); return; }
    open++;
    res.setEncoding("utf8");
    res.on("data", (text) => {
      ready += (text.match(/^event: ready$/gm) || []).length;
      pings += (text.match(/^event: ping$/gm) || []).length;
    });
    res.on("end", () => open--);
  }).on("error", () => failed++);
}
setInterval(() => console.log(JSON.stringify({ open, ready, pings, failed })), 1000);
`;

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

async function holdStreams(url: string) {
  const child = spawn(process.execPath, ["-e", STREAMS_JS], {
    env: { ...process.env, STREAM_URL: url, STREAM_COUNT: String(STREAMS) },
  });
  let last: Json = {};
  child.stdout.on("data", (chunk) => {
    const lines = String(chunk).trim().split("\n");
    last = JSON.parse(lines[lines.length - 1]);
  });
  global.gc?.();
  const before = process.memoryUsage().rss;
  const samples: number[] = [];
  for (let s = 1; s <= HOLD_SECONDS; s++) {
    await new Promise((r) => setTimeout(r, 1000));
    const rss = process.memoryUsage().rss;
    samples.push(mb(rss));
    console.log(JSON.stringify({ second: s, serverRssMb: mb(rss), clients: last }));
  }
  child.kill();
  const settled = samples.slice(Math.floor(samples.length / 2));
  return {
    streams: STREAMS,
    open: last.open,
    rssBeforeMb: mb(before),
    rssHeldMb: samples[samples.length - 1],
    secondHalfDriftMb: Math.max(...settled) - Math.min(...settled),
    pingsReceived: last.pings,
  };
}

/** Wait until no domain fact waits for its relay and no journey step is due; answers how long that took. */
async function settle(): Promise<number> {
  const t0 = Date.now();
  const sequelize = await database();
  // The grown tables are analyzed now rather than by the keeper's next turn, in the middle of the config phase.
  await refreshStatistics(sequelize);
  for (;;) {
    // Facts still to relay, journey steps due, and the database's own upkeep after the burst (autovacuum).
    const [{ busy }] = await sequelize.query<{ busy: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM domain_event_outbox) OR EXISTS (SELECT 1 FROM campaign_enrollments WHERE run_at <= now())
              OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
                           AND backend_type = 'autovacuum worker') AS busy`,
      { type: QueryTypes.SELECT },
    );
    if (!busy || Date.now() - t0 > 60_000) return Date.now() - t0;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main() {
  const app = await bootApp(
    [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "segments",
      "scoring",
      "campaigns",
      "forms",
      "content",
    ],
    { SCRIPT_HEARTBEAT_MS: "1000" },
  );
  const bare = await startBareServer();
  try {
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const api = async (method: string, route: string, body?: Json) => {
      const res = await fetch(`${app.baseUrl}/api/workspaces/${workspaceId}${route}`, {
        method,
        headers: { "content-type": "application/json", cookie },
        body: body && JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
      return (await res.json()) as Json;
    };
    const form = await api("POST", "/forms", {
      name: "Newsletter",
      fields: [
        { key: "email", label: "Email", type: "email", required: true, mapTo: "email" },
        { key: "name", label: "Name", type: "text", mapTo: "firstName" },
      ],
    });
    await api("POST", "/segments", {
      name: "Subscribers",
      type: "dynamic",
      filter: {
        match: "all",
        conditions: [{ event: "form.submitted", operator: "performed", within: { days: 30 } }],
      },
    });
    await api("POST", "/scoring-rules", { name: "Signed up", eventType: "form.submitted", points: 10 });
    const campaign = await api("POST", "/campaigns", {
      name: "Welcome",
      workflow: {
        nodes: [
          { id: "entry", type: "entry", config: {} },
          { id: "w", type: "wait", config: { duration: "P1D" } },
        ],
        edges: [{ from: "entry", to: "w" }],
      },
    });
    await api("POST", `/campaigns/${campaign.id}/triggers`, {
      type: "form_submitted",
      config: { formId: form.id },
    });
    await api("POST", `/campaigns/${campaign.id}/execute`, {});
    for (const type of ["bar", "modal", "slide_in"])
      await api("POST", "/focus-items", {
        name: `Offer ${type}`,
        type,
        content: "<p>10% off</p>",
        formId: form.id,
        trigger: { on: "delay", value: 5 },
      });
    await api("POST", "/dynamic-content", {
      name: "Hero",
      slot: "hero",
      defaultContent: "<h1>Welcome</h1>",
      variants: [],
    });
    const siteKey = (await api("GET", "")).siteKey as string;

    // A new visitor per submission, each from its own address: 20,000 addresses, none over the limit of 10 a minute.
    const visitors = 20_000;
    const bodies = Array.from({ length: visitors }, (_, i) =>
      JSON.stringify({ email: `visitor-${Date.now()}-${i}@example.test`, name: "Visitor" }),
    );
    const headerSets = Array.from({ length: visitors }, (_, i) => ({
      "x-forwarded-for": `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    }));
    console.log(
      `public surface bench: ${CONNECTIONS} connections (submissions: ${SUBMIT_CONNECTIONS}), ${ROUNDS} rounds; chain: segment, scoring rule, campaign trigger on form.submitted`,
    );

    const rounds: Array<{ bare: LoadResult; submit: LoadResult; config: LoadResult }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const b = await runLoad({ url: bare.url });
      const submit = !PHASES.includes("submit")
        ? EMPTY
        : await runLoad({
            url: `${app.baseUrl}/api/forms/${form.id}/submit`,
            method: "POST",
            connections: SUBMIT_CONNECTIONS,
            // New addresses and emails each round: every submission is a new visitor.
            bodies: bodies.map((body) => body.replace("@", `-${round}@`)),
            headerSets: headerSets.map((h) => ({
              "x-forwarded-for": h["x-forwarded-for"].replace(/^10\./, `${10 + round}.`),
            })),
          });
      // The submissions' work after their answers (journeys' steps, facts relayed) ends before config is measured alone.
      const settledMs = PHASES.includes("submit") ? await settle() : 0;
      const config = PHASES.includes("config")
        ? await runLoad({ url: `${app.baseUrl}/api/script/config?key=${siteKey}` })
        : EMPTY;
      rounds.push({ bare: b, submit, config });
      console.log(JSON.stringify({ round, bare: b, submit, settledMs, config }));
    }
    const streams =
      PHASES.includes("streams") &&
      (await holdStreams(`${app.baseUrl}/api/script/stream?key=${siteKey}&slots=hero`));
    console.log(
      JSON.stringify({
        summary: "public surface",
        submissionsPerSec: median(rounds.map((r) => r.submit.rps)),
        submitP99ms: median(rounds.map((r) => r.submit.p99)),
        submitFailed: rounds.reduce((n, r) => n + r.submit.failed, 0),
        // Each round's rate over the bare node:http rate of the same round (issue 34: >= 0.06).
        submitRatioToBare: +median(rounds.map((r) => r.submit.rps / r.bare.rps)).toFixed(3),
        cpuMsPerSubmission: median(rounds.map((r) => r.submit.cpuMs ?? 0)),
        cpuMsPerBareRequest: median(rounds.map((r) => r.bare.cpuMs ?? 0)),
        configPerSec: median(rounds.map((r) => r.config.rps)),
        configP99ms: median(rounds.map((r) => r.config.p99)),
        bareNodeHttpReqPerSec: median(rounds.map((r) => r.bare.rps)),
        streams,
        targets:
          "submissions >= 1000/s and >= 0.06 of bare with p99 <= 100 ms, config >= 10000/s, 1000 streams with flat memory",
      }),
    );
  } finally {
    await bare.close();
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
