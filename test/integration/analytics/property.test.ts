import { QueryTypes } from "sequelize";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { systemCall } from "../../../lib/system-call";
import * as messages from "../../../services/messages/messages.repo";
import { recordReport } from "../../../services/messages/provider-events.repo";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { seededRandom } from "../../helpers/rng";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * The rollups equal a recomputation from the raw rows: random streams of
 * facts (events with late and out-of-order timestamps, purchases with good and
 * bad amounts, contacts, submissions, messages moving through their statuses)
 * go through the real statements, then every answer, in several zones and
 * granularities, is compared with plain SQL over the raw tables: first with
 * every count still an appended delta (migration 0085), then with more facts
 * written while folds run, then with everything folded.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

const SEED = Number(process.env.ANALYTICS_SEED ?? Date.now() % 1_000_000);
/** Seeded, so a failing stream can be replayed with ANALYTICS_SEED. */
const { next: random, pick } = seededRandom(SEED);

const rows = async <T extends object>(sql: string, bind: unknown[]) =>
  (await database()).query<T>(sql, { bind, type: QueryTypes.SELECT });

/** Events over ten days around Berlin's spring-forward Sunday, stored in shuffled order. */
const WINDOW_START = Date.parse("2026-03-25T00:00:00Z");
const WINDOW_MS = 10 * 86_400_000;
const TYPES = ["page_view", "purchase", "signup", "message.open", "message.click"] as const;
const AMOUNTS = [10, 2.5, "7.25", "abc", null, 0.1, 0.2, "-3"] as const;

async function feedEvents(ws: string, n: number) {
  const sequelize = await database();
  const people = Array.from({ length: 25 }, () => newId());
  for (const id of people)
    await sequelize.query(
      `INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, '2026-01-01T00:00:00Z')`,
      {
        bind: [id, ws, `${id}@people.test`],
      },
    );
  const times = Array.from({ length: n }, () => new Date(WINDOW_START + Math.floor(random() * WINDOW_MS)));
  // Some land on a bucket edge exactly.
  for (let i = 0; i < n / 10; i++) times[i] = new Date(Math.floor(times[i].getTime() / 900_000) * 900_000);
  for (const timestamp of times) {
    const type = pick(TYPES);
    const metadata: Record<string, unknown> = {};
    if (random() < 0.6) metadata.campaignId = pick(["c1", "c2"]);
    if (random() < 0.5) metadata.channel = pick(["email", "sms"]);
    if (type === "message.click" && random() < 0.8)
      metadata.url = pick(["https://a.example/", "https://b.example/x"]);
    if (type === "purchase") {
      const amount = pick(AMOUNTS);
      if (amount !== null) metadata.amount = amount;
    }
    await systemCall(app.broker, asWorkspaceId(ws), "events.record", {
      type,
      timestamp: timestamp.toISOString(),
      metadata,
      ...(random() < 0.7 ? { contactId: pick(people) } : {}),
      ...(random() < 0.5 ? { utmSource: pick(["news", "ads"]) } : {}),
      ...(random() < 0.5 ? { utmMedium: pick(["email", "cpc"]) } : {}),
    });
  }
}

async function feedContactsAndSubmissions(ws: string, n: number) {
  const sequelize = await database();
  const formId = newId();
  await sequelize.query(
    `INSERT INTO forms (id, workspace_id, name, fields, settings) VALUES ($1, $2, 'F', '[]', '{}')`,
    {
      bind: [formId, ws],
    },
  );
  for (let i = 0; i < n; i++) {
    const at = new Date(WINDOW_START + Math.floor(random() * WINDOW_MS)).toISOString();
    if (random() < 0.5) {
      const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, {
        email: `p${i}-${newId()}@example.test`,
      });
      expect(created.status).toBe(201);
    } else {
      // A backdated row (an import's creation time) counts where it was created.
      await sequelize.query(
        `INSERT INTO contacts (id, workspace_id, email, created_at) VALUES ($1, $2, $3, $4)`,
        {
          bind: [newId(), ws, `old${i}-${newId()}@example.test`, at],
        },
      );
    }
    await sequelize.query(
      `INSERT INTO form_submissions (id, workspace_id, form_id, fields, created_at) VALUES ($1, $2, $3, '{}', $4)`,
      { bind: [newId(), ws, formId, at] },
    );
  }
}

/** Campaign c1's enrollments and step logs (nodes run again, logs stored out of order), as the campaigns area writes them. */
async function feedCampaign(ws: string, n: number) {
  const sequelize = await database();
  const sql = (text: string, bind: unknown[]) => sequelize.query(text, { bind });
  await sql(
    `INSERT INTO campaigns (id, workspace_id, name, type, workflow) VALUES ('c1', $1, 'C1', 'workflow', '{"nodes": [], "edges": []}')
     ON CONFLICT (id) DO NOTHING`,
    [ws],
  );
  const at = () => new Date(WINDOW_START + Math.floor(random() * WINDOW_MS)).toISOString();
  for (let i = 0; i < n; i++) {
    const id = newId();
    const enrolledAt = at();
    await sql(
      `INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, created_at, finished_at)
       VALUES ($1, $2, 'c1', $3, 1, 'completed', $4, $4)`,
      [id, ws, newId(), enrolledAt],
    );
    const steps = Array.from({ length: 1 + Math.floor(random() * 5) }, () => [
      pick(["n1", "n2", "n3"]),
      at(),
    ]);
    await sql(
      `INSERT INTO campaign_logs (workspace_id, campaign_id, enrollment_id, contact_id, node_id, outcome, created_at)
       SELECT $1, 'c1', $2, 'x', s.node, 'ok', s.at::timestamptz FROM jsonb_to_recordset($3::jsonb) AS s(node text, at text)`,
      [ws, id, JSON.stringify(steps.map(([node, time]) => ({ node, at: time })))],
    );
  }
}

