/**
 * The send path end to end through the `log` provider, with every check on (do-not-contact, consent,
 * topic, frequency cap, quiet hours): 100,000 messages to 100,000 contacts queued through
 * `messages.enqueue` (a thousand contacts per call, as broadcasts and journeys queue them), rendered
 * and sent by the send worker, `message.sent` staged for each. Peak RSS is sampled every 100 ms over the
 * whole process (app and bench). The same again with a template of 20 variables, a translation and an
 * A/B split; the bare rendering rate (compose() in a loop, no database) is printed beside each.
 *
 * Beside the plain run, in the same process, the peer a team would build instead: a BullMQ queue on the
 * local Redis (`BENCH_REDIS_URL`, else `REDIS_URL`, else redis://127.0.0.1:6379), the same 100,000
 * sends added with `addBulk` (1,000 a call, as many calls in flight as ours), taken by 100 concurrent
 * workers that render the same template with liquidjs and write it to the same log sink, with no check,
 * no tracking and no record; `ratio` is ours over the peer's. Without a Redis that answers, the peer is
 * skipped and the reason printed. Each run prints the statements and commits its `pg` clients sent per
 * message (every area runs in this process; the bench's own probes are not counted); BENCH_STATEMENTS=1
 * also prints the statements most sent. CPU is what a shared machine's wall time cannot show: each run
 * prints the milliseconds of CPU a message cost this process (`nodeCpuMs`, every thread) and the
 * PostgreSQL backends serving it (`pgCpuMs`), and the peer's this process and its Redis server
 * (`redisCpuMs`).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/messages.ts
 *
 * For the memory figure of a deployed process run it compiled, with the heap a container's limit gives
 * (on a 24 GB machine V8 lets garbage pile up to hundreds of MB before it collects):
 *
 *   npx tsc -p tsconfig.json --outDir node_modules/.cache/bench && \
 *   DATABASE_URL=... node --max-old-space-size=160 node_modules/.cache/bench/bench/messages.js
 *
 * Env: BENCH_MESSAGES (100000), BENCH_ENQUEUE_IN_FLIGHT (4 enqueue calls at once), MESSAGE_BATCH (500),
 * MESSAGE_WORKERS (2), BENCH_RICH (1; 0 leaves out the run with the rich template).
 */
import { Queue, Worker } from "bullmq";
import IORedis from "ioredis";
import { Liquid } from "liquidjs";
import type { LoggerInstance } from "moleculer";
import { Client } from "pg";
import { QueryTypes } from "sequelize";
import { SYSTEM } from "../lib/access";
import { database } from "../lib/database";
import { compose, renderableOf } from "../services/templates/compose";
import type { ResolvedTemplate } from "../services/templates/templates.schemas";
import { bootApp, ownerSession } from "./events";
import { ignoreClient, startCounting, stopCounting } from "./pg-statements";
import { backendPids, cpuSeconds } from "./process-cpu";

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const IN_FLIGHT = Number(process.env.BENCH_ENQUEUE_IN_FLIGHT ?? 4);
const CHUNK = 1000;
const RICH_RUN = process.env.BENCH_RICH !== "0";

/** Milliseconds of CPU this process (every thread) has used. */
const nodeCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** CPU milliseconds a phase cost per message. */
const perMessage = (ms: number) => +(ms / MESSAGES).toFixed(3);

/** CPU seconds the Redis server has used (its INFO), or null when it does not say. */
async function redisCpuSeconds(redis: IORedis): Promise<number | null> {
  const info = await redis.info("cpu");
  const user = Number(/^used_cpu_user:([\d.]+)/m.exec(info)?.[1]);
  const sys = Number(/^used_cpu_sys:([\d.]+)/m.exec(info)?.[1]);
  return Number.isFinite(user) && Number.isFinite(sys) ? user + sys : null;
}

const PLAIN = {
  name: "Plain",
  channel: "email",
  content: {
    subject: "News for {{ contact.firstName }}",
    html: '<html><head><style>p { color: #333; }</style></head><body><p>Hi {{ contact.firstName }},</p><p>Our <a href="https://example.com/news">news</a>.</p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p></body></html>',
  },
};

