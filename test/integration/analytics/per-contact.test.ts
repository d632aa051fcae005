import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { systemCall } from "../../../lib/system-call";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * The answers kept per contact (migration 0089) through the gateway, each on
 * its own hand-seeded UTC workspace with expectations worked out by hand:
 * attribution over campaign messages and UTM sources, cohorts and their
 * retention (late facts included), and answers narrowed to a segment.
 */

let app: TestApp;
type World = Awaited<ReturnType<typeof ownerWithWorkspace>>;

const sql = async (text: string, bind: unknown[] = []) => (await database()).query(text, { bind });

async function event(w: World, type: string, timestamp: string, extra: Record<string, unknown> = {}) {
  await systemCall(app.broker, w.workspaceId, "events.record", { type, timestamp, ...extra });
}

async function contact(w: World, createdAt: string): Promise<string> {
  const id = newId();
  await sql(`INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, $4)`, [
    id,
    w.workspaceId,
    `${id}@people.test`,
    createdAt,
  ]);
  return id;
}

/** A message as the send path leaves it (sent at `sentAt`, else not yet), created when first sent or recorded. */
async function message(
  w: World,
  m: {
    contactId: string;
    channel?: string;
    campaignId?: string;
    status: string;
    sentAt?: string;
    reason?: string;
  },
  history: Array<[string, string]> = [],
): Promise<string> {
  const id = newId();
  await sql(
    `INSERT INTO messages (id, workspace_id, contact_id, channel, status, reason, to_address, campaign_id, sent_at, history,
                           created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      id,
      w.workspaceId,
      m.contactId,
      m.channel ?? "email",
      m.status,
      m.reason ?? null,
      `${m.contactId}@people.test`,
      m.campaignId ?? null,
      m.sentAt ?? null,
      JSON.stringify(history.map(([status, at]) => ({ status, at, reason: null }))),
      m.sentAt ?? history[0]?.[1] ?? "2026-05-01T00:00:00Z",
    ],
  );
  return id;
}

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "events", "contacts", "segments", "analytics"],
  });
});
afterAll(() => app.stop());

describe("attribution", () => {
  let w: World;
  const JUNE = "from=2026-06-01&to=2026-06-30&timezone=UTC";

  beforeAll(async () => {
    w = await ownerWithWorkspace(app.baseUrl);
    const [a, b, c] = [
      await contact(w, "2026-05-01T00:00:00Z"),
      await contact(w, "2026-05-01T00:00:00Z"),
      await contact(w, "2026-05-01T00:00:00Z"),
    ];
    // A: campaign c1, then UTM ads, then campaign c2 (sent by an update, as the send path does), then buys 90.
    await message(w, { contactId: a, campaignId: "c1", status: "sent", sentAt: "2026-06-01T10:00:00Z" });
    await event(w, "page_view", "2026-06-02T10:00:00Z", { contactId: a, utmSource: "ads" });
    const second = await message(w, { contactId: a, campaignId: "c2", status: "queued" });
    await sql(`UPDATE messages SET status = 'sent', sent_at = '2026-06-03T10:00:00Z' WHERE id = $1`, [
      second,
    ]);
    await message(w, { contactId: a, status: "sent", sentAt: "2026-06-03T11:00:00Z" }); // no campaign: no touch
    await event(w, "purchase", "2026-06-04T10:00:00Z", { contactId: a, metadata: { amount: 90 } });
    // After June, and more than 30 days after every touch of A's: attributed to nothing.
    await event(w, "purchase", "2026-07-05T10:00:00Z", { contactId: a, metadata: { amount: 7 } });
    // B: news 40 days before (past the 30-day window), ads the day before, then buys 20 coming from news.
    await event(w, "page_view", "2026-05-01T10:00:00Z", { contactId: b, utmSource: "news" });
    await event(w, "page_view", "2026-06-09T10:00:00Z", { contactId: b, utmSource: "ads" });
    await event(w, "purchase", "2026-06-10T10:00:00Z", {
      contactId: b,
      utmSource: "news",
      metadata: { amount: "20" },
    });
    await event(w, "signup", "2026-06-10T11:00:00Z", { contactId: b });
    // C: bought before its only touch; an anonymous purchase has no touches.
    await event(w, "purchase", "2026-06-14T10:00:00Z", { contactId: c, metadata: { amount: 5 } });
    await message(w, { contactId: c, campaignId: "c1", status: "sent", sentAt: "2026-06-15T10:00:00Z" });
    await event(w, "purchase", "2026-06-14T10:00:00Z", { metadata: { amount: 5 } });
  });

  const get = async (query: string) => {
    const res = await w.owner.client.get(`${w.ws}/analytics/attribution?${JUNE}&${query}`);
    expect(res.status).toBe(200);
    return res.body;
  };

  test("first_touch and last_touch give each conversion and its amount to one touch", async () => {
    expect(await get("model=first_touch")).toEqual({
      model: "first_touch",
      touches: [
        { kind: "campaign", key: "c1", conversions: 1, revenue: 90 },
        { kind: "source", key: "ads", conversions: 1, revenue: 20 },
      ],
    });
    const last = {
      model: "last_touch",
      touches: [
        { kind: "campaign", key: "c2", conversions: 1, revenue: 90 },
        { kind: "source", key: "news", conversions: 1, revenue: 20 },
      ],
    };
    expect(await get("model=last_touch")).toEqual(last);
    expect(await get("conversion=purchase")).toEqual(last);
  });

  test("linear splits each conversion and its amount evenly over its touches", async () => {
    const body = await get("model=linear");
    expect(body.model).toBe("linear");
    expect(body.touches.map((t: { kind: string; key: string }) => `${t.kind}:${t.key}`)).toEqual([
      "source:ads",
      "source:news",
      "campaign:c1",
      "campaign:c2",
    ]);
    const expected = [
      [1 / 3 + 1 / 2, 30 + 10],
      [1 / 2, 10],
      [1 / 3, 30],
      [1 / 3, 30],
    ];
    body.touches.forEach((t: { conversions: number; revenue: number }, i: number) => {
      expect(t.conversions).toBeCloseTo(expected[i][0], 9);
      expect(t.revenue).toBeCloseTo(expected[i][1], 9);
    });
  });

  test("another conversion type, and a range without conversions", async () => {
    expect(await get("model=first_touch&conversion=signup")).toEqual({
      model: "first_touch",
      touches: [{ kind: "source", key: "ads", conversions: 1, revenue: 0 }],
    });
    const july = await w.owner.client.get(
      `${w.ws}/analytics/attribution?from=2026-07-01&to=2026-07-31&timezone=UTC&model=last_touch`,
    );
    expect(july.body).toEqual({ model: "last_touch", touches: [] });
    const bad = await w.owner.client.get(`${w.ws}/analytics/attribution?model=u_shaped`);
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe("model");
    for (const conversion of ["page_view", "message.click"]) {
      const refused = await w.owner.client.get(`${w.ws}/analytics/attribution?conversion=${conversion}`);
      expect(refused.status).toBe(400);
      expect(refused.body.details[0].field).toBe("conversion");
    }
  });
});

describe("cohorts", () => {
  let w: World;
  const DAYS = "from=2026-06-01&to=2026-06-03&timezone=UTC&granularity=day";

  beforeAll(async () => {
    w = await ownerWithWorkspace(app.baseUrl);
    const p = await contact(w, "2026-06-01T00:00:00Z");
    const q = await contact(w, "2026-06-01T05:00:00Z");
    const s = await contact(w, "2026-06-02T00:00:00Z");
    const r = await contact(w, "2026-05-01T00:00:00Z");
    await event(w, "signup", "2026-06-01T09:00:00Z", { contactId: p });
    await event(w, "page_view", "2026-06-02T10:00:00Z", { contactId: p });
    await event(w, "page_view", "2026-06-02T11:00:00Z", { contactId: p });
    await event(w, "signup", "2026-06-01T23:59:00Z", { contactId: q });
    await event(w, "signup", "2026-06-02T08:00:00Z", { contactId: s });
    await event(w, "page_view", "2026-06-03T08:00:00Z", { contactId: s });
    // R signed up in the range, then a late (backfilled) signup moves its first one before it.
    await event(w, "signup", "2026-06-02T12:00:00Z", { contactId: r });
    await event(w, "page_view", "2026-06-03T12:00:00Z", { contactId: r });
    await event(w, "signup", "2026-05-20T12:00:00Z", { contactId: r });
    await event(w, "signup", "2026-06-01T12:00:00Z", { sessionId: "anonymous" });
  });

  test("by the first event: sizes and the share active in each later day", async () => {
    const res = await w.owner.client.get(`${w.ws}/analytics/cohorts?event=signup&${DAYS}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      cohorts: [
        { cohort: "2026-06-01T00:00:00.000Z", size: 2, retention: [1, 0.5, 0] },
        { cohort: "2026-06-02T00:00:00.000Z", size: 1, retention: [1, 1] },
        { cohort: "2026-06-03T00:00:00.000Z", size: 0, retention: [0] },
      ],
    });
  });

  test("without an event: by creation; Kolkata days move the cut", async () => {
    const res = await w.owner.client.get(`${w.ws}/analytics/cohorts?${DAYS}`);
    expect(res.body).toEqual({
      cohorts: [
        { cohort: "2026-06-01T00:00:00.000Z", size: 2, retention: [1, 0.5, 0] },
        { cohort: "2026-06-02T00:00:00.000Z", size: 1, retention: [1, 1] },
        { cohort: "2026-06-03T00:00:00.000Z", size: 0, retention: [0] },
      ],
    });
    // Kolkata 1 June is [31 May 18:30Z, 1 June 18:30Z): P and Q created then; P's signup (09:00Z) in it,
    // Q's (23:59Z) the next day, P's page views (2 June 10:00Z, 11:00Z) the next day too.
    const kolkata = await w.owner.client.get(
      `${w.ws}/analytics/cohorts?from=2026-06-01&to=2026-06-02&timezone=Asia%2FKolkata`,
    );
    expect(kolkata.body).toEqual({
      cohorts: [
        { cohort: "2026-05-31T18:30:00.000Z", size: 2, retention: [0.5, 1] },
        { cohort: "2026-06-01T18:30:00.000Z", size: 1, retention: [1] },
      ],
    });
  });

  test("too many cohorts is a 400 naming granularity", async () => {
    const res = await w.owner.client.get(
      `${w.ws}/analytics/cohorts?from=2026-01-01&to=2026-12-31&timezone=UTC&granularity=day`,
    );
    expect(res.status).toBe(400);
    expect(res.body.details[0].field).toBe("granularity");
  });
});