/** Messages through the send path's own statements: inserted, claimed, sent, then opened, clicked, bounced, failed. */
async function feedMessages(ws: string, n: number) {
  const domains = ["gmail.com", "Yahoo.com", "example.org"];
  const fresh = Array.from({ length: n }, (_, i) => {
    const channel = pick(["email", "sms"] as const);
    const suppressed = random() < 0.2;
    return {
      id: newId(),
      contactId: null,
      channel,
      status: suppressed ? ("suppressed" as const) : ("queued" as const),
      reason: suppressed ? pick(["dnc", "unsubscribed", "frequency_cap"]) : null,
      to: channel === "email" ? `u${i}@${pick(domains)}` : `+1555000${i}`,
      templateId: null,
      locale: null,
      campaignId: random() < 0.5 ? pick(["c1", "c2"]) : null,
      enrollmentId: null,
      topic: null,
      transactional: false,
      providerId: null,
      content: null,
      variables: {},
      sendAt: new Date(Date.now() - 1000),
      deferred: null,
    };
  });
  await messages.insertMessages(asWorkspaceId(ws), fresh);
  const claimed = await messages.claimDue(n, 60_000);
  const failing = claimed.filter(() => random() < 0.15);
  for (const row of failing) await messages.markFailed(row, "provider said no");
  const sending = claimed.filter((row) => !failing.includes(row));
  await messages.markSent(
    sending.map((row) => ({
      row,
      providerType: "fake",
      providerId: null,
      providerMessageId: newId(),
      segments: null,
      content: { text: "hi" },
      locale: null,
      variant: null,
    })),
  );
  // Redelivered and out-of-order status facts: a click before an open, opens twice, a bounce after a click.
  for (const row of sending) {
    const roll = random();
    if (roll < 0.3) {
      await messages.recordClick(row.id);
      await messages.recordOpen(row.id);
      await messages.recordClick(row.id);
    } else if (roll < 0.5) {
      await messages.recordOpen(row.id);
      await messages.recordOpen(row.id);
    } else if (roll < 0.7) {
      const current = (await messages.getMessageById(row.id))!;
      await recordReport(current, {
        status: "bounced",
        moveTo: "bounced",
        reason: "hard_bounce",
        error: null,
      });
      await recordReport(current, { status: "bounced", moveTo: null, reason: "hard_bounce", error: null });
    } else if (roll < 0.8) {
      const current = (await messages.getMessageById(row.id))!;
      await recordReport(current, { status: "delivered", moveTo: "delivered", reason: null, error: null });
      await messages.recordOpen(row.id);
      const opened = (await messages.getMessageById(row.id))!;
      await recordReport(opened, { status: "complained", moveTo: "complained", reason: null, error: null });
    }
  }
}

