import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { database } from "../../../lib/database";
import { insertBroadcast } from "../../../services/campaigns/broadcasts.repo";
import { derivedMessageId } from "../../../services/campaigns/runner";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * Broadcasts through the gateway against real PostgreSQL: an audience from
 * a segment, a filter or a list, every check of the send path, the job's
 * result, `sendAt`, Idempotency-Key, clear 400s and 404s, and a send that
 * stopped resuming without queueing anyone twice.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let templateId: string;
let reachable: string;
let unsubscribed: string;
let noEmail: string;

beforeAll(async () => {
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "segments",
      "templates",
      "messages",
      "campaigns",
      "jobs",
    ],
    env: { MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  const c = ctx.owner.client;
  await c.patch(ctx.ws, { settings: { sender: { fromName: "Acme", fromEmail: "news@acme.test" } } });
  templateId = (
    await c.post(`${ctx.ws}/templates`, {
      name: "News",
      channel: "email",
      content: { subject: "News for {{ contact.firstName }}", html: "<p>Hi {{ contact.firstName }}</p>" },
    })
  ).body.id;
  reachable = (await c.post(`${ctx.ws}/contacts`, { email: "ada@bc.example.com", firstName: "Ada" })).body.id;
  unsubscribed = (await c.post(`${ctx.ws}/contacts`, { email: "bo@bc.example.com", firstName: "Bo" })).body
    .id;
  await c.put(`${ctx.ws}/contacts/${unsubscribed}/consent`, { channel: "email", status: "opted_out" });
  noEmail = (await c.post(`${ctx.ws}/contacts`, { phone: "+14155550123", firstName: "Cy" })).body.id;
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;
const messagesOf = async (campaignId: string) =>
  (await c().get(`${ctx.ws}/messages?campaignId=${campaignId}&limit=100`)).body.data as Array<
    Record<string, any>
  >;

test("a segment broadcast sends through every check of the send path; the job says what happened", async () => {
  const segment = await c().post(`${ctx.ws}/segments`, {
    name: "Everyone",
    type: "static",
    contactIds: [reachable, unsubscribed, noEmail],
  });
  const res = await c().post(`${ctx.ws}/campaigns/broadcast`, {
    name: "November news",
    channel: "email",
    templateId,
    segmentId: segment.body.id,
  });
  expect(res.status).toBe(202);
  const { jobId, campaignId } = res.body;
  const job = await finishedJob(c(), ctx.ws, jobId);
  expect(job).toMatchObject({
    status: "completed",
    type: "campaigns.broadcast",
    result: { queued: 1, suppressed: 1, skipped: 1 },
  });
  // Checking the template is a system call: the owner still started the job, not the system.
  const [started] = (await (
    await database()
  ).query(`SELECT created_by FROM jobs WHERE id = $1`, { bind: [jobId], type: QueryTypes.SELECT })) as Array<{
    created_by: string | null;
  }>;
  expect(started.created_by).toBe(ctx.owner.id);
  const messages = await messagesOf(campaignId);
  expect(messages.map((m) => [m.contactId, m.status === "suppressed" ? m.reason : "sent"]).sort()).toEqual(
    [
      [reachable, "sent"],
      [unsubscribed, "unsubscribed"],
    ].sort(),
  );
  expect(messages.find((m) => m.contactId === reachable)!.id).toBe(derivedMessageId(campaignId, reachable));
  expect((await c().get(`${ctx.ws}/campaigns/${campaignId}`)).body).toMatchObject({
    name: "November news",
    type: "broadcast",
    status: "completed",
  });
  // A broadcast has no workflow to run.
  expect((await c().post(`${ctx.ws}/campaigns/${campaignId}/execute`)).status).toBe(409);
});

test("a filter or a list of contacts is an audience too; sendAt holds the sends; Idempotency-Key replays", async () => {
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const body = {
    name: "Filtered",
    channel: "email",
    templateId,
    filter: {
      match: "all",
      conditions: [{ field: "email", operator: "ends_with", value: "@bc.example.com" }],
    },
    sendAt: later,
  };
  const first = await c().post(`${ctx.ws}/campaigns/broadcast`, body, {
    headers: { "idempotency-key": "bc-1" },
  });
  expect(first.status).toBe(202);
  const again = await c().post(`${ctx.ws}/campaigns/broadcast`, body, {
    headers: { "idempotency-key": "bc-1" },
  });
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  expect(again.body).toEqual(first.body);
  const job = await finishedJob(c(), ctx.ws, first.body.jobId);
  expect(job.result).toEqual({ queued: 1, suppressed: 1, skipped: 0 });
  const queued = (await messagesOf(first.body.campaignId)).find((m) => m.contactId === reachable)!;
  expect(queued).toMatchObject({ status: "queued", sendAt: later });

  const listed = await c().post(`${ctx.ws}/campaigns/broadcast`, {
    name: "Listed",
    channel: "email",
    templateId,
    contactIds: [reachable, "nobody"],
  });
  expect((await finishedJob(c(), ctx.ws, listed.body.jobId)).result).toEqual({
    queued: 1,
    suppressed: 0,
    skipped: 0,
  });
});

test("bad broadcasts get clear errors and start nothing", async () => {
  const base = { name: "Bad", channel: "email", templateId };
  const both = await c().post(`${ctx.ws}/campaigns/broadcast`, {
    ...base,
    segmentId: "s",
    contactIds: [reachable],
  });
  expect(both.status).toBe(400);
  expect(both.body.details[0].field).toBe("segmentId");
  expect((await c().post(`${ctx.ws}/campaigns/broadcast`, base)).status).toBe(400);
  const segment = await c().post(`${ctx.ws}/campaigns/broadcast`, { ...base, segmentId: "missing" });
  expect(segment.status).toBe(404);
  expect(segment.body.details[0].field).toBe("segmentId");
  const channel = await c().post(`${ctx.ws}/campaigns/broadcast`, {
    ...base,
    channel: "sms",
    contactIds: [reachable],
  });
  expect(channel.status).toBe(400);
  expect(channel.body.details[0]).toEqual({ field: "templateId", message: "is a email template, not sms" });
  const filter = await c().post(`${ctx.ws}/campaigns/broadcast`, {
    ...base,
    filter: { match: "all", conditions: [{ field: "shoeSize", operator: "eq", value: 1 }] },
  });
  expect(filter.status).toBe(400);
  expect(filter.body.details[0].field).toMatch(/^filter\.conditions\[0\]/);
  expect((await c().get(`${ctx.ws}/campaigns?type=broadcast&search=Bad`)).body.data).toEqual([]);
});

test("a broadcast whose send stopped sends on when the runner finds it, and queues nobody twice", async () => {
  const campaignId = "stalled-broadcast-1";
  await insertBroadcast(ctx.workspaceId, campaignId, "Stalled", {
    channel: "email",
    templateId,
    audience: { contactIds: [reachable, unsubscribed] },
    sendAt: null,
    variables: null,
    topic: null,
    transactional: false,
  });
  // The first run had queued Ada before its process stopped.
  await app.broker.call(
    "messages.enqueue",
    {
      channel: "email",
      templateId,
      contactIds: [reachable],
      messageIds: [derivedMessageId(campaignId, reachable)],
      campaignId,
    },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  // Its process stopped before the job began: the runner takes it up after a minute.
  await (
    await database()
  ).query(`UPDATE campaigns SET updated_at = now() - interval '2 minutes' WHERE id = $1`, {
    bind: [campaignId],
  });
  // The runner's own timer, or this tick, takes it up (whichever comes first; the other finds it taken).
  await app.broker.call("campaigns.processDue", {});
  const campaign = await waitFor(async () => {
    const got = (await c().get(`${ctx.ws}/campaigns/${campaignId}`)).body;
    return got.status === "completed" ? got : undefined;
  }, 10_000);
  expect(campaign.status).toBe("completed");
  const messages = await messagesOf(campaignId);
  expect(messages.map((m) => m.contactId).sort()).toEqual([reachable, unsubscribed].sort());
});
