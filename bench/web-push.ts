/**
 * Web push to 10,000 subscriptions through a local push service (HTTPS, its own process, a
 * self-signed certificate made by `openssl`), through our whole send path: a push template queued
 * for 10,000 contacts with `messages.enqueue` (as broadcasts queue them), each message rendered, its
 * contact's subscription read and its keys opened, the payload encrypted (RFC 8291 aes128gcm) and
 * signed (VAPID) by the vapid client, each outcome kept in push_deliveries and the message marked
 * sent. Beside it, in the same run, before and after: `web-push` alone sending the same
 * notification to the same service (encryption and a VAPID signature per push included, no
 * database), with as many in flight; the ratio is to the better of its two runs. Peak RSS is
 * sampled every 100 ms over the whole process (app and bench) while our path sends.
 * Targets: ratio ≥ 0.5, RSS < 300 MB.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/web-push.ts
 *
 * For the memory figure of a deployed process run it compiled, with a container's heap:
 *
 *   npx tsc -p tsconfig.json --outDir node_modules/.cache/bench && \
 *   DATABASE_URL=... node --max-old-space-size=160 node_modules/.cache/bench/bench/web-push.js
 *
 * Env: BENCH_SUBSCRIPTIONS (10000), BENCH_CONCURRENCY (50 sends in flight for web-push alone),
 * MESSAGE_BATCH (500), MESSAGE_WORKERS (2).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { QueryTypes } from "sequelize";
import webPush from "web-push";
import { SYSTEM } from "../lib/access";
import { database } from "../lib/database";
import { seal } from "../lib/secret-box";
import { bootApp, ownerSession } from "./events";

const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const CHUNK = 1000;

/** The push service: takes each push (its body read, not decrypted, as a real one) and answers 201. */
const PUSH_SERVICE = (key: string, cert: string) => `
const https = require("node:https");
const fs = require("node:fs");
let n = 0;
const server = https.createServer({ key: fs.readFileSync(${JSON.stringify(key)}), cert: fs.readFileSync(${JSON.stringify(cert)}) }, (req, res) => {
  req.resume();
  req.on("end", () => {
    n += 1;
    res.writeHead(201, { location: "https://127.0.0.1/m/" + n, "content-length": "0" });
    res.end();
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

function selfSigned(dir: string) {
  const key = path.join(dir, "key.pem");
  const cert = path.join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ...["-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
      ...["-addext", "subjectAltName=IP:127.0.0.1"],
    ],
    { stdio: "ignore" },
  );
  return { key, cert };
}

function pushService(key: string, cert: string): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ["-e", PUSH_SERVICE(key, cert)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout!.once("data", (chunk: Buffer) => resolve({ port: Number(chunk.toString().trim()), child }));
  });
}

function peakRss() {
  let rss = 0;
  const sample = () => (rss = Math.max(rss, process.memoryUsage().rss));
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return Math.round(rss / 1024 / 1024);
    },
  };
}

/** `n` calls of `one`, `concurrency` at once; answers the rate per second. */
async function rate(n: number, concurrency: number, one: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await one(next++);
    }),
  );
  return Math.round(n / (Number(process.hrtime.bigint() - t0) / 1e9));
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-web-push-"));
  const files = selfSigned(dir);
  const service = await pushService(files.key, files.cert);
  const origin = `https://127.0.0.1:${service.port}`;
  // One browser's keys for every subscription: each push is still encrypted on its own (a new ECDH pair per payload).
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.generateKeys();
  const keys = {
    p256dh: ecdh.getPublicKey().toString("base64url"),
    auth: crypto.randomBytes(16).toString("base64url"),
  };
  const app = await bootApp(
    ["api", "auth", "workspaces", "contacts", "templates", "messages", "providers", "push"],
    {
      MESSAGE_BATCH: process.env.MESSAGE_BATCH ?? "500",
      MESSAGE_POLL_MS: "50",
      PUSH_CA_FILE: files.cert,
    },
  );
  try {
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const ws = `${app.baseUrl}/api/workspaces/${workspaceId}`;
    const api = async (method: string, route: string, body: unknown) => {
      const res = await fetch(`${ws}${route}`, {
        method,
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string; config: Record<string, string> };
    };
    await api("POST", "/providers/push/generate", { subject: "mailto:bench@example.test" });
    const template = await api("POST", "/templates", {
      name: "Push",
      channel: "push",
      content: {
        title: "News for {{ contact.firstName }}",
        body: "Half price today, {{ contact.firstName }}",
        icon: "https://shop.example.test/icon.png",
      },
    });
    const sequelize = await database();
    await sequelize.query(
      `INSERT INTO contacts (id, workspace_id, email, first_name, consent, created_at, updated_at)
       SELECT 'c' || g, $1, 'user' || g || '@example.test', 'Name' || (g % 1000), '{}'::jsonb, now(), now()
         FROM generate_series(1, $2::int) AS g`,
      { bind: [workspaceId, SUBSCRIPTIONS] },
    );
    await sequelize.query(
      `INSERT INTO push_subscriptions (id, workspace_id, contact_id, type, endpoint, keys)
       SELECT 's' || g, $1, 'c' || g, 'web', $2 || '/push/' || g, $3 FROM generate_series(1, $4::int) AS g`,
      { bind: [workspaceId, origin, seal(JSON.stringify(keys)), SUBSCRIPTIONS] },
    );
    await sequelize.query("ANALYZE contacts; ANALYZE push_subscriptions");
    const contactIds = Array.from({ length: SUBSCRIPTIONS }, (_, i) => `c${i + 1}`);
    console.log(
      `web push bench: ${SUBSCRIPTIONS} subscriptions; RSS after boot and seeding ${Math.round(process.memoryUsage().rss / 1024 / 1024)} MB`,
    );

    // web-push alone: the same notification, the same push service, a keep-alive agent, no database.
    const agent = new https.Agent({
      keepAlive: true,
      maxSockets: CONCURRENCY,
      ca: fs.readFileSync(files.cert),
    });
    // The stored private key is never answered: the reference signs with a pair of its own, at the same cost.
    const vapidDetails = { subject: "mailto:bench@example.test", ...webPush.generateVAPIDKeys() };
    const payload = (i: number) =>
      JSON.stringify({
        messageId: `m${i}`,
        title: `News for Name${i % 1000}`,
        body: `Half price today, Name${i % 1000}`,
        url: null,
        icon: "https://shop.example.test/icon.png",
        image: null,
      });
    const alone = (i: number) =>
      webPush.sendNotification({ endpoint: `${origin}/push/${i + 1}`, keys }, payload(i), {
        vapidDetails,
        TTL: 86_400,
        contentEncoding: "aes128gcm",
        agent,
      });
    await rate(1000, CONCURRENCY, alone); // warm-up
    let cpu = process.cpuUsage();
    const aloneBefore = await rate(SUBSCRIPTIONS, CONCURRENCY, alone);
    const aloneCpu = process.cpuUsage(cpu);

    // Our send path.
    const meta = { meta: { principal: SYSTEM, workspaceId } };
    const memory = peakRss();
    cpu = process.cpuUsage();
    const t0 = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < contactIds.length) {
          const chunk = contactIds.slice(next, (next += CHUNK));
          await app.broker.call(
            "messages.enqueue",
            { channel: "push", templateId: template.id, contactIds: chunk },
            meta,
          );
        }
      }),
    );
    for (;;) {
      const [{ pending }] = await sequelize.query<{ pending: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM messages WHERE status IN ('queued', 'sending')) AS pending`,
        { type: QueryTypes.SELECT },
      );
      if (!pending) break;
      if (Date.now() - t0 > 600_000) throw new Error("stalled with messages left to send");
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (Date.now() - t0) / 1000;
    const ourCpu = process.cpuUsage(cpu);
    const peakRssMb = memory.stop();
    const [counts] = await sequelize.query<{ sent: string; accepted: string }>(
      `SELECT (SELECT count(*) FROM messages WHERE status = 'sent') AS sent,
              (SELECT count(*) FROM push_deliveries WHERE status = 'accepted') AS accepted`,
      { type: QueryTypes.SELECT },
    );
    const sendPathPerSec = Math.round(SUBSCRIPTIONS / seconds);
    // The reference again after: on a shared machine the better of its two runs is the one compared with.
    const aloneAfter = await rate(SUBSCRIPTIONS, CONCURRENCY, alone);
    agent.destroy();
    const webPushAlonePerSec = Math.max(aloneBefore, aloneAfter);
    console.log(
      JSON.stringify({
        subscriptions: SUBSCRIPTIONS,
        sent: Number(counts.sent),
        accepted: Number(counts.accepted),
        seconds: +seconds.toFixed(1),
        sendPathPerSec,
        webPushAlonePerSec,
        webPushAloneRuns: [aloneBefore, aloneAfter],
        ratio: +(sendPathPerSec / webPushAlonePerSec).toFixed(2),
        // CPU of this process per push (PostgreSQL's own not counted): steadier than rates on a shared machine.
        cpuMsPerPush: +((ourCpu.user + ourCpu.system) / 1000 / SUBSCRIPTIONS).toFixed(2),
        webPushAloneCpuMsPerPush: +((aloneCpu.user + aloneCpu.system) / 1000 / SUBSCRIPTIONS).toFixed(2),
        peakRssMb,
      }),
    );
  } finally {
    await app.stop();
    service.child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
