import { DateTime } from "luxon";
import { Client } from "pg";
import { table } from "table";
import { database } from "../../../lib/database";
import { freePort } from "../../../lib/embedded-postgres";
import {
  operatorCommands,
  queues,
  rebuildAnalytics,
  recomputeSegment,
  retryMessage,
  retryWebhook,
  usage,
} from "../../../lib/operator-commands";
import type { BackgroundState } from "../../../mixins/background";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * The operators' REPL commands (lib/operator-commands.ts) called as the REPL
 * calls them, with the real broker of every service on a real database, and
 * the business metrics (lib/business-metrics.ts) the same requests make.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let metricsPort: number;
/** What the fake SendGrid and the webhook endpoint answer now. */
const answers = { sendgrid: 202, hook: 200 };
const ZONE = "Pacific/Kiritimati"; // UTC+14: its day is rarely UTC's

const c = () => ctx.owner.client;

beforeAll(async () => {
  fake = await startReceiver((req) =>
    req.path.startsWith("/sendgrid")
      ? { status: answers.sendgrid, body: answers.sendgrid === 202 ? "" : '{"errors":[{"message":"bad"}]}' }
      : { status: answers.hook, body: "{}" },
  );
  metricsPort = await freePort();
  app = await startApp({
    env: {
      METRICS_PORT: String(metricsPort),
      MESSAGE_POLL_MS: "100",
      WEBHOOK_POLL_MS: "100",
      WEBHOOK_RETRY_DELAYS_MS: "100",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    },
  });
  // The due task reminder below stays due: crm's own minute timer is stopped (its first pass is a minute in).
  const crm = app.broker.getLocalService("crm") as unknown as BackgroundState;
  await Promise.all(crm.timerSteps.filter((p) => p.name === "crm.notifyDueTasks").map((p) => p.stop()));
  // Likewise the inbox's sweep, so the queued attachment removal below stays queued.
  const inbox = app.broker.getLocalService("inbox") as unknown as BackgroundState;
  await Promise.all(
    inbox.timerSteps.filter((p) => p.name === "inbox.sweepAttachmentRemovals").map((p) => p.stop()),
  );
  ctx = await ownerWithWorkspace(app.baseUrl);
  await c().patch(ctx.ws, { settings: { sender: { fromEmail: "news@acme.test" }, timezone: ZONE } });
}, 60_000);

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

async function newContact(email: string): Promise<string> {
  const res = await c().post(`${ctx.ws}/contacts`, { email });
  expect(res.status).toBe(201);
  return res.body.id;
}

const message = async (id: string) => (await c().get(`${ctx.ws}/messages/${id}`)).body;

/** The lines a command prints when the REPL runs it with `params`. */
async function run(name: string, params: Record<string, string>): Promise<string> {
  const out: string[] = [];
  const command = operatorCommands((text) => out.push(text)).find(
    (cmd) => cmd.command.split(" ")[0] === name,
  )!;
  await command.action(app.broker, params, { table: (rows) => table(rows) });
  return out.join("\n");
}