describe("segmentId", () => {
  let w: World;
  let segmentId: string;
  const DAYS = "from=2026-06-01&to=2026-06-03&timezone=UTC&granularity=day";

  beforeAll(async () => {
    w = await ownerWithWorkspace(app.baseUrl);
    const m1 = await contact(w, "2026-06-01T00:00:00Z");
    const m2 = await contact(w, "2026-05-15T00:00:00Z");
    const n = await contact(w, "2026-06-01T00:00:00Z");
    await contact(w, "2026-06-04T00:00:00Z"); // created after the range
    const segment = await w.owner.client.post(`${w.ws}/segments`, {
      name: "Members",
      type: "static",
      contactIds: [m1, m2],
    });
    expect(segment.status).toBe(201);
    segmentId = segment.body.id;

    await event(w, "purchase", "2026-06-01T10:00:00Z", {
      contactId: m1,
      metadata: { amount: 10, campaignId: "c1" },
    });
    await event(w, "page_view", "2026-06-02T10:00:00Z", { contactId: m1, metadata: { channel: "email" } });
    await event(w, "purchase", "2026-06-02T12:00:00Z", { contactId: m2, metadata: { amount: "5" } });
    await event(w, "page_view", "2026-05-31T12:00:00Z", { contactId: m2 }); // before the range
    await event(w, "purchase", "2026-06-01T10:00:00Z", { contactId: n, metadata: { amount: 100 } });

    const delivered = await message(
      w,
      { contactId: m1, campaignId: "c1", status: "delivered", sentAt: "2026-06-01T09:00:00Z" },
      [["sent", "2026-06-01T09:00:00Z"]],
    );
    await sql(`UPDATE messages SET delivered_at = '2026-06-01T09:01:00Z' WHERE id = $1`, [delivered]);
    await message(w, { contactId: m2, status: "suppressed", reason: "dnc" }, [
      ["suppressed", "2026-06-02T00:00:00Z"],
    ]);
    await message(w, { contactId: n, channel: "sms", status: "sent", sentAt: "2026-06-02T09:00:00Z" });
    await sql(
      `INSERT INTO domain_event_outbox (workspace_id, type, data, occurred_at, attempts)
       VALUES ($1, 'unsubscribe.email', $2, '2026-06-02T12:00:00Z', 0)`,
      [w.workspaceId, JSON.stringify({ contactId: m1, messageId: delivered, channel: "email" })],
    );
    const formId = newId();
    await sql(
      `INSERT INTO forms (id, workspace_id, name, fields, settings) VALUES ($1, $2, 'F', '[]', '{}')`,
      [formId, w.workspaceId],
    );
    for (const [who, at] of [
      [m2, "2026-06-03T10:00:00Z"],
      [n, "2026-06-03T10:00:00Z"],
    ])
      await sql(
        `INSERT INTO form_submissions (id, workspace_id, form_id, contact_id, fields, created_at)
         VALUES ($1, $2, $3, $4, '{}', $5)`,
        [newId(), w.workspaceId, formId, who, at],
      );
  });

  const get = async (path: string, query = "") => {
    const res = await w.owner.client.get(`${w.ws}/analytics${path}?${DAYS}&segmentId=${segmentId}${query}`);
    expect(res.status).toBe(200);
    return res.body;
  };
  const counts = (over: Record<string, number>) => ({
    sent: 0,
    delivered: 0,
    opened: 0,
    clicked: 0,
    bounced: 0,
    complained: 0,
    unsubscribed: 0,
    failed: 0,
    suppressed: 0,
    ...over,
  });

  test("overview counts the members' facts only", async () => {
    expect(await get("")).toEqual({
      contacts: { total: 2, new: 1 },
      counts: counts({ sent: 1, delivered: 1, suppressed: 1, unsubscribed: 1 }),
      rates: counts({ sent: 1, delivered: 1, suppressed: 1, unsubscribed: 1 }),
      events: 3,
      submissions: 1,
      revenue: 15,
    });
    const everyone = (await w.owner.client.get(`${w.ws}/analytics?${DAYS}`)).body;
    expect(everyone.contacts).toEqual({ total: 3, new: 2 });
    expect(everyone.revenue).toBe(115);
    // channel narrows the members' messages and events as it does everyone's.
    const email = await get("", "&channel=email");
    expect(email.counts).toEqual(counts({ sent: 1, delivered: 1, suppressed: 1, unsubscribed: 1 }));
    expect(email.events).toBe(1);
  });

  test("timeseries, revenue, activity and deliverability", async () => {
    const points = (values: number[]) =>
      values.map((value, i) => ({ t: `2026-06-0${i + 1}T00:00:00.000Z`, value }));
    expect(await get("/timeseries", "&metric=events")).toEqual({
      metric: "events",
      points: points([1, 2, 0]),
    });
    expect(await get("/timeseries", "&metric=contacts")).toEqual({
      metric: "contacts",
      points: points([1, 0, 0]),
    });
    expect(await get("/timeseries", "&metric=submissions")).toEqual({
      metric: "submissions",
      points: points([0, 0, 1]),
    });
    expect(await get("/timeseries", "&metric=sent&campaignId=c1")).toEqual({
      metric: "sent",
      points: points([1, 0, 0]),
    });
    expect(await get("/revenue")).toEqual({
      total: 15,
      orders: 2,
      points: points([10, 5, 0]),
      byCampaign: [
        { campaignId: "c1", revenue: 10, orders: 1 },
        { campaignId: null, revenue: 5, orders: 1 },
      ],
    });
    expect(await get("/activity")).toEqual({
      points: points([1, 2, 0]),
      byType: [
        { type: "purchase", count: 2 },
        { type: "page_view", count: 1 },
      ],
    });
    const deliverability = await get("/deliverability");
    expect(deliverability).toEqual({
      channels: [
        {
          channel: "email",
          counts: counts({ sent: 1, delivered: 1, suppressed: 1, unsubscribed: 1 }),
          rates: counts({ sent: 1, delivered: 1, suppressed: 1, unsubscribed: 1 }),
          suppressed: { dnc: 1 },
        },
      ],
    });
  });

  test("an unknown segment is 404", async () => {
    for (const path of [
      "",
      "/campaigns/c1?",
      "/funnel?steps=a,b&",
      "/sources?",
      "/cohorts?",
      "/attribution?",
    ])
      expect(
        (await w.owner.client.get(`${w.ws}/analytics${path}${path ? "" : "?"}segmentId=nope`)).status,
      ).toBe(404);
  });
});

