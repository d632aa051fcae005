/**
 * Contacts bench: import 100,000 contacts from CSV (target < 20 s, < 300 MB
 * peak RSS of the whole process, server included), then the contacts list
 * with search over them (target p99 < 50 ms through the gateway).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/contacts-import.ts [rows]
 *
 * ts-node keeps the TypeScript compiler resident (~100 MB); for the memory
 * figure of a deployed process run the compiled bench:
 *
 *   npx tsc -p tsconfig.json --outDir node_modules/.cache/bench && \
 *   DATABASE_URL=... node node_modules/.cache/bench/bench/contacts-import.js
 */
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { ServiceBroker, type ServiceSchema } from "moleculer";
import { Client } from "pg";
import { resetConfig } from "../lib/config";
import { randomHex } from "../lib/crypto";
import { ownerWithWorkspace } from "../test/helpers/http";
import { runNamespace } from "./events";

/** The services the bench needs in one broker, as `npm start` would run them (loaded after the env is set). */
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
    "jobs/jobs",
    "contacts/contacts",
    "contacts/stages",
    "contacts/custom-fields",
  ]) {
    broker.createService((require(`../services/${file}.service`) as { default: ServiceSchema }).default);
  }
  await broker.start();
  // moleculer-web's service members are untyped: the few this bench reads.
  const api = broker.getLocalService("api") as ServiceBroker["services"][number] & {
    server: { address(): AddressInfo };
    routes: Array<{ opts: { autoAliases?: boolean } }>;
    regenerateAutoAliases(route: unknown): void;
  };
  for (const route of api.routes) if (route.opts.autoAliases) api.regenerateAutoAliases(route);
  return { broker, baseUrl: `http://127.0.0.1:${api.server.address().port}` };
}

const ROWS = Number(process.argv[2] ?? 100_000);
const FIRST = [
  "Ada",
  "Grace",
  "Alan",
  "Linus",
  "Margaret",
  "Ken",
  "Barbara",
  "Dennis",
  "Frances",
  "Edsger",
  "Radia",
  "Tim",
];
const LAST = [
  "Lovelace",
  "Hopper",
  "Turing",
  "Torvalds",
  "Hamilton",
  "Thompson",
  "Liskov",
  "Ritchie",
  "Allen",
  "Dijkstra",
  "Perlman",
  "Lee",
];
const CITIES = [
  ["FR", "Paris"],
  ["DE", "Berlin"],
  ["US", "Austin"],
  ["GB", "London"],
  ["JP", "Tokyo"],
];

async function writeCsv(file: string): Promise<void> {
  const out = createWriteStream(file);
  out.write("email,firstName,lastName,phone,country,city,tags,attributes.plan,attributes.seats\n");
  for (let i = 0; i < ROWS; i++) {
    const [country, city] = CITIES[i % CITIES.length];
    const phone = `+1415555${String(i % 10_000).padStart(4, "0")}`;
    const line = `user${i}@bench${i % 97}.example.com,${FIRST[i % FIRST.length]},${LAST[(i * 7) % LAST.length]}${i},${phone},${country},${city},t${i % 10};all,${i % 3 ? "pro" : "free"},${i % 50}\n`;
    if (!out.write(line)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main() {
  const base = process.env.DATABASE_URL;
  if (!base)
    throw new Error("Set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped)");
  const name = `cms_bench_${randomHex(4)}`;
  const admin = new Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(base);
  url.pathname = `/${name}`;

  const dir = await mkdtemp(path.join(os.tmpdir(), "contacts-bench-"));
  const csv = path.join(dir, "contacts.csv");
  await writeCsv(csv);
  const size = (await stat(csv)).size;

  const app = await startServices(url.toString());
  try {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const key = (
      await owner.client.post(`${ws}/keys`, { name: "bench", scopes: ["contacts.read", "contacts.write"] })
    ).body.key as string;
    const auth = { authorization: `Bearer ${key}` };

    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 25);
    const started = Date.now();
    const res = await fetch(`${app.baseUrl}${ws}/contacts/import`, {
      method: "POST",
      headers: { ...auth, "content-type": "text/csv" },
      body: Readable.toWeb(createReadStream(csv)) as ReadableStream,
      duplex: "half",
    } as RequestInit);
    if (res.status !== 202) throw new Error(`import answered ${res.status}: ${await res.text()}`);
    const { jobId } = (await res.json()) as { jobId: string };
    let job:
      { status: string; result: { created: number; updated: number; failedCount: number } } | undefined;
    for (;;) {
      const list = (await (
        await fetch(`${app.baseUrl}${ws}/jobs?id=${jobId}`, { headers: auth })
      ).json()) as { data: Array<typeof job> };
      job = list.data[0];
      if (job && job.status !== "running") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const importMs = Date.now() - started;
    clearInterval(sampler);
    if (job?.status !== "completed") throw new Error(`import job ended ${JSON.stringify(job)}`);

    const queries = [
      "user1234",
      "lovelace",
      "hopper42",
      "bench5",
      "5550042",
      "grace",
      "ritchie999",
      "zz-nothing",
      "user99999",
      "tur",
    ];
    const times: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const q of queries) {
        for (const page of [1, 2]) {
          const t0 = process.hrtime.bigint();
          const r = await fetch(
            `${app.baseUrl}${ws}/contacts?search=${encodeURIComponent(q)}&limit=50&page=${page}`,
            { headers: auth },
          );
          await r.json();
          if (round > 0) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (r.status !== 200) throw new Error(`list answered ${r.status}`);
        }
      }
    }
    const plain: number[] = [];
    for (let i = 0; i < 40; i++) {
      const t0 = process.hrtime.bigint();
      await (
        await fetch(`${app.baseUrl}${ws}/contacts?limit=50&page=${1 + (i % 5)}`, { headers: auth })
      ).json();
      plain.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    plain.sort((a, b) => a - b);

    console.log(`contacts import: ${ROWS} rows (${(size / 1024 / 1024).toFixed(1)} MiB CSV)`);
    console.log(
      `  time            ${(importMs / 1000).toFixed(2)} s (target < 20 s)  created=${job.result.created} failed=${job.result.failedCount}`,
    );
    console.log(
      `  peak RSS        ${(peak / 1024 / 1024).toFixed(0)} MB (whole process: gateway + services + bench; ${(baseline / 1024 / 1024).toFixed(0)} MB before the upload; target < 300 MB)`,
    );
    console.log(
      `list with search over ${ROWS} contacts (${times.length} requests through the gateway, API key):`,
    );
    console.log(
      `  p50 ${percentile(times, 50).toFixed(1)} ms  p95 ${percentile(times, 95).toFixed(1)} ms  p99 ${percentile(times, 99).toFixed(1)} ms (target p99 < 50 ms)`,
    );
    console.log(
      `list without search: p50 ${percentile(plain, 50).toFixed(1)} ms  p99 ${percentile(plain, 99).toFixed(1)} ms`,
    );
  } finally {
    await app.broker.stop();
    await rm(dir, { recursive: true, force: true });
    if (process.env.BENCH_KEEP_DB) console.log(`kept database ${name}`);
    else await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
