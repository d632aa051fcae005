import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { systemCall } from "../../../lib/system-call";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace, signUp } from "../../helpers/http";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * Every analytics route through the gateway on a hand-seeded workspace in
 * Europe/Berlin (the spring-forward Sunday, 2026-03-29, inside the range) and
 * the same facts read in Asia/Kolkata (UTC+05:30). Expectations are worked out
 * by hand from the times below.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let other: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let client: HttpClient;

const sql = async (text: string, bind: unknown[] = []) => (await database()).query(text, { bind });

async function event(ws: string, type: string, timestamp: string, extra: Record<string, unknown> = {}) {
  await systemCall(app.broker, asWorkspaceId(ws), "events.record", { type, timestamp, ...extra });
}

/** A message as the send path leaves it; its counts come from the insert (a row counts from nothing). */
async function message(
  ws: string,
  m: {
    channel: string;
    to: string;
    status: string;
    reason?: string;
    campaignId?: string;
    sentAt?: string;
    deliveredAt?: string;
    openedAt?: string;
    clickedAt?: string;
    history: Array<[string, string]>;
  },
) {
  const id = newId();
  await sql(
    `INSERT INTO messages (id, workspace_id, channel, status, reason, to_address, campaign_id, sent_at, delivered_at,
                           opened_at, clicked_at, history)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      id,
      ws,
      m.channel,
      m.status,
      m.reason ?? null,
      m.to,
      m.campaignId ?? null,
      m.sentAt ?? null,
      m.deliveredAt ?? null,
      m.openedAt ?? null,
      m.clickedAt ?? null,
      JSON.stringify(m.history.map(([status, at]) => ({ status, at, reason: null }))),
    ],
  );
  return id;
}

const EMPTY = {
  sent: 0,
  delivered: 0,
  opened: 0,
  clicked: 0,
  bounced: 0,
  complained: 0,
  unsubscribed: 0,
  failed: 0,
  suppressed: 0,
};

let clickedId: string;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "events", "campaigns", "analytics"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
  other = await ownerWithWorkspace(app.baseUrl);
  client = ctx.owner.client;
  expect((await client.patch(ctx.ws, { settings: { timezone: "Europe/Berlin" } })).status).toBe(200);
  const ws = ctx.workspaceId;

  // Events. Berlin days: 28 Mar = [27T23:00Z, 28T23:00Z), 29 Mar = [28T23:00Z, 29T22:00Z) (23 h), 30 Mar = [29T22:00Z, 30T22:00Z).
  await event(ws, "page_view", "2026-03-27T22:59:00Z"); // 27 Mar 23:59 Berlin: outside
  await event(ws, "purchase", "2026-03-28T22:30:00Z", {
    metadata: { amount: 10, campaignId: "c1" },
    utmSource: "news",
  }); // 28 Mar 23:30
  await event(ws, "purchase", "2026-03-28T23:10:00Z", { metadata: { amount: "5.5" } }); // 29 Mar 00:10
  await event(ws, "page_view", "2026-03-29T21:30:00Z"); // 29 Mar 23:30 CEST
  await event(ws, "page_view", "2026-03-29T22:15:00Z"); // 30 Mar 00:15
  await event(ws, "message.open", "2026-03-30T10:00:00Z", {
    metadata: { channel: "email", campaignId: "c1" },
  });
  // Another workspace's facts never show.
  await event(other.workspaceId, "purchase", "2026-03-29T10:00:00Z", { metadata: { amount: 1000 } });

  clickedId = await message(ws, {
    channel: "email",
    to: "a@Gmail.com",
    status: "clicked",
    campaignId: "c1",
    sentAt: "2026-03-28T10:00:00Z",
    deliveredAt: "2026-03-28T10:05:00Z",
    openedAt: "2026-03-28T11:00:00Z",
    clickedAt: "2026-03-28T11:01:00Z",
    history: [
      ["sent", "2026-03-28T10:00:00.000Z"],
      ["delivered", "2026-03-28T10:05:00.000Z"],
      ["opened", "2026-03-28T11:00:00.000Z"],
      ["clicked", "2026-03-28T11:01:00.000Z"],
    ],
  });
  await message(ws, {
    channel: "email",
    to: "b@yahoo.com",
    status: "bounced",
    reason: "hard_bounce",
    sentAt: "2026-03-29T09:00:00Z",
    history: [
      ["sent", "2026-03-29T09:00:00.000Z"],
      ["bounced", "2026-03-29T09:01:00.000Z"],
    ],
  });
  await message(ws, {
    channel: "sms",
    to: "+15550001",
    status: "suppressed",
    reason: "dnc",
    history: [["suppressed", "2026-03-30T08:00:00.000Z"]],
  });
  const failing = await message(ws, {
    channel: "email",
    to: "c@gmail.com",
    status: "sending",
    history: [["sending", "2026-03-30T12:00:00.000Z"]],
  });
  // A status reached by an update counts at its history time.
  await sql(
    `UPDATE messages SET status = 'failed', history = history || '[{"status": "failed", "at": "2026-03-30T12:00:01.000Z", "reason": null}]'
      WHERE id = $1`,
    [failing],
  );
  await message(ws, {
    channel: "email",
    to: "d@gmail.com",
    status: "sent",
    sentAt: "2026-04-02T10:00:00Z",
    history: [["sent", "2026-04-02T10:00:00.000Z"]],
  }); // outside

  // An opt-out fact naming the clicked message (campaign c1); one put back after a failed send is not new.
  await sql(
    `INSERT INTO domain_event_outbox (workspace_id, type, data, occurred_at, attempts)
     VALUES ($1, 'unsubscribe.email', $2, '2026-03-29T12:00:00Z', 0),
            ($1, 'unsubscribe.email', $2, '2026-03-29T12:00:00Z', 1)`,
    [ws, JSON.stringify({ messageId: clickedId, channel: "email" })],
  );

  // Contacts created in March (one later removed) and a form's submission.
  const contacts = [newId(), newId(), newId()];
  for (const [i, id] of contacts.entries())
    await sql(`INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, $4)`, [
      id,
      ws,
      `p${i}@example.test`,
      `2026-03-${28 + i}T12:00:00Z`,
    ]);
  await sql(`DELETE FROM contacts WHERE id = $1`, [contacts[2]]);
  const formId = newId();
  await sql(`INSERT INTO forms (id, workspace_id, name, fields, settings) VALUES ($1, $2, 'F', '[]', '{}')`, [
    formId,
    ws,
  ]);
  await sql(
    `INSERT INTO form_submissions (id, workspace_id, form_id, fields, created_at) VALUES ($1, $2, $3, '{}', '2026-03-29T15:00:00Z')`,
    [newId(), ws, formId],
  );
  await seedCampaign(ws);
});
afterAll(() => app.stop());

/** Campaign c1's own facts, on 10-11 April (outside the other tests' range). */
async function seedCampaign(ws: string) {
  await sql(
    `INSERT INTO campaigns (id, workspace_id, name, type, workflow) VALUES ('c1', $1, 'Spring', 'workflow', '{"nodes": [], "edges": []}')`,
    [ws],
  );
  const contactId = newId();
  await sql(
    `INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, 'e@example.test', '2026-04-01T00:00:00Z')`,
    [contactId, ws],
  );
  const enrol = (id: string, at: string) =>
    sql(
      `INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, created_at, finished_at)
       VALUES ($1, $2, 'c1', $3, 1, 'completed', $4, $4)`,
      [id, ws, contactId, at],
    );
  await enrol("e1", "2026-04-10T09:00:00Z");
  await enrol("e2", "2026-04-11T09:00:00Z");
  await enrol("e3", "2026-04-15T09:00:00Z"); // outside
  const log = (enrollment: string, node: string, at: string) =>
    sql(
      `INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, created_at)
       VALUES ($1, 'c1', $2, $3, $4, 'ok', $5)`,
      [ws, enrollment, contactId, node, at],
    );
  await log("e1", "n1", "2026-04-10T09:00:00Z");
  await log("e1", "n2", "2026-04-10T09:01:00Z");
  await log("e1", "n2", "2026-04-10T10:00:00Z"); // the same node again: entered once
  await log("e2", "n1", "2026-04-11T09:00:00Z");
  await log("e3", "n1", "2026-04-15T09:00:00Z"); // outside
  const click = (url: string, campaignId: string, at: string) =>
    event(ws, "message.click", at, { metadata: { url, campaignId, channel: "email" } });
  await click("https://a.example/x", "c1", "2026-04-10T12:00:00Z");
  await click("https://a.example/x", "c1", "2026-04-11T12:00:00Z");
  await click("https://b.example/", "c1", "2026-04-11T13:00:00Z");
  await click("https://a.example/x", "c2", "2026-04-11T13:00:00Z");
  await message(ws, {
    channel: "email",
    to: "e@example.test",
    status: "sent",
    campaignId: "c1",
    sentAt: "2026-04-10T10:00:00Z",
    history: [["sent", "2026-04-10T10:00:00.000Z"]],
  });
}

test("campaigns/{id}: enrollments, counts, each node entered once per enrollment, clicks per link", async () => {
  const res = await client.get(`${ctx.ws}/analytics/campaigns/c1?from=2026-04-10&to=2026-04-11`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    enrollments: 2,
    counts: { ...EMPTY, sent: 1 },
    rates: { ...EMPTY, sent: 1 },
    nodes: [
      { nodeId: "n1", entered: 2 },
      { nodeId: "n2", entered: 1 },
    ],
    links: [
      { url: "https://a.example/x", clicks: 2 },
      { url: "https://b.example/", clicks: 1 },
    ],
  });
  // Its March messages and opt-out, read in Kolkata.
  const march = await client.get(`${ctx.ws}/analytics/campaigns/c1?${RANGE}&timezone=Asia/Kolkata`);
  expect(march.body.counts).toEqual({
    ...EMPTY,
    sent: 1,
    delivered: 1,
    opened: 1,
    clicked: 1,
    unsubscribed: 1,
  });
  expect((await client.get(`${ctx.ws}/analytics/campaigns/nope?${RANGE}`)).status).toBe(404);
  expect((await other.owner.client.get(`${other.ws}/analytics/campaigns/c1`)).status).toBe(404);
});

const RANGE = "from=2026-03-28&to=2026-03-30";
const BERLIN_DAYS = ["2026-03-27T23:00:00.000Z", "2026-03-28T23:00:00.000Z", "2026-03-29T22:00:00.000Z"];
const points = (ts: string[], values: number[]) => ts.map((t, i) => ({ t, value: values[i] }));

test("overview: counts, rates, events, submissions, revenue and contacts in the workspace's zone", async () => {
  const res = await client.get(`${ctx.ws}/analytics?${RANGE}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    // Three created by the end of the range; the removal happened today, after it.
    contacts: { total: 3, new: 3 },
    counts: {
      ...EMPTY,
      sent: 2,
      delivered: 1,
      opened: 1,
      clicked: 1,
      bounced: 1,
      failed: 1,
      suppressed: 1,
      unsubscribed: 1,
    },
    rates: {
      ...EMPTY,
      sent: 1,
      delivered: 0.5,
      opened: 0.5,
      clicked: 0.5,
      bounced: 0.5,
      failed: 0.5,
      suppressed: 0.5,
      unsubscribed: 0.5,
    },
    events: 5,
    submissions: 1,
    revenue: 15.5,
  });
  // Up to today the removed contact is gone from the total (and campaign c1's contact of 1 April is in).
  const now = await client.get(`${ctx.ws}/analytics?from=2026-03-28`);
  expect(now.body.contacts).toEqual({ total: 3, new: 4 });
  // Another workspace sees its own purchase only.
  const theirs = await other.owner.client.get(`${other.ws}/analytics?${RANGE}&timezone=UTC`);
  expect(theirs.body.revenue).toBe(1000);
  expect(theirs.body.events).toBe(1);
});