describe("segmentId on the campaign answer", () => {
  let w: World;
  let segmentId: string;
  const campaignId = newId();
  const DAYS = "from=2026-06-01&to=2026-06-03&timezone=UTC";

  beforeAll(async () => {
    w = await ownerWithWorkspace(app.baseUrl);
    const [m1, m2, n] = [
      await contact(w, "2026-05-01T00:00:00Z"),
      await contact(w, "2026-05-01T00:00:00Z"),
      await contact(w, "2026-05-01T00:00:00Z"),
    ];
    const segment = await w.owner.client.post(`${w.ws}/segments`, {
      name: "Members",
      type: "static",
      contactIds: [m1, m2],
    });
    expect(segment.status).toBe(201);
    segmentId = segment.body.id;
    await sql(
      `INSERT INTO campaigns (id, workspace_id, name, type, workflow) VALUES ($1, $2, 'Spring', 'workflow', '{"nodes": [], "edges": []}')`,
      [campaignId, w.workspaceId],
    );
    const enrol = async (contactId: string, at: string) => {
      const id = newId();
      await sql(
        `INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, created_at, finished_at)
         VALUES ($1, $2, $3, $4, 1, 'completed', $5, $5)`,
        [id, w.workspaceId, campaignId, contactId, at],
      );
      return id;
    };
    const log = (enrollment: string, contactId: string, node: string, at: string) =>
      sql(
        `INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, created_at)
         VALUES ($1, $2, $3, $4, $5, 'ok', $6)`,
        [w.workspaceId, campaignId, enrollment, contactId, node, at],
      );
    // m1: enrolled before the range, entering n2 inside it; enrolled again inside, n1 then n2 twice (entered once).
    const before = await enrol(m1, "2026-05-20T09:00:00Z");
    await log(before, m1, "n1", "2026-05-20T09:00:00Z");
    await log(before, m1, "n2", "2026-06-03T09:00:00Z");
    const inside = await enrol(m1, "2026-06-01T09:00:00Z");
    await log(inside, m1, "n1", "2026-06-01T09:00:00Z");
    await log(inside, m1, "n2", "2026-06-01T10:00:00Z");
    await log(inside, m1, "n2", "2026-06-02T10:00:00Z");
    // m2: enrolled inside, n1 only. n (not a member): enrolled inside, n1, n2 and n3.
    const second = await enrol(m2, "2026-06-02T09:00:00Z");
    await log(second, m2, "n1", "2026-06-02T09:00:00Z");
    const outsider = await enrol(n, "2026-06-01T09:00:00Z");
    for (const node of ["n1", "n2", "n3"]) await log(outsider, n, node, "2026-06-01T12:00:00Z");

    await message(w, { contactId: m1, campaignId, status: "sent", sentAt: "2026-06-01T09:30:00Z" });
    await message(w, { contactId: m2, campaignId, status: "sent", sentAt: "2026-06-02T09:30:00Z" });
    await message(w, { contactId: m2, status: "sent", sentAt: "2026-06-02T09:40:00Z" }); // another campaign's
    await message(w, { contactId: n, campaignId, status: "sent", sentAt: "2026-06-01T12:30:00Z" });
    const click = (contactId: string, url: string, campaign: string, at: string) =>
      event(w, "message.click", at, { contactId, metadata: { url, campaignId: campaign, channel: "email" } });
    await click(m1, "https://a.example/x", campaignId, "2026-06-01T10:00:00Z");
    await click(m2, "https://a.example/x", campaignId, "2026-06-02T10:00:00Z");
    await click(m2, "https://b.example/", campaignId, "2026-06-02T11:00:00Z");
    await click(m1, "https://b.example/", "other", "2026-06-02T11:00:00Z");
    await click(n, "https://b.example/", campaignId, "2026-06-01T13:00:00Z");
    await click(n, "https://b.example/", campaignId, "2026-06-01T14:00:00Z");
  });

  const counts = (sent: number) => ({
    sent,
    delivered: 0,
    opened: 0,
    clicked: 0,
    bounced: 0,
    complained: 0,
    unsubscribed: 0,
    failed: 0,
    suppressed: 0,
  });
  const get = async (query: string) => {
    const res = await w.owner.client.get(`${w.ws}/analytics/campaigns/${campaignId}?${DAYS}${query}`);
    expect(res.status).toBe(200);
    return res.body;
  };

  test("enrollments, counts, node entries and link clicks of the members only", async () => {
    expect(await get(`&segmentId=${segmentId}`)).toEqual({
      enrollments: 2,
      counts: counts(2),
      rates: { ...counts(0), sent: 1 },
      nodes: [
        { nodeId: "n1", entered: 2 },
        { nodeId: "n2", entered: 2 },
      ],
      links: [
        { url: "https://a.example/x", clicks: 2 },
        { url: "https://b.example/", clicks: 1 },
      ],
    });
    // The whole workspace: the non-member's enrollment, entries, message and clicks too.
    expect(await get("")).toEqual({
      enrollments: 3,
      counts: counts(3),
      rates: { ...counts(0), sent: 1 },
      nodes: [
        { nodeId: "n1", entered: 3 },
        { nodeId: "n2", entered: 3 },
        { nodeId: "n3", entered: 1 },
      ],
      links: [
        { url: "https://b.example/", clicks: 3 },
        { url: "https://a.example/x", clicks: 2 },
      ],
    });
  });
});

