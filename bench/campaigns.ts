/**
 * Campaigns at 100,000 contacts, through the gateway and the `log` provider:
 *
 * 1. `POST .../batch {segmentId}`: a static segment of 100,000 contacts
 *    enrolled into an active workflow (one statement, as a job), timed from
 *    the request to the job's end. Target: under 10 s.
 * 2. `POST {ws}/campaigns/broadcast {segmentId}`: the same contacts, from
 *    the request until every message is sent (every check of the send path,
 *    `message.sent` staged for each), with RSS printed every second. Target:
 *    at least 3,000 messages/s with flat memory.
 *
 * (Events with 100 active campaigns with event triggers: `bench/events.ts`,
 * scenario `campaigns`.)
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx ts-node --transpile-only bench/campaigns.ts
 *
 * Env: BENCH_CONTACTS (100000), MESSAGE_BATCH (500), MESSAGE_WORKERS (2).
 */
import { QueryTypes } from "sequelize";
import { database } from "../lib/database";
import { bootApp, ownerSession } from "./events";

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

async function main() {
  const app = await bootApp(
    ["api", "auth", "workspaces", "contacts", "segments", "templates", "messages", "campaigns", "jobs"],
    {
      MESSAGE_BATCH: process.env.MESSAGE_BATCH ?? "500",
      MESSAGE_POLL_MS: "50",
      CAMPAIGN_POLL_MS: "200",
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    },
  );
  try {
    const { cookie, workspaceId } = await ownerSession(app.baseUrl);
    const ws = `${app.baseUrl}/api/workspaces/${workspaceId}`;
    const api = async <T = { id: string }>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${ws}${path}`, {
        method,
        headers: { "content-type": "application/json", cookie },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const job = async (jobId: string) => {
      for (;;) {
        const { data } = await api<{
          data: Array<{ status: string; result: unknown; error: string | null }>;
        }>("GET", `/jobs?id=${jobId}`);
        if (data[0] && data[0].status !== "running" && data[0].status !== "queued") return data[0];
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const sequelize = await database();
    await api("PATCH", "", { settings: { sender: { fromEmail: "news@acme.test" } } });
    await sequelize.query(
      `INSERT INTO contacts (id, workspace_id, email, first_name, consent, created_at, updated_at)
       SELECT 'c' || g, $1, 'user' || g || '@example.test', 'Name' || (g % 1000),
              '{"email":{"status":"opted_in"}}'::jsonb, now(), now()
         FROM generate_series(1, $2::int) AS g`,
      { bind: [workspaceId, CONTACTS] },
    );
    const segment = await api("POST", "/segments", { name: "Everyone", type: "static" });
    await sequelize.query(
      `INSERT INTO segment_members (segment_id, contact_id) SELECT $1, 'c' || g FROM generate_series(1, $2::int) AS g`,
      { bind: [segment.id, CONTACTS] },
    );
    await sequelize.query("ANALYZE contacts; ANALYZE segment_members");
    const template = await api("POST", "/templates", {
      name: "News",
      channel: "email",
      content: {
        subject: "News for {{ contact.firstName }}",
        html: '<p>Hi {{ contact.firstName }}, our <a href="https://example.com/news">news</a>.</p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
      },
    });
    console.log(
      `campaigns bench: ${CONTACTS} contacts in a segment; RSS after seeding ${mb(process.memoryUsage().rss)} MB`,
    );

    // 1. Enroll the segment into a journey that waits a day (the enrollments, not their steps, are timed).
    const journey = await api("POST", "/campaigns", {
      name: "Journey",
      workflow: {
        nodes: [
          { id: "entry", type: "entry", config: {} },
          { id: "w", type: "wait", config: { duration: "P1D" } },
        ],
        edges: [{ from: "entry", to: "w" }],
      },
    });
    await api("POST", `/campaigns/${journey.id}/execute`);
    let t0 = Date.now();
    const batch = await api<{ jobId: string }>("POST", `/campaigns/${journey.id}/batch`, {
      segmentId: segment.id,
    });
    const enrolled = await job(batch.jobId);
    console.log(
      JSON.stringify({
        step: "batch enroll from a segment",
        contacts: CONTACTS,
        result: enrolled.result,
        seconds: +((Date.now() - t0) / 1000).toFixed(2),
        target: "< 10 s",
      }),
    );
    await api("PATCH", `/campaigns/${journey.id}`, { status: "paused" });

    // 2. Broadcast to the segment, until every message is sent.
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(mb(process.memoryUsage().rss)), 1000);
    t0 = Date.now();
    const broadcast = await api<{ jobId: string; campaignId: string }>("POST", "/campaigns/broadcast", {
      name: "Broadcast",
      channel: "email",
      templateId: template.id,
      segmentId: segment.id,
    });
    const queuedJob = await job(broadcast.jobId);
    const queuedSeconds = (Date.now() - t0) / 1000;
    for (;;) {
      const [{ pending }] = await sequelize.query<{ pending: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM messages WHERE status IN ('queued', 'sending')) AS pending`,
        { type: QueryTypes.SELECT },
      );
      if (!pending) break;
      if (Date.now() - t0 > 900_000) throw new Error("stalled with messages left to send");
      await new Promise((r) => setTimeout(r, 100));
    }
    clearInterval(sampler);
    const seconds = (Date.now() - t0) / 1000;
    const [{ sent }] = await sequelize.query<{ sent: string }>(
      `SELECT count(*) AS sent FROM messages WHERE campaign_id = $1 AND status = 'sent'`,
      { bind: [broadcast.campaignId], type: QueryTypes.SELECT },
    );
    console.log(
      JSON.stringify({
        step: "broadcast to a segment through the log provider",
        contacts: CONTACTS,
        jobResult: queuedJob.result,
        queuedSeconds: +queuedSeconds.toFixed(1),
        sent: Number(sent),
        seconds: +seconds.toFixed(1),
        messagesPerSec: Math.round(Number(sent) / seconds),
        rssMbEachSecond: rss,
        target: ">= 3,000 messages/s, flat memory",
      }),
    );
  } finally {
    await app.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