test("timeseries: Berlin days of 24, 23 and 24 hours; Kolkata days start at 18:30 UTC", async () => {
  const events = await client.get(`${ctx.ws}/analytics/timeseries?metric=events&${RANGE}`);
  expect(events.status).toBe(200);
  expect(events.body).toEqual({ metric: "events", points: points(BERLIN_DAYS, [1, 2, 2]) });

  // Kolkata: 28 Mar = [27T18:30Z, 28T18:30Z) ... the 22:59Z event of the 27th falls on the 28th there.
  const kolkata = await client.get(
    `${ctx.ws}/analytics/timeseries?metric=events&${RANGE}&timezone=Asia/Kolkata`,
  );
  expect(kolkata.body.points).toEqual(
    points(["2026-03-27T18:30:00.000Z", "2026-03-28T18:30:00.000Z", "2026-03-29T18:30:00.000Z"], [1, 2, 3]),
  );

  const sent = await client.get(`${ctx.ws}/analytics/timeseries?metric=sent&${RANGE}&channel=email`);
  expect(sent.body.points).toEqual(points(BERLIN_DAYS, [1, 1, 0]));
  const revenue = await client.get(`${ctx.ws}/analytics/timeseries?metric=revenue&${RANGE}`);
  expect(revenue.body.points).toEqual(points(BERLIN_DAYS, [10, 5.5, 0]));
  const contacts = await client.get(`${ctx.ws}/analytics/timeseries?metric=contacts&${RANGE}`);
  expect(contacts.body.points).toEqual(points(BERLIN_DAYS, [1, 1, 1]));
  const unsubscribed = await client.get(
    `${ctx.ws}/analytics/timeseries?metric=unsubscribed&${RANGE}&campaignId=c1`,
  );
  expect(unsubscribed.body.points).toEqual(points(BERLIN_DAYS, [0, 1, 0]));
});