const VARIABLES = Array.from({ length: 20 }, (_, i) => `v${i}`);
const RICH = {
  name: "Rich",
  channel: "email",
  content: {
    subject: "{{ v0 }} for {{ contact.firstName }} {{ contact.lastName }}",
    html: `<html><head><style>td { padding: 4px; } .k { font-weight: bold; }</style></head><body><table>${VARIABLES.map(
      (v) => `<tr><td class="k">${v}</td><td>{{ ${v} | upcase }}</td></tr>`,
    ).join(
      "",
    )}</table><p><a href="https://example.com/offer?c={{ contact.id }}">Offer</a> <a href="https://example.com/shop">Shop</a></p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p></body></html>`,
  },
};

/** Peak RSS and V8 heap, sampled every 100 ms. */
function peakMemory() {
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
  let rss = 0;
  let heap = 0;
  const sample = () => {
    const now = process.memoryUsage();
    rss = Math.max(rss, now.rss);
    heap = Math.max(heap, now.heapUsed);
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakRssMb: mb(rss), peakHeapMb: mb(heap) };
    },
  };
}

const PEER_REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PEER_CONCURRENCY = 100;

/** A Redis for the peer, or why there is none (it must answer a PING within a second). */
async function peerRedis(): Promise<IORedis | string> {
  const redis = new IORedis(PEER_REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: null,
    retryStrategy: () => null,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (err) {
    redis.disconnect();
    return `no Redis at ${PEER_REDIS_URL} (${(err as Error).message || "unreachable"})`;
  }
}

/**
 * The peer: the same sends through a BullMQ queue, rendered with liquidjs and written to the log sink,
 * no check, tracking or record; from the first `addBulk` to the last job completed.
 */
async function bullmqPeer(redis: IORedis, logger: LoggerInstance) {
  const liquid = new Liquid();
  const subject = liquid.parse(PLAIN.content.subject);
  const html = liquid.parse(PLAIN.content.html);
  const name = `bench-send-${Date.now().toString(36)}`;
  // Connections BullMQ is given are the caller's to close.
  const connections = [redis.duplicate(), redis.duplicate()];
  const queue = new Queue(name, {
    connection: connections[0],
    defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000 },
  });
  let completed = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const memory = peakMemory();
  const redisCpu0 = await redisCpuSeconds(redis);
  const cpu0 = nodeCpuMs();
  const t0 = Date.now();
  const worker = new Worker(
    name,
    async (job) => {
      const scope = {
        contact: job.data.contact,
        unsubscribeUrl: `https://example.test/u/${job.data.contact.id}`,
      };
      const [renderedSubject, renderedHtml] = await Promise.all([
        liquid.render(subject, scope),
        liquid.render(html, scope),
      ]);
      logger.info(
        `[peer] email ${job.id} to ${job.data.to}: subject ${JSON.stringify(renderedSubject)}, ${renderedHtml.length} bytes`,
      );
      return null;
    },
    { connection: connections[1], concurrency: PEER_CONCURRENCY },
  );
  worker.on("completed", () => {
    if (++completed === MESSAGES) done();
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < MESSAGES) {
        const from = next;
        next += CHUNK;
        await queue.addBulk(
          Array.from({ length: Math.min(CHUNK, MESSAGES - from) }, (_, i) => {
            const g = from + i + 1;
            return {
              name: "send",
              data: {
                to: `user${g}@example.test`,
                contact: { id: `c${g}`, firstName: `Name${g % 1000}`, lastName: `Last${g % 97}` },
              },
            };
          }),
        );
      }
    }),
  );
  const enqueuedMs = Date.now() - t0;
  await finished;
  const seconds = (Date.now() - t0) / 1000;
  const nodeCpu = nodeCpuMs() - cpu0;
  const redisCpu1 = await redisCpuSeconds(redis);
  const peak = memory.stop();
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  for (const connection of connections) connection.disconnect();
  return {
    messages: MESSAGES,
    seconds: +seconds.toFixed(1),
    messagesPerSec: Math.round(MESSAGES / seconds),
    enqueuePerSec: Math.round(MESSAGES / (enqueuedMs / 1000)),
    nodeCpuMs: perMessage(nodeCpu),
    redisCpuMs: redisCpu0 === null || redisCpu1 === null ? null : perMessage((redisCpu1 - redisCpu0) * 1000),
    ...peak,
  };
}