beforeAll(async () => {
  // The fold runs when a test says (its timer stays out of the way), so each moment below is the one named.
  app = await startApp({
    services: ["api", "auth", "workspaces", "events", "contacts", "analytics"],
    env: { ANALYTICS_FOLD_MS: "3600000" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  console.log(`analytics property test seed ${SEED} (ANALYTICS_SEED=${SEED} replays it)`);
  await feedEvents(ctx.workspaceId, 300);
  await feedContactsAndSubmissions(ctx.workspaceId, 30);
  await feedMessages(ctx.workspaceId, 120);
  await feedCampaign(ctx.workspaceId, 40);
  await seedSegment(ctx.workspaceId);
}, 120_000);
afterAll(() => app.stop());

/** The answer's buckets recomputed in SQL: `date_trunc` in the zone, from the raw rows. */
const BUCKET = `date_trunc($2, at AT TIME ZONE $3) AT TIME ZONE $3`;
const FRAME = `at >= date_trunc($2, $4::timestamptz AT TIME ZONE $3) AT TIME ZONE $3
           AND at < (date_trunc($2, $5::timestamptz AT TIME ZONE $3) + ('1 ' || $2)::interval) AT TIME ZONE $3`;
const AMOUNT = `CASE WHEN jsonb_typeof(metadata -> 'amount') = 'number' THEN (metadata ->> 'amount')::numeric
                     WHEN jsonb_typeof(metadata -> 'amount') = 'string' AND metadata ->> 'amount' ~ '^\\s*-?[0-9]{1,15}(\\.[0-9]{1,6})?\\s*$'
                     THEN (metadata ->> 'amount')::numeric ELSE 0 END`;

/** Every fact the answers count, one row each: (metric, at, channel, campaign, dim, value). */
const FACTS = `
  SELECT 'events' AS metric, timestamp AS at, coalesce(metadata ->> 'channel', '') AS channel,
         coalesce(metadata ->> 'campaignId', '') AS campaign, type AS dim, 1::numeric AS value
    FROM events WHERE workspace_id = $1
  UNION ALL
  SELECT 'revenue', timestamp, '', coalesce(metadata ->> 'campaignId', ''), coalesce(utm_source, ''), ${AMOUNT}
    FROM events WHERE workspace_id = $1 AND type = 'purchase'
  UNION ALL
  SELECT 'orders', timestamp, '', coalesce(metadata ->> 'campaignId', ''), '', 1
    FROM events WHERE workspace_id = $1 AND type = 'purchase'
  UNION ALL
  SELECT 'link.clicks', timestamp, coalesce(metadata ->> 'channel', ''), coalesce(metadata ->> 'campaignId', ''),
         metadata ->> 'url', 1
    FROM events WHERE workspace_id = $1 AND type = 'message.click' AND metadata ->> 'url' IS NOT NULL
  UNION ALL
  SELECT 'enrollments', created_at, '', campaign_id, '', 1 FROM campaign_enrollments WHERE workspace_id = $1
  UNION ALL
  SELECT 'campaign.node', min(created_at), '', campaign_id, node_id, 1
    FROM campaign_logs WHERE workspace_id = $1 GROUP BY campaign_id, enrollment_id, node_id
  UNION ALL
  SELECT 'contacts', created_at, '', '', '', 1 FROM contacts WHERE workspace_id = $1
  UNION ALL
  SELECT 'submissions', created_at, '', '', '', 1 FROM form_submissions WHERE workspace_id = $1
  UNION ALL
  SELECT s.status, s.at, m.channel, coalesce(m.campaign_id, ''),
         CASE WHEN s.status IN ('suppressed', 'bounced') THEN coalesce(m.reason, '') ELSE '' END, 1
    FROM messages m
    CROSS JOIN LATERAL (
      SELECT 'sent' AS status, m.sent_at AS at UNION ALL SELECT 'delivered', m.delivered_at
      UNION ALL SELECT 'opened', m.opened_at UNION ALL SELECT 'clicked', m.clicked_at
      UNION ALL SELECT m.status, (SELECT min((h ->> 'at')::timestamptz) FROM jsonb_array_elements(m.history) h
                                   WHERE h ->> 'status' = m.status)
       WHERE m.status IN ('failed', 'bounced', 'complained', 'suppressed')) s
   WHERE m.workspace_id = $1 AND s.at IS NOT NULL
  UNION ALL
  SELECT 'domain.' || s.status, s.at, m.channel, coalesce(m.campaign_id, ''), lower(split_part(m.to_address, '@', 2)), 1
    FROM messages m
    CROSS JOIN LATERAL (
      SELECT 'sent' AS status, m.sent_at AS at UNION ALL SELECT 'delivered', m.delivered_at
      UNION ALL SELECT 'opened', m.opened_at UNION ALL SELECT 'clicked', m.clicked_at
      UNION ALL SELECT m.status, (SELECT min((h ->> 'at')::timestamptz) FROM jsonb_array_elements(m.history) h
                                   WHERE h ->> 'status' = m.status)
       WHERE m.status IN ('failed', 'bounced', 'complained', 'suppressed')) s
   WHERE m.workspace_id = $1 AND s.at IS NOT NULL AND m.channel = 'email'`;

interface Fact {
  metric: string;
  t: Date;
  channel: string;
  campaign: string;
  dim: string;
  value: string;
}

/** The raw facts inside the query's frame, each with the start of its bucket. */
async function rawFacts(q: { granularity: string; timezone: string; from: string; to: string }) {
  const facts = await rows<Fact>(
    `SELECT metric, ${BUCKET} AS t, channel, campaign, dim, value FROM (${FACTS}) f WHERE ${FRAME}`,
    [ctx.workspaceId, q.granularity, q.timezone, q.from, q.to],
  );
  return facts.map((f) => ({ ...f, t: new Date(f.t).toISOString(), value: Number(f.value) }));
}

/** With `segment`, a condition keeping the test segment's members (by `column`) only. */
const inSegment = (segment: boolean, column = "contact_id") =>
  segment
    ? `AND ${column} IN (SELECT contact_id FROM segment_members WHERE segment_id = '${SEGMENT_ID}')`
    : "";

/** The funnel from the raw events: each contact's first time of each type, then the same steps in SQL. */
async function rawFunnel(
  q: { granularity: string; timezone: string; from: string; to: string },
  steps: string[],
  windowDays: number,
  segment = false,
): Promise<number[]> {
  const joins = steps
    .slice(1)
    .map(
      (
        _,
        i,
      ) => `LEFT JOIN firsts f${i + 1} ON f${i + 1}.contact_id = f0.contact_id AND f${i + 1}.type = $${7 + i}
        AND f${i + 1}.at >= f${i}.at AND f${i + 1}.at <= f0.at + $6 * interval '1 day'`,
    )
    .join("\n");
  const [row] = await rows<Record<string, string>>(
    `WITH firsts AS (SELECT contact_id, type, min(timestamp) AS at FROM events
                      WHERE workspace_id = $1 AND contact_id IS NOT NULL GROUP BY 1, 2)
     SELECT ${steps.map((_, i) => `count(f${i}.at) AS s${i}`).join(", ")}
       FROM firsts f0 ${joins}
      WHERE f0.type = $5
        AND f0.at >= date_trunc('day', $2::timestamptz AT TIME ZONE $4) AT TIME ZONE $4
        AND f0.at < (date_trunc('day', $3::timestamptz AT TIME ZONE $4) + interval '1 day') AT TIME ZONE $4
        ${inSegment(segment, "f0.contact_id")}`,
    [ctx.workspaceId, q.from, q.to, q.timezone, steps[0], windowDays, ...steps.slice(1)],
  );
  return steps.map((_, i) => Number(row[`s${i}`]));
}

/** Sources from the raw events: each contact's first visit per source and medium, and its first conversion. */
async function rawSources(
  q: { timezone: string; from: string; to: string },
  conversion: string,
  segment = false,
) {
  const found = await rows<{ utm_source: string; medium: string; contacts: string; conversions: string }>(
    `WITH bounds AS (SELECT date_trunc('day', $2::timestamptz AT TIME ZONE $4) AT TIME ZONE $4 AS lo,
                            (date_trunc('day', $3::timestamptz AT TIME ZONE $4) + interval '1 day') AT TIME ZONE $4 AS hi),
          src AS (SELECT contact_id, utm_source, coalesce(utm_medium, '') AS medium, min(timestamp) AS at FROM events
                   WHERE workspace_id = $1 AND contact_id IS NOT NULL AND utm_source IS NOT NULL ${inSegment(segment)}
                   GROUP BY 1, 2, 3),
          conv AS (SELECT contact_id, min(timestamp) AS at FROM events
                    WHERE workspace_id = $1 AND contact_id IS NOT NULL AND type = $5 GROUP BY 1)
     SELECT src.utm_source, src.medium, count(*) AS contacts, count(conv.at) AS conversions
       FROM src CROSS JOIN bounds
       LEFT JOIN conv ON conv.contact_id = src.contact_id AND conv.at >= src.at AND conv.at < bounds.hi
      WHERE src.at >= bounds.lo AND src.at < bounds.hi
      GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2`,
    [ctx.workspaceId, q.from, q.to, q.timezone, conversion],
  );
  return found.map((r) => ({
    utmSource: r.utm_source,
    utmMedium: r.medium || null,
    contacts: Number(r.contacts),
    conversions: Number(r.conversions),
  }));
}

/**
 * Cohorts from the raw rows: each contact's first `event` (else its creation) and every bucket it did
 * anything in, both cut in the zone; then sizes and shares in plain code.
 */
async function rawCohorts(
  q: { granularity: string; timezone: string; from: string; to: string },
  event: string | null,
  starts: string[],
  segment = false,
) {
  const firsts = await rows<{ contact_id: string; t: Date }>(
    `SELECT contact_id, ${BUCKET} AS t FROM (${
      event === null
        ? `SELECT id AS contact_id, created_at AS at FROM contacts WHERE workspace_id = $1 ${inSegment(segment, "id")}`
        : `SELECT contact_id, min(timestamp) AS at FROM events
            WHERE workspace_id = $1 AND contact_id IS NOT NULL AND type = $6 ${inSegment(segment)} GROUP BY 1`
    }) f WHERE ${FRAME}`,
    [ctx.workspaceId, q.granularity, q.timezone, q.from, q.to, ...(event === null ? [] : [event])],
  );
  const active = await rows<{ contact_id: string; t: Date }>(
    `SELECT DISTINCT contact_id, ${BUCKET} AS t
       FROM (SELECT contact_id, timestamp AS at FROM events WHERE workspace_id = $1 AND contact_id IS NOT NULL) e
      WHERE ${FRAME}`,
    [ctx.workspaceId, q.granularity, q.timezone, q.from, q.to],
  );
  const index = new Map(starts.map((t, i) => [t, i]));
  const activeIn = new Set(active.map((a) => `${a.contact_id}:${index.get(new Date(a.t).toISOString())}`));
  return starts.map((cohort, i) => {
    const members = firsts.filter((f) => new Date(f.t).toISOString() === cohort).map((f) => f.contact_id);
    return {
      cohort,
      size: members.length,
      retention: starts
        .slice(i)
        .map((_, k) =>
          members.length ? members.filter((c) => activeIn.has(`${c}:${i + k}`)).length / members.length : 0,
        ),
    };
  });
}

/** A static segment of every other contact with events, written as the segments area keeps it. */
const SEGMENT_ID = newId();
async function seedSegment(ws: string) {
  const sequelize = await database();
  await sequelize.query(
    `INSERT INTO segments (id, workspace_id, name, type) VALUES ($1, $2, 'Half', 'static')`,
    {
      bind: [SEGMENT_ID, ws],
    },
  );
  await sequelize.query(
    `INSERT INTO segment_members (segment_id, contact_id)
     SELECT $1, contact_id FROM (SELECT DISTINCT contact_id FROM events WHERE workspace_id = $2 AND contact_id IS NOT NULL
                                  ORDER BY 1) c
      WHERE contact_id < (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY contact_id) FROM events
                           WHERE workspace_id = $2 AND contact_id IS NOT NULL)`,
    { bind: [SEGMENT_ID, ws] },
  );
}

/** The members' facts the events and contacts rows hold (the streamed messages and submissions have no contact). */
const MEMBER_FACTS = `
  SELECT 'events' AS metric, timestamp AS at, coalesce(metadata ->> 'channel', '') AS channel,
         coalesce(metadata ->> 'campaignId', '') AS campaign, type AS dim, 1::numeric AS value
    FROM events WHERE workspace_id = $1 AND contact_id IN (SELECT contact_id FROM segment_members WHERE segment_id = $6)
  UNION ALL
  SELECT 'revenue', timestamp, '', coalesce(metadata ->> 'campaignId', ''), '', ${AMOUNT}
    FROM events WHERE workspace_id = $1 AND type = 'purchase'
     AND contact_id IN (SELECT contact_id FROM segment_members WHERE segment_id = $6)
  UNION ALL
  SELECT 'contacts', created_at, '', '', '', 1
    FROM contacts WHERE workspace_id = $1 AND id IN (SELECT contact_id FROM segment_members WHERE segment_id = $6)`;

async function rawMemberFacts(q: { granularity: string; timezone: string; from: string; to: string }) {
  const facts = await rows<Fact>(
    `SELECT metric, ${BUCKET} AS t, channel, campaign, dim, value FROM (${MEMBER_FACTS}) f WHERE ${FRAME}`,
    [ctx.workspaceId, q.granularity, q.timezone, q.from, q.to, SEGMENT_ID],
  );
  return facts.map((f) => ({ ...f, t: new Date(f.t).toISOString(), value: Number(f.value) }));
}

/**
 * Attribution from the raw events: each conversion (an event of type `conversion` with a contact) in the range,
 * over its contact's UTM touches of the 30 days up to it that were stored by then (an event's `xmin`, the
 * transaction that stored it, orders the stream's statements; a touch stored later does not re-attribute),
 * ranked by time, kind and key; then given to the touches as `model` says. The streamed messages carry no
 * contact, so the events hold every touch. By `kind:key`. Without `storedOrder`, every touch counts (a rebuild's
 * rule: the raw rows do not say what was stored when).
 */
async function rawAttribution(
  q: { timezone: string; from: string; to: string },
  model: string,
  conversion: string,
  segment = false,
  storedOrder = true,
) {
  const found = await rows<{ id: string; amount: string; key: string; rank: string; touches: string }>(
    `WITH bounds AS (SELECT date_trunc('day', $2::timestamptz AT TIME ZONE $4) AT TIME ZONE $4 AS lo,
                            (date_trunc('day', $3::timestamptz AT TIME ZONE $4) + interval '1 day') AT TIME ZONE $4 AS hi),
          conv AS (SELECT e.id, e.contact_id, e.timestamp AS at, e.xmin::text::bigint AS stored, ${AMOUNT} AS amount
                     FROM events e CROSS JOIN bounds
                    WHERE workspace_id = $1 AND contact_id IS NOT NULL AND type = $5 ${inSegment(segment)}
                      AND timestamp >= bounds.lo AND timestamp < bounds.hi),
          touch AS (SELECT contact_id, timestamp AS at, utm_source AS key, min(xmin::text::bigint) AS stored FROM events
                     WHERE workspace_id = $1 AND contact_id IS NOT NULL AND utm_source IS NOT NULL GROUP BY 1, 2, 3)
     SELECT c.id, c.amount, t.key, row_number() OVER (PARTITION BY c.id ORDER BY t.at, t.key) AS rank,
            count(*) OVER (PARTITION BY c.id) AS touches
       FROM conv c JOIN touch t ON t.contact_id = c.contact_id ${storedOrder ? "AND t.stored <= c.stored" : ""}
        AND t.at <= c.at AND t.at > c.at - interval '30 days'`,
    [ctx.workspaceId, q.from, q.to, q.timezone, conversion],
  );
  const out: Record<string, { conversions: number; revenue: number }> = {};
  for (const f of found) {
    const [rank, touches, amount] = [Number(f.rank), Number(f.touches), Number(f.amount)];
    const share =
      model === "linear" ? 1 / touches : (model === "first_touch" ? rank === 1 : rank === touches) ? 1 : 0;
    if (!share) continue;
    const entry = (out[`source:${f.key}`] ??= { conversions: 0, revenue: 0 });
    entry.conversions += share;
    entry.revenue += amount * share;
  }
  return out;
}

/** An attribution answer's touches by `kind:key`. */
const touchesOf = (touches: Array<{ kind: string; key: string; conversions: number; revenue: number }>) =>
  Object.fromEntries(
    touches.map((t) => [`${t.kind}:${t.key}`, { conversions: t.conversions, revenue: t.revenue }]),
  );

const COUNT_KEYS = [
  "sent",
  "delivered",
  "opened",
  "clicked",
  "bounced",
  "complained",
  "unsubscribed",
  "failed",
  "suppressed",
];
type RawFact = Awaited<ReturnType<typeof rawFacts>>[number];
const sum = (facts: RawFact[]) => facts.reduce((s, f) => s + f.value, 0);
const countsOf = (facts: RawFact[], prefix = "") =>
  Object.fromEntries(COUNT_KEYS.map((k) => [k, sum(facts.filter((f) => f.metric === prefix + k))]));
const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;
/** Points with a value, as `t → value`, to compare with the raw facts grouped by bucket. */
const nonZero = (points: Array<{ t: string; value: number }>) =>
  Object.fromEntries(points.filter((p) => p.value !== 0).map((p) => [p.t, Math.round(p.value * 1e6) / 1e6]));
const byBucket = (facts: RawFact[]) => {
  const out: Record<string, number> = {};
  for (const f of facts) out[f.t] = (out[f.t] ?? 0) + f.value;
  for (const [t, v] of Object.entries(out))
    if (close(v, 0)) delete out[t];
    else out[t] = Math.round(v * 1e6) / 1e6;
  return out;
};

const overviewPoints = (points: Array<{ t: string }>) => points.map((p) => p.t);

/** Past the messages' own times (they move as the test runs). */
const later = new Date(Date.now() + 2 * 86_400_000).toISOString();
const QUERIES = [
  { granularity: "day", timezone: "Europe/Berlin", from: "2026-03-24T00:00:00Z", to: "2026-04-05T00:00:00Z" },
  {
    granularity: "hour",
    timezone: "Europe/Berlin",
    from: "2026-03-28T20:00:00Z",
    to: "2026-03-29T06:00:00Z",
  },
  { granularity: "hour", timezone: "Asia/Kolkata", from: "2026-03-26T00:00:00Z", to: "2026-03-31T00:00:00Z" },
  { granularity: "week", timezone: "America/New_York", from: "2026-03-01T00:00:00Z", to: later },
  { granularity: "day", timezone: "Asia/Kolkata", from: "2026-03-20T00:00:00Z", to: later },
  { granularity: "month", timezone: "UTC", from: "2026-01-01T00:00:00Z", to: later },
];

/** How many of the workspace's counts are rollup rows, and how many are deltas not yet folded. */
async function folding() {
  const [held] = await rows<{ rollups: string; deltas: string }>(
    `SELECT (SELECT count(*) FROM analytics_rollups WHERE workspace_id = $1) AS rollups,
            (SELECT count(*) FROM analytics_rollup_deltas WHERE workspace_id = $1) AS deltas`,
    [ctx.workspaceId],
  );
  return { rollups: Number(held.rollups), deltas: Number(held.deltas) };
}

/** Every answer for `q` against the raw recomputation (attribution by storage order unless rebuilt). */
async function answersEqualRaw(q: (typeof QUERIES)[number], storedOrder = true) {
  const query = (extra = "") =>
    `granularity=${q.granularity}&timezone=${encodeURIComponent(q.timezone)}&from=${encodeURIComponent(q.from)}&to=${encodeURIComponent(q.to)}${extra}`;
  const raw = await rawFacts(q);
  const client = ctx.owner.client;

  const overview = (await client.get(`${ctx.ws}/analytics?${query()}`)).body;
  expect(overview.counts).toEqual({ ...countsOf(raw), unsubscribed: 0 });
  expect(overview.events).toBe(sum(raw.filter((f) => f.metric === "events")));
  expect(overview.submissions).toBe(sum(raw.filter((f) => f.metric === "submissions")));
  expect(overview.contacts.new).toBe(sum(raw.filter((f) => f.metric === "contacts")));
  expect(close(overview.revenue, sum(raw.filter((f) => f.metric === "revenue")))).toBe(true);

  for (const metric of ["events", "contacts", "submissions", "revenue", ...COUNT_KEYS]) {
    const answer = (await client.get(`${ctx.ws}/analytics/timeseries?metric=${metric}&${query()}`)).body;
    expect(nonZero(answer.points)).toEqual(byBucket(raw.filter((f) => f.metric === metric)));
  }
  for (const [filter, keep] of [
    ["&channel=email", (f: RawFact) => f.channel === "email"],
    ["&campaignId=c1", (f: RawFact) => f.campaign === "c1"],
  ] as const) {
    const answer = (await client.get(`${ctx.ws}/analytics/timeseries?metric=events&${query(filter)}`)).body;
    expect(nonZero(answer.points)).toEqual(byBucket(raw.filter((f) => f.metric === "events" && keep(f))));
    const sent = (await client.get(`${ctx.ws}/analytics/timeseries?metric=sent&${query(filter)}`)).body;
    expect(nonZero(sent.points)).toEqual(byBucket(raw.filter((f) => f.metric === "sent" && keep(f))));
  }

  const activity = (await client.get(`${ctx.ws}/analytics/activity?${query()}`)).body;
  const events = raw.filter((f) => f.metric === "events");
  expect(nonZero(activity.points)).toEqual(byBucket(events));
  const types = Object.fromEntries(
    [...new Set(events.map((f) => f.dim))].map((type) => [type, sum(events.filter((f) => f.dim === type))]),
  );
  expect(
    Object.fromEntries(activity.byType.map((b: { type: string; count: number }) => [b.type, b.count])),
  ).toEqual(types);

  const revenue = (await client.get(`${ctx.ws}/analytics/revenue?${query("&campaignId=c2")}`)).body;
  const c2 = raw.filter((f) => f.campaign === "c2");
  expect(close(revenue.total, sum(c2.filter((f) => f.metric === "revenue")))).toBe(true);
  expect(revenue.orders).toBe(sum(c2.filter((f) => f.metric === "orders")));
  expect(nonZero(revenue.points)).toEqual(byBucket(c2.filter((f) => f.metric === "revenue")));

  const deliverability = (await client.get(`${ctx.ws}/analytics/deliverability?${query()}`)).body;
  const channels = [
    ...new Set(raw.filter((f) => COUNT_KEYS.includes(f.metric)).map((f) => f.channel)),
  ].sort();
  expect(deliverability.channels.map((c: { channel: string }) => c.channel)).toEqual(channels);
  for (const answer of deliverability.channels) {
    const own = raw.filter((f) => f.channel === answer.channel);
    expect(answer.counts).toEqual({ ...countsOf(own), unsubscribed: 0 });
    const reasons: Record<string, number> = {};
    for (const f of own.filter((f) => f.metric === "suppressed")) reasons[f.dim] = (reasons[f.dim] ?? 0) + 1;
    expect(answer.suppressed).toEqual(reasons);
  }

  const campaign = (await client.get(`${ctx.ws}/analytics/campaigns/c1?${query()}`)).body;
  const c1 = raw.filter((f) => f.campaign === "c1");
  const dims = (metric: string) => {
    const out: Record<string, number> = {};
    for (const f of c1.filter((f) => f.metric === metric)) out[f.dim] = (out[f.dim] ?? 0) + f.value;
    return out;
  };
  expect(campaign.enrollments).toBe(sum(c1.filter((f) => f.metric === "enrollments")));
  expect(campaign.counts).toEqual({ ...countsOf(c1), unsubscribed: 0 });
  expect(
    Object.fromEntries(campaign.nodes.map((n: { nodeId: string; entered: number }) => [n.nodeId, n.entered])),
  ).toEqual(dims("campaign.node"));
  expect(
    Object.fromEntries(campaign.links.map((l: { url: string; clicks: number }) => [l.url, l.clicks])),
  ).toEqual(dims("link.clicks"));

  for (const [steps, windowDays] of [
    ["page_view,signup,purchase", 3],
    ["signup,message.open", 30],
  ] as const) {
    const funnel = (
      await client.get(`${ctx.ws}/analytics/funnel?steps=${steps}&windowDays=${windowDays}&${query()}`)
    ).body;
    expect(funnel.steps.map((s: { contacts: number }) => s.contacts)).toEqual(
      await rawFunnel(q, steps.split(","), windowDays),
    );
  }

  const sources = (await client.get(`${ctx.ws}/analytics/sources?conversion=purchase&${query()}`)).body;
  expect(sources.sources).toEqual(await rawSources(q, "purchase"));

  const buckets = overviewPoints(
    (await client.get(`${ctx.ws}/analytics/timeseries?metric=events&${query()}`)).body.points,
  );
  for (const event of [null, "signup", "page_view"]) {
    const res = await client.get(`${ctx.ws}/analytics/cohorts?${query(event ? `&event=${event}` : "")}`);
    if (buckets.length > 120) {
      expect(res.status).toBe(400);
      continue;
    }
    expect(res.status).toBe(200);
    const expected = await rawCohorts(q, event, buckets);
    // Streamed events' contacts were created before the window: event cohorts are where retention varies.
    if (q === QUERIES[0] && event !== null)
      expect(expected.some((c) => c.size > 0 && c.retention.some((r) => r > 0 && r < 1))).toBe(true);
    expect(res.body.cohorts.map((c: { cohort: string; size: number }) => [c.cohort, c.size])).toEqual(
      expected.map((c) => [c.cohort, c.size]),
    );
    res.body.cohorts.forEach((c: { retention: number[] }, i: number) => {
      expect(c.retention).toHaveLength(expected[i].retention.length);
      c.retention.forEach((rate, k) => expect(close(rate, expected[i].retention[k])).toBe(true));
    });
  }

  // A segment's answers: its members' raw rows.
  const members = await rawMemberFacts(q);
  const segment = `&segmentId=${SEGMENT_ID}`;
  const narrowed = (await client.get(`${ctx.ws}/analytics?${query(segment)}`)).body;
  expect(narrowed.events).toBe(sum(members.filter((f) => f.metric === "events")));
  expect(narrowed.contacts.new).toBe(sum(members.filter((f) => f.metric === "contacts")));
  expect(close(narrowed.revenue, sum(members.filter((f) => f.metric === "revenue")))).toBe(true);
  const memberEvents = (await client.get(`${ctx.ws}/analytics/timeseries?metric=events&${query(segment)}`))
    .body;
  expect(nonZero(memberEvents.points)).toEqual(byBucket(members.filter((f) => f.metric === "events")));
  const memberEmail = (await client.get(`${ctx.ws}/analytics/activity?${query(`${segment}&channel=email`)}`))
    .body;
  expect(nonZero(memberEmail.points)).toEqual(
    byBucket(members.filter((f) => f.metric === "events" && f.channel === "email")),
  );
  const memberRevenue = (await client.get(`${ctx.ws}/analytics/revenue?${query(`${segment}&campaignId=c1`)}`))
    .body;
  expect(nonZero(memberRevenue.points)).toEqual(
    byBucket(members.filter((f) => f.metric === "revenue" && f.campaign === "c1")),
  );
  if (q === QUERIES[0]) expect(members.some((f) => f.metric === "events")).toBe(true);

  // The answers kept per contact, for the segment: its members' first times, sources, cohorts, conversions.
  for (const [steps, windowDays] of [
    ["page_view,signup,purchase", 3],
    ["signup,message.open", 30],
  ] as const) {
    const funnel = (
      await client.get(`${ctx.ws}/analytics/funnel?steps=${steps}&windowDays=${windowDays}&${query(segment)}`)
    ).body;
    expect(funnel.steps.map((s: { contacts: number }) => s.contacts)).toEqual(
      await rawFunnel(q, steps.split(","), windowDays, true),
    );
  }
  const memberSources = (
    await client.get(`${ctx.ws}/analytics/sources?conversion=purchase&${query(segment)}`)
  ).body;
  expect(memberSources.sources).toEqual(await rawSources(q, "purchase", true));
  if (buckets.length <= 120)
    for (const event of [null, "signup"]) {
      const res = await client.get(
        `${ctx.ws}/analytics/cohorts?${query(`${event ? `&event=${event}` : ""}${segment}`)}`,
      );
      const expected = await rawCohorts(q, event, buckets, true);
      expect(res.body.cohorts.map((c: { cohort: string; size: number }) => [c.cohort, c.size])).toEqual(
        expected.map((c) => [c.cohort, c.size]),
      );
      res.body.cohorts.forEach((c: { retention: number[] }, i: number) =>
        c.retention.forEach((rate, k) => expect(close(rate, expected[i].retention[k])).toBe(true)),
      );
    }
  for (const model of ["first_touch", "last_touch", "linear"])
    for (const conversion of ["purchase", "signup"])
      for (const narrowed of [false, true]) {
        const answer = (
          await client.get(
            `${ctx.ws}/analytics/attribution?model=${model}&conversion=${conversion}&${query(narrowed ? segment : "")}`,
          )
        ).body;
        const got = touchesOf(answer.touches);
        const expected = await rawAttribution(q, model, conversion, narrowed, storedOrder);
        if (q === QUERIES[0] && conversion === "purchase")
          expect(Object.keys(expected).length).toBeGreaterThan(0);
        expect(Object.keys(got).sort()).toEqual(Object.keys(expected).sort());
        for (const [key, { conversions, revenue }] of Object.entries(expected)) {
          expect({ key, conversions: close(got[key].conversions, conversions) }).toEqual({
            key,
            conversions: true,
          });
          expect({ key, revenue: close(got[key].revenue, revenue) }).toEqual({ key, revenue: true });
        }
      }

  const domains = (await client.get(`${ctx.ws}/analytics/domains?${query()}`)).body;
  const byDomain = raw.filter((f) => f.metric.startsWith("domain."));
  expect(domains.domains.map((d: { domain: string }) => d.domain).sort()).toEqual(
    [...new Set(byDomain.map((f) => f.dim))].sort(),
  );
  for (const answer of domains.domains)
    expect(answer.counts).toEqual({
      ...countsOf(
        byDomain.filter((f) => f.dim === answer.domain),
        "domain.",
      ),
      unsubscribed: 0,
    });
}

const EACH =
  "overview, timeseries of every metric, activity, revenue, deliverability, campaign, funnel, sources, cohorts, attribution, domains, and for a segment";

describe("before any fold", () => {
  test("every count is a delta", async () => {
    const held = await folding();
    expect(held.rollups).toBe(0);
    expect(held.deltas).toBeGreaterThan(0);
  });
  describe.each(QUERIES)("answers equal the raw recomputation ($granularity in $timezone)", (q) => {
    test(EACH, () => answersEqualRaw(q));
  });
});

describe("with facts written while folds run", () => {
  test("more facts of every kind, folded as they are written", async () => {
    let writing = true;
    let folded = 0;
    const folder = (async () => {
      while (writing) folded += await app.broker.call<number, object>("analytics.foldRollups", {});
    })();
    try {
      await feedEvents(ctx.workspaceId, 100);
      await feedContactsAndSubmissions(ctx.workspaceId, 10);
      await feedMessages(ctx.workspaceId, 40);
      await feedCampaign(ctx.workspaceId, 10);
    } finally {
      writing = false;
      await folder;
    }
    expect(folded).toBeGreaterThan(0);
    // And a few left unfolded, so the answers below read both.
    await feedEvents(ctx.workspaceId, 20);
    const held = await folding();
    expect(held.rollups).toBeGreaterThan(0);
    expect(held.deltas).toBeGreaterThan(0);
  }, 120_000);
  describe.each(QUERIES)("answers equal the raw recomputation ($granularity in $timezone)", (q) => {
    test(EACH, () => answersEqualRaw(q));
  });
});

describe("after the fold", () => {
  test("no delta is left", async () => {
    await app.broker.call("analytics.foldRollups");
    expect((await folding()).deltas).toBe(0);
  });
  describe.each(QUERIES)("answers equal the raw recomputation ($granularity in $timezone)", (q) => {
    test(EACH, () => answersEqualRaw(q));
  });
});

test("the streams really reached every status and both sides of the DST change", async () => {
  const [reached] = await rows<{ statuses: string[] }>(
    `SELECT array_agg(DISTINCT status ORDER BY status) AS statuses FROM messages WHERE workspace_id = $1`,
    [ctx.workspaceId],
  );
  expect(reached.statuses).toEqual(
    expect.arrayContaining(["bounced", "clicked", "complained", "failed", "opened", "sent", "suppressed"]),
  );
  const [spread] = await rows<{ before: string; after: string }>(
    `SELECT count(*) FILTER (WHERE timestamp < '2026-03-29T01:00:00Z') AS before,
            count(*) FILTER (WHERE timestamp >= '2026-03-29T01:00:00Z') AS after
       FROM events WHERE workspace_id = $1`,
    [ctx.workspaceId],
  );
  expect(Number(spread.before)).toBeGreaterThan(0);
  expect(Number(spread.after)).toBeGreaterThan(0);
});

/**
 * The workspace's analytics tables as sorted rows, by table: what the triggers and the fold keep. Attribution
 * (its rollups and conversions) is left out: a rebuild counts every touch held (see rawAttribution).
 */
const KEPT: Record<string, string> = {
  analytics_rollups: `SELECT metric, tier, bucket, channel, campaign_id, dim, trim_scale(value) AS value
                        FROM analytics_rollups WHERE workspace_id = $1 AND metric !~ '^(all:)?attr\\.'`,
  analytics_rollup_deltas: `SELECT * FROM analytics_rollup_deltas WHERE workspace_id = $1`,
  analytics_node_entries: `SELECT n.* FROM analytics_node_entries n JOIN campaigns c ON c.id = n.campaign_id
                            WHERE c.workspace_id = $1`,
  analytics_contact_firsts: `SELECT * FROM analytics_contact_firsts WHERE workspace_id = $1`,
  analytics_contact_sources: `SELECT * FROM analytics_contact_sources WHERE workspace_id = $1`,
  analytics_contact_created: `SELECT * FROM analytics_contact_created WHERE workspace_id = $1`,
  analytics_contact_activity: `SELECT * FROM analytics_contact_activity WHERE workspace_id = $1`,
  analytics_contact_touches: `SELECT * FROM analytics_contact_touches WHERE workspace_id = $1`,
  analytics_contact_opt_outs: `SELECT * FROM analytics_contact_opt_outs WHERE workspace_id = $1`,
};
async function kept(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [table, sql] of Object.entries(KEPT))
    out[table] = (await rows<object>(sql, [ctx.workspaceId])).map((row) => JSON.stringify(row)).sort();
  return out;
}

/** analytics.rebuildRollups for the workspace; each source's days as they cross the wire (ISO strings). */
const rebuild = async (range: { from?: string }) =>
  JSON.parse(
    JSON.stringify(
      await systemCall(app.broker, asWorkspaceId(ctx.workspaceId), "analytics.rebuildRollups", range),
    ),
  ) as Record<string, { from: string; to: string } | null>;

describe("rebuilt from the raw rows", () => {
  test("from nothing, every table the triggers and the fold keep equals the rebuild's, table by table", async () => {
    await app.broker.call("analytics.foldRollups");
    const before = await kept();
    expect(before.analytics_rollups.length).toBeGreaterThan(0);
    expect(before.analytics_contact_activity.length).toBeGreaterThan(0);
    expect(before.analytics_node_entries.length).toBeGreaterThan(0);
    // Everything derived dropped, as after a load with the triggers off.
    const sequelize = await database();
    for (const table of [...Object.keys(KEPT), "analytics_contact_conversions"])
      await sequelize.query(
        table === "analytics_node_entries"
          ? `DELETE FROM ${table} WHERE campaign_id IN (SELECT id FROM campaigns WHERE workspace_id = $1)`
          : `DELETE FROM ${table} WHERE workspace_id = $1`,
        { bind: [ctx.workspaceId] },
      );
    const rebuilt = await rebuild({});
    // Nothing was trimmed: every source from the beginning, through today.
    const today = new Date(Math.ceil(Date.now() / 86_400_000) * 86_400_000).toISOString();
    for (const source of ["events", "messages", "submissions", "contacts", "enrollments"])
      expect({ source, days: rebuilt[source] }).toEqual({
        source,
        days: { from: "1900-01-01T00:00:00.000Z", to: today },
      });
    const after = await kept();
    for (const table of Object.keys(KEPT))
      expect({ table, rows: after[table] }).toEqual({ table, rows: before[table] });
  }, 60_000);
  describe.each(QUERIES)("answers equal the raw recomputation ($granularity in $timezone)", (q) => {
    test(EACH, () => answersEqualRaw(q, false));
  });
});

// Last: it deletes raw rows the recomputations above read.
describe("after retention", () => {
  test("deleting raw rows leaves every answer as it was", async () => {
    const q = QUERIES[0];
    const path = `${ctx.ws}/analytics?granularity=day&timezone=Europe%2FBerlin&from=${q.from}&to=${q.to}`;
    const funnelPath = `${ctx.ws}/analytics/funnel?steps=page_view,signup,purchase&timezone=Europe%2FBerlin&from=${q.from}&to=${q.to}`;
    const before = (await ctx.owner.client.get(path)).body;
    const funnelBefore = (await ctx.owner.client.get(funnelPath)).body;
    const sourcesPath = `${ctx.ws}/analytics/sources?timezone=Europe%2FBerlin&from=${q.from}&to=${q.to}`;
    const sourcesBefore = (await ctx.owner.client.get(sourcesPath)).body;
    const cohortsPath = `${ctx.ws}/analytics/cohorts?event=signup&timezone=Europe%2FBerlin&from=${q.from}&to=${q.to}`;
    const cohortsBefore = (await ctx.owner.client.get(cohortsPath)).body;
    // The per-contact answers of a segment are kept facts too.
    const range = `timezone=Europe%2FBerlin&from=${q.from}&to=${q.to}&segmentId=${SEGMENT_ID}`;
    const memberPaths = [
      `${ctx.ws}/analytics/funnel?steps=page_view,signup,purchase&${range}`,
      `${ctx.ws}/analytics/sources?${range}`,
      `${ctx.ws}/analytics/cohorts?event=signup&${range}`,
      `${ctx.ws}/analytics/attribution?model=linear&${range}`,
      `${ctx.ws}/analytics/attribution?model=linear&timezone=Europe%2FBerlin&from=${q.from}&to=${q.to}`,
    ];
    const membersBefore = await Promise.all(
      memberPaths.map(async (p) => (await ctx.owner.client.get(p)).body),
    );
    expect(membersBefore[3].touches.length).toBeGreaterThan(0);
    const sequelize = await database();
    await sequelize.query(
      `DELETE FROM events WHERE workspace_id = $1 AND timestamp < '2026-03-30T00:00:00Z'`,
      {
        bind: [ctx.workspaceId],
      },
    );
    await sequelize.query(`DELETE FROM form_submissions WHERE workspace_id = $1`, {
      bind: [ctx.workspaceId],
    });
    expect((await ctx.owner.client.get(path)).body).toEqual(before);
    expect((await ctx.owner.client.get(funnelPath)).body).toEqual(funnelBefore);
    expect((await ctx.owner.client.get(sourcesPath)).body).toEqual(sourcesBefore);
    expect((await ctx.owner.client.get(cohortsPath)).body).toEqual(cohortsBefore);
    for (const [i, p] of memberPaths.entries())
      expect((await ctx.owner.client.get(p)).body).toEqual(membersBefore[i]);

    // A rebuild touches no day older than a source's oldest row kept, and no source with none left.
    const rebuilt = await rebuild({ from: "2026-01-01T00:00:00Z" });
    expect(Date.parse(rebuilt.events!.from)).toBeGreaterThanOrEqual(Date.parse("2026-03-30T00:00:00Z"));
    expect(rebuilt.submissions).toBeNull();
    expect((await ctx.owner.client.get(path)).body).toEqual(before);
    expect((await ctx.owner.client.get(funnelPath)).body).toEqual(funnelBefore);
    expect((await ctx.owner.client.get(sourcesPath)).body).toEqual(sourcesBefore);
    expect((await ctx.owner.client.get(cohortsPath)).body).toEqual(cohortsBefore);
    for (const [i, p] of memberPaths.entries())
      expect((await ctx.owner.client.get(p)).body).toEqual(membersBefore[i]);
  });
});