test("timeseries by hour skips the hour the clocks jump over", async () => {
  const res = await client.get(
    `${ctx.ws}/analytics/timeseries?metric=events&granularity=hour&from=2026-03-29T00:00:00%2B01:00&to=2026-03-29T04:00:00%2B02:00`,
  );
  expect(res.body.points).toEqual(
    points(
      [
        "2026-03-28T23:00:00.000Z",
        "2026-03-29T00:00:00.000Z",
        "2026-03-29T01:00:00.000Z",
        "2026-03-29T02:00:00.000Z",
      ],
      [1, 0, 0, 0],
    ),
  );
  const kolkataHours = await client.get(
    `${ctx.ws}/analytics/timeseries?metric=revenue&granularity=hour&from=2026-03-28T22:00:00Z&to=2026-03-28T23:59:00Z&timezone=Asia/Kolkata`,
  );
  expect(kolkataHours.body.points).toEqual(
    points(
      ["2026-03-28T21:30:00.000Z", "2026-03-28T22:30:00.000Z", "2026-03-28T23:30:00.000Z"],
      [0, 15.5, 0],
    ),
  );
});

test("deliverability: by channel, suppressions by reason", async () => {
  const res = await client.get(`${ctx.ws}/analytics/deliverability?${RANGE}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    channels: [
      {
        channel: "email",
        counts: {
          ...EMPTY,
          sent: 2,
          delivered: 1,
          opened: 1,
          clicked: 1,
          bounced: 1,
          failed: 1,
          unsubscribed: 1,
        },
        rates: {
          ...EMPTY,
          sent: 1,
          delivered: 0.5,
          opened: 0.5,
          clicked: 0.5,
          bounced: 0.5,
          failed: 0.5,
          unsubscribed: 0.5,
        },
        suppressed: {},
      },
      { channel: "sms", counts: { ...EMPTY, suppressed: 1 }, rates: EMPTY, suppressed: { dnc: 1 } },
    ],
  });
  const c1 = await client.get(`${ctx.ws}/analytics/deliverability?${RANGE}&campaignId=c1`);
  expect(c1.body.channels.map((c: { counts: object }) => c.counts)).toEqual([
    { ...EMPTY, sent: 1, delivered: 1, opened: 1, clicked: 1, unsubscribed: 1 },
  ]);
});

test("domains: email recipients by domain, most sent first", async () => {
  const res = await client.get(`${ctx.ws}/analytics/domains?${RANGE}`);
  expect(res.status).toBe(200);
  expect(res.body.domains.map((d: { domain: string; counts: object }) => [d.domain, d.counts])).toEqual([
    ["gmail.com", { ...EMPTY, sent: 1, delivered: 1, opened: 1, clicked: 1, failed: 1 }],
    ["yahoo.com", { ...EMPTY, sent: 1, bounced: 1 }],
  ]);
});

test("activity: events per day and by type", async () => {
  const res = await client.get(`${ctx.ws}/analytics/activity?${RANGE}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    points: points(BERLIN_DAYS, [1, 2, 2]),
    byType: [
      { type: "page_view", count: 2 },
      { type: "purchase", count: 2 },
      { type: "message.open", count: 1 },
    ],
  });
  const email = await client.get(`${ctx.ws}/analytics/activity?${RANGE}&channel=email`);
  expect(email.body.byType).toEqual([{ type: "message.open", count: 1 }]);
});