async function main() {
  const app = await bootApp(["api", "auth", "workspaces", "contacts", "webhooks", "templates", "messages"], {
    MESSAGE_BATCH: process.env.MESSAGE_BATCH ?? "500",
    MESSAGE_POLL_MS: "50",
    // The log provider writes a line per message; the bench measures the send path, not the terminal.
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
  });
  try {
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const ws = `${app.baseUrl}/api/workspaces/${workspaceId}`;
    const api = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${ws}${path}`, {
        method,
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    const sequelize = await database();
    // The bench's own probe, on a connection of its own, is not counted among the send path's statements.
    const probe = new Client({ connectionString: process.env.DATABASE_URL });
    probe.on("error", () => undefined);
    await probe.connect();
    ignoreClient(probe);
    const [{ db }] = (await probe.query<{ db: string }>("SELECT current_database() AS db")).rows;
    /** CPU seconds of each backend serving the bench's database now. */
    const backendsCpu = async () =>
      new Map((await backendPids(probe, db)).map((pid) => [pid, cpuSeconds(pid)] as const));
    const meta = { meta: { principal: SYSTEM, workspaceId } };

    // Every check does real work: a cap that counts, quiet hours that never cover now, topics, a DNC list.
    const hour = (new Date().getUTCHours() + 12) % 24;
    await api("PATCH", "", {
      settings: {
        frequencyCap: { count: 50, periodHours: 24 },
        quietHours: {
          start: `${String(hour).padStart(2, "0")}:00`,
          end: `${String(hour).padStart(2, "0")}:30`,
        },
        topics: [{ key: "news", name: "News" }],
        defaultLocale: "en",
      },
    });
    await sequelize.query(
      `INSERT INTO contacts (id, workspace_id, email, first_name, last_name, locale, timezone, consent, attributes, created_at, updated_at)
       SELECT 'c' || g, $1, 'user' || g || '@example.test', 'Name' || (g % 1000), 'Last' || (g % 97),
              CASE WHEN g % 3 = 0 THEN 'de-DE' ELSE 'en' END,
              (ARRAY['UTC','Europe/Berlin','America/New_York','Asia/Tokyo'])[1 + g % 4],
              CASE WHEN g % 50 = 0 THEN '{"email":{"status":"opted_out"}}'::jsonb ELSE '{"email":{"status":"opted_in"}}'::jsonb END,
              CASE WHEN g % 40 = 0 THEN '{"topics":{"news":false}}'::jsonb ELSE '{}'::jsonb END,
              now(), now()
         FROM generate_series(1, $2::int) AS g`,
      { bind: [workspaceId, MESSAGES] },
    );
    await sequelize.query(
      `INSERT INTO dnc_entries (id, workspace_id, type, value, reason, created_at)
       SELECT gen_random_uuid()::text, $1, 'email', 'user' || g || '@example.test', 'manual', now()
         FROM generate_series(7, $2::int, 100) AS g`,
      { bind: [workspaceId, MESSAGES] },
    );
    await sequelize.query("ANALYZE contacts; ANALYZE dnc_entries");
    const contactIds = Array.from({ length: MESSAGES }, (_, i) => `c${i + 1}`);

    const plain = await api("POST", "/templates", PLAIN);
    const rich = await api("POST", "/templates", RICH);
    await api("POST", `/templates/${rich.id}/translations`, {
      locale: "de",
      content: { subject: "{{ v0 }} für {{ contact.firstName }} {{ contact.lastName }}" },
    });
    await api("PUT", `/templates/${rich.id}/ab`, {
      variants: [
        { id: "A", weight: 50, content: {} },
        { id: "B", weight: 50, content: { subject: "Last chance, {{ contact.firstName }}: {{ v1 }}" } },
      ],
      metric: "click",
    });
    const variables = Object.fromEntries(VARIABLES.map((v, i) => [v, `value number ${i}`]));

    async function bareRender(templateId: string, n: number) {
      const resolved = (await app.broker.call("templates.resolve", { templateId }, meta)) as ResolvedTemplate;
      const template = renderableOf(resolved);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++)
        await compose(template, {
          contact: { id: `c${i + 1}`, firstName: "Name", lastName: "Last", locale: i % 3 ? "en" : "de-DE" },
          defaultLocale: "en",
          workspace: { name: "Acme", slug: "acme" },
          variables,
          unsubscribeUrl: "https://example.test/u",
        });
      return Math.round(n / (Number(process.hrtime.bigint() - t0) / 1e9));
    }

    async function run(label: string, templateId: string) {
      await sequelize.query(
        "TRUNCATE messages, push_deliveries, short_links, short_link_clicks, domain_event_outbox",
      );
      const memory = peakMemory();
      const pgCpu0 = await backendsCpu();
      const cpu0 = nodeCpuMs();
      startCounting();
      const t0 = Date.now();
      let next = 0;
      let queued = 0;
      let suppressed = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < contactIds.length) {
            const chunk = contactIds.slice(next, (next += CHUNK));
            const result = (await app.broker.call(
              "messages.enqueue",
              { channel: "email", templateId, contactIds: chunk, topic: "news", variables },
              meta,
            )) as { queued: number; suppressed: number };
            queued += result.queued;
            suppressed += result.suppressed;
          }
        }),
      );
      const enqueuedMs = Date.now() - t0;
      for (;;) {
        // A probe of the due index, not a count: the bench must not take the database from the sender.
        const { rows } = await probe.query<{ pending: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM messages WHERE status IN ('queued', 'sending')) AS pending`,
        );
        if (!rows[0].pending) break;
        if (Date.now() - t0 > 900_000) throw new Error("stalled with messages left to send");
        await new Promise((r) => setTimeout(r, 100));
      }
      const seconds = (Date.now() - t0) / 1000;
      const nodeCpu = nodeCpuMs() - cpu0;
      // Backends that connected during the run started from nothing.
      let pgCpu = 0;
      for (const [pid, cpu] of await backendsCpu()) pgCpu += cpu - (pgCpu0.get(pid) ?? 0);
      const peak = memory.stop();
      const statements = stopCounting();
      const [counts] = await sequelize.query<{ sent: string }>(
        `SELECT count(*) AS sent FROM messages WHERE status = 'sent'`,
        { type: QueryTypes.SELECT },
      );
      const result = {
        template: label,
        messages: MESSAGES,
        queued,
        suppressed,
        sent: Number(counts.sent),
        seconds: +seconds.toFixed(1),
        messagesPerSec: Math.round(MESSAGES / seconds),
        enqueuePerSec: Math.round(MESSAGES / (enqueuedMs / 1000)),
        statementsPerMessage: +(statements.statements / MESSAGES).toFixed(4),
        commitsPerMessage: +(statements.commits / MESSAGES).toFixed(4),
        nodeCpuMs: perMessage(nodeCpu),
        pgCpuMs: perMessage(pgCpu * 1000),
        ...peak,
        bareRendersPerSec: await bareRender(templateId, 20_000),
      };
      console.log(JSON.stringify(result));
      if (process.env.BENCH_STATEMENTS)
        for (const [text, n] of [...statements.byText].sort((a, b) => b[1] - a[1]).slice(0, 30))
          console.log(`${(n / MESSAGES).toFixed(4).padStart(8)}  ${text}`);
      return result;
    }

    console.log(
      `messages bench: ${MESSAGES} contacts, enqueue ${CHUNK} per call, ${IN_FLIGHT} calls in flight; RSS after boot and seeding ${Math.round(process.memoryUsage().rss / 1024 / 1024)} MB`,
    );
    await bareRender(plain.id, 2000); // warm-up
    const ours = await run("plain", plain.id);
    const redis = await peerRedis();
    if (typeof redis === "string") console.log(JSON.stringify({ peer: "bullmq", skipped: redis }));
    else {
      try {
        const peer = await bullmqPeer(redis, app.broker.getLogger("peer"));
        console.log(
          JSON.stringify({
            peer: "bullmq (addBulk, 100 concurrent workers, liquidjs, log sink, no checks)",
            ...peer,
            ratio: +(ours.messagesPerSec / peer.messagesPerSec).toFixed(2),
          }),
        );
      } finally {
        redis.disconnect();
      }
    }
    if (RICH_RUN) await run("20 variables, translation, A/B", rich.id);
    await probe.end();
  } finally {
    await app.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