test("queues: every durable queue's depth and oldest due row, from its owner", async () => {
  // A send for later waits; a task reminder already due waits for crm (its timer stopped above).
  const contactId = await newContact("later@example.test");
  const later = await c().post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Later", html: "<p>later</p>" },
    sendAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  expect(later.status).toBe(202);
  const task = await c().post(`${ctx.ws}/tasks`, {
    title: "Call back",
    dueAt: new Date(Date.now() - 120_000).toISOString(),
    assigneeId: ctx.owner.id,
  });
  expect(task.status).toBe(201);
  // A file whose message went two minutes ago, as migration 0101's trigger queues it.
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO inbox_attachment_removals (workspace_id, storage, storage_key, queued_at)
       VALUES ($1, 'local', $1 || '/gone.pdf', now() - interval '120 seconds')`,
      [ctx.workspaceId],
    );
  } finally {
    await db.end();
  }

  const answer = await queues(app.broker);
  expect(answer.notDeployed).toEqual([]);
  expect(answer.queues.map((q) => q.queue).sort()).toEqual([
    "campaign_steps",
    "domain_event_outbox",
    "event_chain_retries",
    "inbound_queue",
    "inbox_attachment_removals",
    "jobs",
    "messages",
    "scheduled_campaigns",
    "score_decay",
    "segment_time_refresh",
    "task_reminders",
    "webhook_deliveries",
  ]);
  const byName = new Map(answer.queues.map((q) => [q.queue, q]));
  expect(byName.get("messages")!.waiting).toBeGreaterThanOrEqual(1);
  expect(byName.get("task_reminders")).toMatchObject({ due: 1, waiting: 0 });
  expect(byName.get("task_reminders")!.oldestDueSeconds).toBeGreaterThanOrEqual(119);
  expect(byName.get("inbox_attachment_removals")).toMatchObject({ due: 1, waiting: 0 });
  expect(byName.get("inbox_attachment_removals")!.oldestDueSeconds).toBeGreaterThanOrEqual(119);
  expect(byName.get("score_decay")).toEqual({
    queue: "score_decay",
    due: 0,
    waiting: 0,
    oldestDueSeconds: null,
  });

  const printed = await run("queues", {});
  expect(printed).toMatch(/task_reminders\s*│\s*1\s*│\s*0\s*│\s*1\d\d s/);
  expect(printed).toContain("webhook_deliveries");
  expect(printed).toMatch(/inbox_attachment_removals\s*│\s*1\s*│\s*0\s*│\s*1\d\d s/);
});

test("retry-message: a failed message goes back to the queue with its attempts reset, and sends", async () => {
  const provider = await c().post(`${ctx.ws}/providers/email`, {
    type: "emailapi1",
    config: { apiKey: "SG.key-1", baseUrl: fake.url("/sendgrid") },
  });
  expect(provider.status).toBe(201);
  answers.sendgrid = 400;
  const contactId = await newContact("ops@example.test");
  const created = await c().post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Hi", html: "<p>hi</p>" },
  });
  expect(created.status).toBe(202);
  const id = created.body.id as string;
  await waitFor(async () => (await message(id)).status === "failed", 10_000, "the send to fail");

  answers.sendgrid = 202;
  const requeued = await retryMessage(app.broker, ctx.workspaceId, id);
  expect(requeued).toMatchObject({ id, status: expect.stringMatching(/^(queued|sending|sent)$/) });
  const sent = await waitFor(async () => {
    const m = await message(id);
    return m.status === "sent" ? m : undefined;
  }, 10_000);
  expect(sent.history.map((h: { status: string; reason: string | null }) => [h.status, h.reason])).toEqual(
    expect.arrayContaining([
      ["failed", expect.any(String)],
      ["queued", "operator_retry"],
      ["sent", null],
    ]),
  );

  // Only a failed message is retried; another workspace's or an unknown id is not found.
  await expect(retryMessage(app.broker, ctx.workspaceId, id)).rejects.toMatchObject({
    code: 409,
    type: "INVALID_STATE",
  });
  await expect(retryMessage(app.broker, asWorkspaceId("another-workspace"), id)).rejects.toMatchObject({
    code: 404,
  });
  expect(await run("retry-message", { workspaceId: ctx.workspaceId, messageId: id })).toBe(
    "Failed (409 INVALID_STATE): Only a failed message can be retried; this one is sent",
  );
});

test("retry-webhook: a dead delivery is sent again now", async () => {
  answers.hook = 500;
  const hook = await c().post(`${ctx.ws}/webhooks`, {
    name: "ops",
    url: fake.url("/hook"),
    events: ["contact.created"],
  });
  expect(hook.status).toBe(201);
  await newContact("hooked@example.test");
  // One retry (WEBHOOK_RETRY_DELAYS_MS=100), then the delivery is dead.
  const dead = await waitFor(async () => {
    const [d] = (await c().get(`${ctx.ws}/webhooks/deliveries?endpointId=${hook.body.id}`)).body.data;
    return d && d.attempt === 2 && d.nextAttemptAt === null ? d : undefined;
  }, 10_000);
  expect(dead.success).toBe(false);

  answers.hook = 200;
  const retried = await retryWebhook(app.broker, ctx.workspaceId, dead.id);
  expect(retried).toMatchObject({ id: dead.id, attempt: 3, success: true, statusCode: 200 });
  expect(await run("retry-webhook", { workspaceId: ctx.workspaceId, deliveryId: dead.id })).toMatch(
    new RegExp(`${dead.id}\\s*│\\s*4\\s*│\\s*true\\s*│\\s*200`),
  );
});

test("recompute-segment: a dynamic segment's recompute runs as a job", async () => {
  await c().post(`${ctx.ws}/contacts`, { email: "pro@example.test", attributes: { plan: "pro" } });
  const segment = await c().post(`${ctx.ws}/segments`, {
    name: "Pro",
    filter: { match: "all", conditions: [{ field: "attributes.plan", operator: "eq", value: "pro" }] },
  });
  expect(segment.status).toBe(201);
  const { jobId } = await recomputeSegment(app.broker, ctx.workspaceId, segment.body.id);
  const job = await finishedJob(c(), ctx.ws, jobId);
  expect(job).toMatchObject({ status: "completed", result: { memberCount: 1 } });
  expect(
    await run("recompute-segment", { workspaceId: ctx.workspaceId, segmentId: segment.body.id }),
  ).toMatch(/^Recompute started: job \S+/);
  expect(await run("recompute-segment", { workspaceId: ctx.workspaceId, segmentId: "nope" })).toMatch(
    /^Failed \(404/,
  );
});

test("rebuild-analytics: the rollups rebuilt from the raw rows answer as before", async () => {
  await newContact("rebuilt@example.test");
  const overview = `${ctx.ws}/analytics?timezone=UTC`;
  const before = (await c().get(overview)).body;
  const rebuilt = await rebuildAnalytics(app.broker, ctx.workspaceId);
  expect(rebuilt.contacts).not.toBeNull();
  expect((await c().get(overview)).body).toEqual(before);
  expect(await run("rebuild-analytics", { workspaceId: ctx.workspaceId })).toMatch(
    /contacts\s*│\s*1900-01-01/,
  );
});

test("usage: contacts held, and today's events and messages in the workspace's zone", async () => {
  const before = await usage(app.broker, ctx.workspaceId);
  const contacts = (await c().get(`${ctx.ws}/contacts?limit=1`)).body.pagination.total;
  expect(before.contacts).toBe(contacts);
  // Sent today: the retried message; failed today: its first send.
  expect(before.messagesToday).toMatchObject({ sent: 1, failed: 1 });

  const contactId = await newContact("active@example.test");
  const dayStart = DateTime.now().setZone(ZONE).startOf("day");
  for (const at of [dayStart.minus({ minutes: 1 }), dayStart.plus({ minutes: 1 })])
    expect(
      (await c().post(`${ctx.ws}/events`, { contactId, type: "page_view", timestamp: at.toISO() })).status,
    ).toBe(201);
  const after = await usage(app.broker, ctx.workspaceId);
  expect(after.contacts).toBe(before.contacts + 1);
  // The one a minute before the zone's midnight was yesterday there.
  expect(after.eventsToday).toBe(before.eventsToday + 1);
  expect(await run("usage", { workspaceId: ctx.workspaceId })).toContain(String(after.contacts));
});

test("a person's open and click of a sent email move it to opened, then clicked", async () => {
  const contactId = await newContact("reader@example.test");
  const created = await c().post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Read me", html: '<p><a href="https://example.org/page">page</a></p>' },
  });
  expect(created.status).toBe(202);
  const id = created.body.id as string;
  const sent = await waitFor(async () => {
    const m = await message(id);
    return m.status === "sent" ? m : undefined;
  }, 10_000);
  // Sent a minute ago: an open this soon after the send would be a machine's.
  await (
    await database()
  ).query(`UPDATE messages SET sent_at = now() - interval '1 minute' WHERE id = $1`, {
    bind: [id],
  });
  const path = (re: RegExp) => (re.exec(sent.content.html) as RegExpExecArray)[1].replace(/&amp;/g, "&");
  const browser = { headers: { "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0" } };
  const pixel = path(/src="https?:\/\/[^/]+(\/api\/messages\/[^"]+)"/);
  // Two opens, one click: the status moves twice (opened, clicked), which is what the metrics count.
  for (let i = 0; i < 2; i++) expect((await c().get(pixel, browser)).status).toBe(200);
  expect(
    (await c().get(path(/href="https?:\/\/[^/]+(\/api\/messages\/[^"]+u=[^"]+)"/), browser)).status,
  ).toBe(302);
  expect(await message(id)).toMatchObject({ status: "clicked", opens: 2, clicks: 1 });
});

/** A sample's value in Prometheus text: the line of `name` whose labels include `labels` (besides namespace and nodeID). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text
    .split("\n")
    .find(
      (l) => l.startsWith(`${name}{`) && wanted.every((w) => l.slice(name.length).split("}")[0].includes(w)),
    );
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("the business metrics show each fact the requests above made", async () => {
  await queues(app.broker); // refreshes the gauges now rather than on the owners' 15-second timers
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const email = (status: string) => sample(text, "app_messages_total", { channel: "email", status });
  expect(sample(text, "app_events_ingested_total")).toBeGreaterThanOrEqual(2);
  expect(email("queued")).toBeGreaterThanOrEqual(2);
  // Sent: the retried message and the one read; opened and clicked once each (its second open moved nothing).
  expect(email("sent")).toBe(2);
  expect(email("failed")).toBe(1);
  expect(email("opened")).toBe(1);
  expect(email("clicked")).toBe(1);
  const emailapi1 = { provider_type: "emailapi1" };
  expect(sample(text, "app_provider_send_duration_count", emailapi1)).toBe(3);
  expect(sample(text, "app_provider_send_errors_total", { ...emailapi1, kind: "permanent" })).toBe(1);
  for (const outcome of ["retry", "dead", "delivered"])
    expect(sample(text, "app_webhook_deliveries_total", { outcome })).toBeGreaterThanOrEqual(1);
  expect(sample(text, "app_queue_depth", { queue: "task_reminders", state: "due" })).toBe(1);
  expect(sample(text, "app_queue_depth", { queue: "messages", state: "waiting" })).toBe(1);
  expect(sample(text, "app_queue_depth", { queue: "inbox_attachment_removals", state: "due" })).toBe(1);
  expect(
    sample(text, "app_queue_oldest_due_seconds", { queue: "inbox_attachment_removals" }),
  ).toBeGreaterThanOrEqual(119);
  expect(sample(text, "app_queue_oldest_due_seconds", { queue: "task_reminders" })).toBeGreaterThanOrEqual(
    119,
  );
  expect(
    sample(text, "app_queue_oldest_due_seconds", { queue: "domain_event_outbox" }),
  ).toBeGreaterThanOrEqual(0);
  expect(sample(text, "app_campaign_enrollments_live", { status: "active" })).toBe(0);
});