test("revenue: total, orders, per day and by campaign", async () => {
  const res = await client.get(`${ctx.ws}/analytics/revenue?${RANGE}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    total: 15.5,
    orders: 2,
    points: points(BERLIN_DAYS, [10, 5.5, 0]),
    byCampaign: [
      { campaignId: "c1", revenue: 10, orders: 1 },
      { campaignId: null, revenue: 5.5, orders: 1 },
    ],
  });
});

test("funnel: by first times, late facts and claimed sessions included, within the window", async () => {
  const ws = other.workspaceId;
  const person = async (email: string) => {
    const id = newId();
    await sql(
      `INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, '2026-01-01T00:00:00Z')`,
      [id, ws, email],
    );
    return id;
  };
  const [a, b, c, d, e] = await Promise.all(["a", "b", "c", "d", "e"].map((n) => person(`${n}@funnel.test`)));
  const did = (contactId: string, type: string, at: string) => event(ws, type, at, { contactId });
  await did(a, "signup", "2026-05-01T10:00:00Z");
  await did(a, "view", "2026-05-02T10:00:00Z");
  await did(a, "purchase", "2026-05-03T10:00:00Z");
  await did(b, "signup", "2026-05-01T12:00:00Z");
  await did(b, "view", "2026-05-02T12:00:00Z");
  await did(c, "view", "2026-04-20T10:00:00Z"); // its first view came before its signup
  await did(c, "signup", "2026-05-05T10:00:00Z");
  await did(c, "view", "2026-05-06T10:00:00Z");
  await did(d, "signup", "2026-05-10T00:00:00Z");
  await did(e, "signup", "2026-04-25T00:00:00Z"); // before the range
  await did(e, "view", "2026-05-02T00:00:00Z");
  // Late: b's history brings an earlier signup, before the range.
  await did(b, "signup", "2026-04-15T00:00:00Z");
  // An anonymous view that d's session later turns out to be.
  await event(ws, "view", "2026-05-12T00:00:00Z", { sessionId: "d-session" });
  await systemCall(app.broker, ws, "events.claimSession", { sessionId: "d-session", contactId: d });

  const q = `steps=signup,view,purchase&from=2026-05-01&to=2026-05-31`;
  const res = await other.owner.client.get(`${other.ws}/analytics/funnel?${q}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    steps: [
      { type: "signup", contacts: 3, rate: 1 },
      { type: "view", contacts: 2, rate: 2 / 3 },
      { type: "purchase", contacts: 1, rate: 1 / 3 },
    ],
  });
  const narrow = await other.owner.client.get(`${other.ws}/analytics/funnel?${q}&windowDays=1`);
  expect(narrow.body.steps.map((s: { contacts: number }) => s.contacts)).toEqual([3, 1, 0]);
  // A removed contact leaves with its first times, as its events do.
  await sql(`DELETE FROM contacts WHERE id = $1`, [a]);
  const after = await other.owner.client.get(`${other.ws}/analytics/funnel?${q}`);
  expect(after.body.steps.map((s: { contacts: number }) => s.contacts)).toEqual([2, 1, 0]);
  const bad = await other.owner.client.get(`${other.ws}/analytics/funnel?steps=signup`);
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("steps");
});