describe("segmentId on the answers kept per contact", () => {
  let w: World;
  let segmentId: string;
  let members: [string, string];
  let other: string;
  const DAYS = "from=2026-06-01&to=2026-06-03&timezone=UTC&granularity=day";

  beforeAll(async () => {
    w = await ownerWithWorkspace(app.baseUrl);
    const a = await contact(w, "2026-06-01T00:00:00Z");
    const b = await contact(w, "2026-06-02T00:00:00Z");
    const c = await contact(w, "2026-06-01T00:00:00Z");
    members = [a, b];
    other = c;
    const segment = await w.owner.client.post(`${w.ws}/segments`, {
      name: "A and B",
      type: "static",
      contactIds: [a, b],
    });
    expect(segment.status).toBe(201);
    segmentId = segment.body.id;
    // A: from ads, signs up, buys 30 the next day.
    await event(w, "page_view", "2026-06-01T08:00:00Z", { contactId: a, utmSource: "ads" });
    await event(w, "signup", "2026-06-01T09:00:00Z", { contactId: a });
    await event(w, "purchase", "2026-06-02T10:00:00Z", { contactId: a, metadata: { amount: 30 } });
    // B: from news, sent campaign c1, buys 20.
    await event(w, "page_view", "2026-06-02T08:00:00Z", { contactId: b, utmSource: "news" });
    await message(w, { contactId: b, campaignId: "c1", status: "sent", sentAt: "2026-06-02T09:00:00Z" });
    await event(w, "purchase", "2026-06-02T10:00:00Z", { contactId: b, metadata: { amount: 20 } });
    // C (not a member): from ads, buys 100.
    await event(w, "page_view", "2026-06-01T07:00:00Z", { contactId: c, utmSource: "ads" });
    await event(w, "purchase", "2026-06-01T11:00:00Z", { contactId: c, metadata: { amount: 100 } });
  });

  const get = async (path: string, segment: boolean) => {
    const res = await w.owner.client.get(
      `${w.ws}/analytics${path}&${DAYS}${segment ? `&segmentId=${segmentId}` : ""}`,
    );
    expect(res.status).toBe(200);
    return res.body;
  };
  const steps = (body: { steps: Array<{ contacts: number }> }) => body.steps.map((s) => s.contacts);

  test("funnel: the members' first times only", async () => {
    expect(steps(await get("/funnel?steps=page_view,purchase", true))).toEqual([2, 2]);
    expect(steps(await get("/funnel?steps=page_view,signup", true))).toEqual([2, 1]);
    expect(steps(await get("/funnel?steps=page_view,purchase", false))).toEqual([3, 3]);
  });

  test("sources: the members' first sources and their conversions", async () => {
    expect((await get("/sources?conversion=purchase", true)).sources).toEqual([
      { utmSource: "ads", utmMedium: null, contacts: 1, conversions: 1 },
      { utmSource: "news", utmMedium: null, contacts: 1, conversions: 1 },
    ]);
    expect((await get("/sources?conversion=purchase", false)).sources[0]).toEqual({
      utmSource: "ads",
      utmMedium: null,
      contacts: 2,
      conversions: 2,
    });
  });

  test("cohorts: the members only, by first event and by creation", async () => {
    const theirs = {
      cohorts: [
        { cohort: "2026-06-01T00:00:00.000Z", size: 1, retention: [1, 1, 0] },
        { cohort: "2026-06-02T00:00:00.000Z", size: 1, retention: [1, 0] },
        { cohort: "2026-06-03T00:00:00.000Z", size: 0, retention: [0] },
      ],
    };
    expect(await get("/cohorts?event=page_view", true)).toEqual(theirs);
    expect(await get("/cohorts?", true)).toEqual(theirs);
    expect((await get("/cohorts?event=page_view", false)).cohorts[0]).toEqual({
      cohort: "2026-06-01T00:00:00.000Z",
      size: 2,
      retention: [1, 0.5, 0],
    });
  });

  test("attribution: the members' conversions over the touches they were stored with", async () => {
    expect(await get("/attribution?model=last_touch", true)).toEqual({
      model: "last_touch",
      touches: [
        { kind: "source", key: "ads", conversions: 1, revenue: 30 },
        { kind: "campaign", key: "c1", conversions: 1, revenue: 20 },
      ],
    });
    expect(await get("/attribution?model=first_touch", true)).toEqual({
      model: "first_touch",
      touches: [
        { kind: "source", key: "ads", conversions: 1, revenue: 30 },
        { kind: "source", key: "news", conversions: 1, revenue: 20 },
      ],
    });
    expect(await get("/attribution?model=linear", true)).toEqual({
      model: "linear",
      touches: [
        { kind: "source", key: "ads", conversions: 1, revenue: 30 },
        { kind: "campaign", key: "c1", conversions: 0.5, revenue: 10 },
        { kind: "source", key: "news", conversions: 0.5, revenue: 10 },
      ],
    });
    expect(await get("/attribution?model=last_touch&conversion=signup", true)).toEqual({
      model: "last_touch",
      touches: [{ kind: "source", key: "ads", conversions: 1, revenue: 0 }],
    });
    expect((await get("/attribution?model=last_touch", false)).touches[0]).toEqual({
      kind: "source",
      key: "ads",
      conversions: 2,
      revenue: 130,
    });
  });

  test("a merge into a member brings the merged contact's conversions along", async () => {
    const merged = await w.owner.client.post(`${w.ws}/contacts/merge`, {
      primaryId: members[0],
      duplicateIds: [other],
    });
    expect(merged.status).toBe(200);
    expect((await get("/attribution?model=last_touch", true)).touches[0]).toEqual({
      kind: "source",
      key: "ads",
      conversions: 2,
      revenue: 130,
    });
  });
});