test("sources: contacts by the UTM source and medium they first came from, and their conversions", async () => {
  const ws = other.workspaceId;
  const ids = [newId(), newId(), newId()];
  for (const [i, id] of ids.entries())
    await sql(
      `INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, '2026-01-01T00:00:00Z')`,
      [id, ws, `s${i}@sources.test`],
    );
  const [s1, s2, s3] = ids;
  const visit = (contactId: string, at: string, utmSource: string, utmMedium?: string) =>
    event(ws, "page_view", at, { contactId, utmSource, ...(utmMedium ? { utmMedium } : {}) });
  await visit(s1, "2026-06-01T10:00:00Z", "news", "email");
  await event(ws, "purchase", "2026-06-02T10:00:00Z", { contactId: s1, metadata: { amount: 5 } });
  await visit(s2, "2026-06-03T10:00:00Z", "news", "email");
  await visit(s2, "2026-06-04T10:00:00Z", "ads");
  await event(ws, "purchase", "2026-05-20T10:00:00Z", { contactId: s2 }); // bought before it came
  await visit(s3, "2026-05-15T10:00:00Z", "news", "email"); // first came before the range
  await visit(s3, "2026-06-05T10:00:00Z", "news", "email");
  await visit(s3, "2026-06-10T10:00:00Z", "ads");
  await visit(s3, "2026-05-01T10:00:00Z", "ads"); // late: its first ads visit was before the range
  await event(ws, "page_view", "2026-06-06T10:00:00Z", {
    sessionId: "src-session",
    utmSource: "ads",
    utmMedium: "cpc",
  });
  await systemCall(app.broker, ws, "events.claimSession", { sessionId: "src-session", contactId: s1 });

  const res = await other.owner.client.get(`${other.ws}/analytics/sources?from=2026-06-01&to=2026-06-30`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    sources: [
      { utmSource: "news", utmMedium: "email", contacts: 2, conversions: 1 },
      { utmSource: "ads", utmMedium: null, contacts: 1, conversions: 0 },
      { utmSource: "ads", utmMedium: "cpc", contacts: 1, conversions: 0 },
    ],
  });
});

test("realtime: the last 30 minutes from the raw events; visitors are contacts, else sessions", async () => {
  const ws = other.workspaceId;
  const now = Date.now();
  const ago = (ms: number) => new Date(now - ms).toISOString();
  const contactId = newId();
  await sql(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, 'realtime@visitors.test')`, [
    contactId,
    ws,
  ]);
  await event(ws, "page_view", ago(60_000), { sessionId: "s1" });
  await event(ws, "page_view", ago(30_000), { sessionId: "s1" });
  await event(ws, "page_view", ago(20 * 60_000), { sessionId: "s3" });
  await event(ws, "page_view", ago(10 * 60_000), { contactId, sessionId: "s4" });
  await event(ws, "purchase", ago(5 * 60_000), { contactId });
  await event(ws, "signup", ago(45 * 60_000), { sessionId: "s2" });
  const res = await other.owner.client.get(`${other.ws}/analytics/realtime`);
  expect(res.status).toBe(200);
  expect(res.body.activeVisitors).toBe(3); // s1, s3 and the contact (its session s4 is the contact)
  expect(res.body.points).toHaveLength(30);
  expect(res.body.points.reduce((sum: number, p: { value: number }) => sum + p.value, 0)).toBe(5);
  expect(res.body.recentEvents.map((e: { type: string }) => e.type)).toEqual([
    "page_view",
    "page_view",
    "purchase",
    "page_view",
    "page_view",
  ]);
});

test("bad input: zone, range, metric; a member without analytics.read is refused", async () => {
  const zone = await client.get(`${ctx.ws}/analytics?timezone=Mars/Olympus`);
  expect(zone.status).toBe(400);
  expect(zone.body.details[0].field).toBe("timezone");
  const range = await client.get(`${ctx.ws}/analytics/activity?from=2026-03-30&to=2026-03-28`);
  expect(range.status).toBe(400);
  expect(range.body.details[0].field).toBe("to");
  const metric = await client.get(`${ctx.ws}/analytics/timeseries?metric=nope`);
  expect(metric.status).toBe(400);
  const stranger = await signUp(app.baseUrl, "Stranger");
  expect((await stranger.client.get(`${ctx.ws}/analytics`)).status).toBe(403);
  const viewer = await signUp(app.baseUrl, "Viewer");
  expect((await client.post(`${ctx.ws}/members`, { email: viewer.email, role: "VIEWER" })).status).toBe(201);
  expect((await viewer.client.get(`${ctx.ws}/analytics?${RANGE}`)).status).toBe(200);
  const key = await client.post(`${ctx.ws}/keys`, { name: "contacts only", scopes: ["contacts.read"] });
  const keyed = new HttpClient(app.baseUrl);
  keyed.bearer = key.body.key;
  expect((await keyed.get(`${ctx.ws}/analytics`)).status).toBe(403);
});
