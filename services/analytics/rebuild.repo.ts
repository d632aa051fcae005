import { Transaction } from "sequelize";
import { database, query, queryAcrossWorkspaces } from "../../lib/database";
import { FOLD_LOCK } from "./rollups.repo";
import { BEGINNING, type DayRange, type Kept, type RebuildSource } from "./rebuild-ranges";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The rebuild of a workspace's analytics from its raw rows (rebuild.ts): each
 * statement below is the set-based form of a trigger of migrations 0083-0109
 * or of the events' fold (0112; same keys, same values, same bucket), run once
 * over a source's days; the
 * rollups get their three tiers and `all:` series as the fold makes them.
 * `$1` is the workspace, `$2`/`$3` the days (UTC midnights).
 */

/** The rollup metrics each source's facts make: names and name prefixes (`all:` series added below). */
const METRICS: Record<RebuildSource, { names: string[]; prefixes: string[] }> = {
  events: { names: ["events", "revenue", "orders", "link.clicks"], prefixes: ["attr."] },
  messages: { names: [], prefixes: ["msg.", "domain."] },
  submissions: { names: ["submissions"], prefixes: [] },
  contacts: { names: ["contacts"], prefixes: [] },
  enrollments: { names: ["enrollments", "campaign.node"], prefixes: [] },
};
/**
 * `column` is one of the source's metrics, or its `all:` series: equalities and prefixes the key's index
 * answers. Opt-outs (`*.unsubscribed`) are facts of the outbox only (0083): never the rebuild's.
 */
const metricsOf = (source: RebuildSource, column: string) => {
  const { names, prefixes } = METRICS[source];
  const all = (list: string[]) => [...list, ...list.map((name) => `all:${name}`)];
  const terms = [
    ...(names.length
      ? [
          `${column} IN (${all(names)
            .map((name) => `'${name}'`)
            .join(", ")})`,
        ]
      : []),
    ...all(prefixes).map((prefix) => `${column} LIKE '${prefix}%'`),
  ];
  return `((${terms.join(" OR ")}) AND ${column} NOT LIKE '%.unsubscribed')`;
};

/** The facts (metric, at, channel, campaign_id, dim, value) each source's rows make, as its triggers add them. */
const FACTS: Record<RebuildSource, string> = {
  // The events' own facts (migration 0109's analytics_event_facts, which the events' fold derives too).
  events: `
    SELECT f.metric, n.timestamp AS at, f.channel, f.campaign_id, f.dim, f.value
      FROM events n
     CROSS JOIN LATERAL analytics_event_facts(n.type, n.metadata, n.utm_source) f
     WHERE n.workspace_id = $1 AND n.timestamp >= $2 AND n.timestamp < $3`,
  // 0083's analytics_messages_changed: sent, delivered, opened, clicked at their own times; each move into a
  // terminal status (its history entry after one of another status) at that status's first entry, with the
  // row's reason; again by domain for email.
  messages: `
    WITH reached AS (
      SELECT m.channel, m.campaign_id, m.to_address, s.status, s.at, NULL::text AS reason
        FROM messages m
       CROSS JOIN LATERAL (VALUES ('sent', m.sent_at), ('delivered', m.delivered_at), ('opened', m.opened_at),
                                  ('clicked', m.clicked_at)) AS s(status, at)
       WHERE m.workspace_id = $1 AND s.at >= $2 AND s.at < $3
      UNION ALL
      SELECT m.channel, m.campaign_id, m.to_address, h.status, h.first_at,
             CASE WHEN h.status IN ('suppressed', 'bounced') THEN m.reason END
        FROM messages m
       CROSS JOIN LATERAL (
         SELECT e.entry ->> 'status' AS status,
                min((e.entry ->> 'at')::timestamptz) OVER (PARTITION BY e.entry ->> 'status') AS first_at,
                lag(e.entry ->> 'status') OVER (ORDER BY e.i) AS before
           FROM jsonb_array_elements(m.history) WITH ORDINALITY AS e(entry, i)) h
       WHERE m.workspace_id = $1
         AND (m.history @> '[{"status": "failed"}]' OR m.history @> '[{"status": "bounced"}]'
              OR m.history @> '[{"status": "complained"}]' OR m.history @> '[{"status": "suppressed"}]')
         AND h.status IN ('failed', 'bounced', 'complained', 'suppressed') AND h.before IS DISTINCT FROM h.status
         AND h.first_at >= $2 AND h.first_at < $3
    )
    SELECT 'msg.' || x.status AS metric, x.at, x.channel, analytics_key(x.campaign_id) AS campaign_id,
           analytics_key(x.reason) AS dim, 1::numeric AS value
      FROM reached x
    UNION ALL
    SELECT 'domain.' || x.status, x.at, x.channel, analytics_key(x.campaign_id),
           analytics_key(lower(split_part(x.to_address, '@', 2))), 1
      FROM reached x
     WHERE x.channel = 'email'`,
  submissions: `
    SELECT 'submissions' AS metric, created_at AS at, '' AS channel, '' AS campaign_id, form_id AS dim, 1::numeric AS value
      FROM form_submissions WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3`,
  contacts: `
    SELECT 'contacts' AS metric, created_at AS at, '' AS channel, '' AS campaign_id, '' AS dim, 1::numeric AS value
      FROM contacts WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3`,
  // 0084: enrollments by creation; each enrollment's node counted once, at its first step there.
  enrollments: `
    SELECT 'enrollments' AS metric, created_at AS at, '' AS channel, campaign_id, '' AS dim, 1::numeric AS value
      FROM campaign_enrollments WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3
    UNION ALL
    SELECT 'campaign.node', e.at, '', e.campaign_id, e.node_id, 1
      FROM (SELECT campaign_id, analytics_key(node_id) AS node_id, min(created_at) AS at FROM campaign_logs
             WHERE workspace_id = $1 GROUP BY campaign_id, enrollment_id, analytics_key(node_id)) e
     WHERE e.at >= $2 AND e.at < $3`,
};

/** 0099's attribution rollups, from the conversions kept (first touch first): each row's touches as it ranks them. */
const ATTRIBUTION_FACTS = `
  SELECT 'attr.' || m.model || '.' || v.measure || '.' || c.type AS metric, c.at, t.kind AS channel, '' AS campaign_id,
         t.key AS dim, CASE v.measure WHEN 'conversions' THEN 1::numeric ELSE c.amount END / m.share AS value
    FROM analytics_contact_conversions c
   CROSS JOIN LATERAL unnest(c.kinds, c.keys) WITH ORDINALITY AS t(kind, key, i)
   CROSS JOIN LATERAL (VALUES ('first_touch', t.i = 1, 1::numeric),
                              ('last_touch', t.i = cardinality(c.kinds), 1::numeric),
                              ('linear', true, cardinality(c.kinds)::numeric)) AS m(model, counts, share)
   CROSS JOIN (VALUES ('conversions'), ('revenue')) AS v(measure)
   WHERE c.workspace_id = $1 AND c.at >= $2 AND c.at < $3 AND m.counts`;

/**
 * Facts added at the three tiers and to their `all:` series, as the fold adds deltas (rollups.repo.ts): summed by
 * 15-minute key first, so the tiers and series expand the keys, not every fact.
 */
const addRollups = (facts: string) => `
  WITH quarter AS MATERIALIZED (
    SELECT f.metric, analytics_bucket(f.at) AS bucket, f.channel, f.campaign_id, f.dim, sum(f.value) AS value
      FROM (${facts}) f
     GROUP BY 1, 2, 3, 4, 5
  )
  INSERT INTO analytics_rollups AS r (workspace_id, metric, tier, bucket, channel, campaign_id, dim, value)
  SELECT $1, x.metric, t.tier,
         CASE t.tier WHEN 0 THEN q.bucket
                     WHEN 1 THEN date_trunc('hour', q.bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                     ELSE date_trunc('day', q.bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END,
         x.channel, x.campaign, x.dim, sum(q.value)
    FROM quarter q
   CROSS JOIN LATERAL (VALUES (q.metric, q.channel, q.campaign_id, q.dim), ('all:' || q.metric, '', '', ''))
                      AS x(metric, channel, campaign, dim)
   CROSS JOIN (VALUES (0::smallint), (1::smallint), (2::smallint)) AS t(tier)
   GROUP BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT (workspace_id, metric, tier, bucket, channel, campaign_id, dim)
  DO UPDATE SET value = r.value + EXCLUDED.value`;

/** A source's counts in the days dropped: its rollup rows at every tier and its deltas not yet folded. */
const CLEAR = (source: RebuildSource) => [
  `DELETE FROM analytics_rollup_deltas d
    WHERE d.workspace_id = $1 AND d.bucket >= $2 AND d.bucket < $3 AND ${metricsOf(source, "d.metric")}`,
  `DELETE FROM analytics_rollups r
    WHERE r.workspace_id = $1 AND r.bucket >= $2 AND r.bucket < $3 AND ${metricsOf(source, "r.metric")}`,
];

/**
 * The per-contact facts of the events of the days (0084, 0089, 0099, 0109): first times and first sources
 * (an earlier one kept before the days stays), activity buckets, UTM touches, then the conversions in the days
 * attributed over every touch held in the 30 days up to each (0099's own backfill rule).
 */
const CONTACT_FACTS = [
  `DELETE FROM analytics_contact_firsts WHERE workspace_id = $1 AND first_at >= $2 AND first_at < $3`,
  `INSERT INTO analytics_contact_firsts AS f (workspace_id, contact_id, type, first_at)
   SELECT workspace_id, contact_id, analytics_key(type), min(timestamp) FROM events
    WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3 AND contact_id IS NOT NULL
    GROUP BY 1, 2, 3
   ON CONFLICT (workspace_id, contact_id, type)
   DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at`,
  `DELETE FROM analytics_contact_sources WHERE workspace_id = $1 AND first_at >= $2 AND first_at < $3`,
  `INSERT INTO analytics_contact_sources AS f (workspace_id, contact_id, utm_source, utm_medium, first_at)
   SELECT workspace_id, contact_id, analytics_key(utm_source), analytics_key(utm_medium), min(timestamp) FROM events
    WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3 AND contact_id IS NOT NULL AND utm_source IS NOT NULL
    GROUP BY 1, 2, 3, 4
   ON CONFLICT (workspace_id, contact_id, utm_source, utm_medium)
   DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at`,
  `DELETE FROM analytics_contact_activity WHERE workspace_id = $1 AND bucket >= $2 AND bucket < $3`,
  `INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
   SELECT DISTINCT workspace_id, contact_id, analytics_bucket(timestamp) FROM events
    WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3 AND contact_id IS NOT NULL
   ON CONFLICT DO NOTHING`,
  `DELETE FROM analytics_contact_touches
    WHERE workspace_id = $1 AND kind = 'source' AND at >= $2 AND at < $3`,
  `INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
   SELECT DISTINCT workspace_id, contact_id, timestamp, 'source', analytics_key(utm_source) FROM events
    WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3 AND contact_id IS NOT NULL AND utm_source IS NOT NULL`,
  `DELETE FROM analytics_contact_conversions WHERE workspace_id = $1 AND at >= $2 AND at < $3`,
  `INSERT INTO analytics_contact_conversions (workspace_id, contact_id, type, at, event_id, amount, kinds, keys)
   SELECT n.workspace_id, n.contact_id, analytics_key(n.type), n.timestamp, n.id, analytics_amount(n.metadata -> 'amount'),
          array_agg(t.kind ORDER BY t.at, t.kind, t.key), array_agg(t.key ORDER BY t.at, t.kind, t.key)
     FROM events n
     JOIN analytics_contact_touches t
       ON t.workspace_id = n.workspace_id AND t.contact_id = n.contact_id
      AND t.at <= n.timestamp AND t.at > n.timestamp - interval '30 days'
    WHERE n.workspace_id = $1 AND n.timestamp >= $2 AND n.timestamp < $3
      AND n.contact_id IS NOT NULL AND n.type <> 'page_view' AND n.type NOT LIKE 'message.%'
    GROUP BY n.workspace_id, n.contact_id, n.type, n.timestamp, n.id, n.metadata`,
];

/** The days' events still pending (0112): counted from their rows here, so the fold must not derive them again. */
const PENDING_EVENTS = `DELETE FROM analytics_events_pending WHERE workspace_id = $1 AND timestamp >= $2 AND timestamp < $3`;

/** Campaign messages sent in the days as touches (0089), before the conversions read them. */
const MESSAGE_TOUCHES = [
  `DELETE FROM analytics_contact_touches
    WHERE workspace_id = $1 AND kind = 'campaign' AND at >= $2 AND at < $3`,
  `INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
   SELECT DISTINCT workspace_id, contact_id, sent_at, 'campaign', analytics_key(campaign_id) FROM messages
    WHERE workspace_id = $1 AND sent_at >= $2 AND sent_at < $3 AND contact_id IS NOT NULL AND campaign_id IS NOT NULL`,
];

/** The days' contacts' creations (0089) and (enrollment, node) pairs first stepped in (0084), added if missing. */
const CONTACTS_CREATED = `
  INSERT INTO analytics_contact_created (workspace_id, contact_id, created_at)
  SELECT workspace_id, id, created_at FROM contacts WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3
  ON CONFLICT DO NOTHING`;
const NODE_ENTRIES = `
  INSERT INTO analytics_node_entries (campaign_id, enrollment_id, node_id)
  SELECT campaign_id, enrollment_id, analytics_key(node_id) FROM campaign_logs WHERE workspace_id = $1
   GROUP BY 1, 2, 3 HAVING min(created_at) >= $2 AND min(created_at) < $3
  ON CONFLICT DO NOTHING`;

/** What each retained source's oldest row is, and the rollup metrics each of its rows adds one to. */
const RETAINED = {
  events: {
    oldest: `SELECT min(timestamp) AS at FROM events WHERE workspace_id = $1`,
    counts: `m = 'events'`,
  },
  messages: {
    oldest: `SELECT min(created_at) AS at FROM messages WHERE workspace_id = $1`,
    counts: `m LIKE 'msg.%' AND m NOT LIKE '%.unsubscribed'`,
  },
  submissions: {
    oldest: `SELECT min(created_at) AS at FROM form_submissions WHERE workspace_id = $1`,
    counts: `m = 'submissions'`,
  },
} as const;
const countsOf = (counts: string, column: string) => `(SELECT ${counts} FROM (SELECT ${column} AS m) x)`;
const QUARTER_MS = 900_000;
/** Where "ever" ends: nothing the service holds is newer. */
const END_OF_TIME = new Date(Date.UTC(9999, 0, 1));

/**
 * Each retained source's oldest row kept, and whether it was trimmed: its counts (rollups and deltas) up to the
 * end of that row's 15-minute bucket (or ever, with no row left) exceed what its rows make there.
 */
export async function keptRows(workspaceId: WorkspaceId): Promise<Kept> {
  const kept = {} as Kept;
  for (const source of Object.keys(RETAINED) as Array<keyof typeof RETAINED>) {
    const { oldest, counts } = RETAINED[source];
    const [first] = await query<{ at: Date | null }>(workspaceId, oldest);
    const at = first.at === null ? null : new Date(first.at);
    const edge =
      at === null ? END_OF_TIME : new Date((Math.floor(at.getTime() / QUARTER_MS) + 1) * QUARTER_MS);
    const [row] = await query<{ trimmed: boolean }>(
      workspaceId,
      `WITH made AS (SELECT count(*) AS n FROM (${FACTS[source]}) f WHERE ${countsOf(counts, "f.metric")}),
            counted AS (
              SELECT coalesce(sum(value), 0) AS n FROM analytics_rollups
               WHERE workspace_id = $1 AND tier = 0 AND bucket < $3 AND metric LIKE 'all:%'
                 AND ${countsOf(counts, "substr(metric, 5)")}
              UNION ALL
              SELECT coalesce(sum(value), 0) FROM analytics_rollup_deltas
               WHERE workspace_id = $1 AND bucket < $3 AND ${countsOf(counts, "metric")})
       SELECT (SELECT sum(n) FROM counted) > (SELECT n FROM made) AS trimmed`,
      [BEGINNING, edge],
    );
    kept[source] = { oldest: at, trimmed: row.trimmed };
  }
  return kept;
}

/** How long a rebuild waits before trying the fold's lock again (a fold holds it for one batch). */
const LOCK_RETRY_MS = 200;

/**
 * Rebuild each source's days given (null: left as they are) in one repeatable-read transaction. Its first
 * statement takes the fold's advisory lock (tried again until no fold holds it), so its snapshot holds every
 * fold committed before and the folds skip their turns until it commits (readers are not held; a fold that
 * commits between the snapshot and the lock makes it fail on a serialization error, never count twice); a fact
 * stored meanwhile is outside its snapshot and keeps its own delta.
 * The contacts' rollups are rebuilt only if no contact created in the days was removed since (the removal's
 * count is kept, the contact's row is gone): answers which sources were rebuilt.
 */
export async function rebuild(
  workspaceId: WorkspaceId,
  ranges: Record<RebuildSource, DayRange | null>,
): Promise<Record<RebuildSource, boolean>> {
  const sequelize = await database();
  for (;;) {
    const done = await sequelize.transaction(
      { isolationLevel: Transaction.ISOLATION_LEVELS.REPEATABLE_READ },
      (transaction) => rebuildLocked(workspaceId, ranges, transaction),
    );
    if (done) return done;
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

/** The rebuild in its transaction; null (nothing done) when a fold holds the lock. */
async function rebuildLocked(
  workspaceId: WorkspaceId,
  ranges: Record<RebuildSource, DayRange | null>,
  transaction: Transaction,
): Promise<Record<RebuildSource, boolean> | null> {
  const [lock] = await queryAcrossWorkspaces<{ held: boolean }>(
    `SELECT pg_try_advisory_xact_lock($1) AS held`,
    [FOLD_LOCK],
    transaction,
  );
  if (!lock.held) return null;
  // A year of facts is grouped and sorted in memory rather than on disk (this transaction only).
  await queryAcrossWorkspaces(`SET LOCAL work_mem = '256MB'`, [], transaction);
  const run = async (range: DayRange, statements: string[]) => {
    for (const sql of statements) await query(workspaceId, sql, [range.from, range.to], transaction);
  };
  const rollups = (source: RebuildSource, facts: string) => [...CLEAR(source), addRollups(facts)];
  const done: Record<RebuildSource, boolean> = {
    events: false,
    messages: false,
    submissions: false,
    contacts: false,
    enrollments: false,
  };
  const { events, messages, submissions, contacts, enrollments } = ranges;
  if (messages) {
    await run(messages, [...rollups("messages", FACTS.messages), ...MESSAGE_TOUCHES]);
    done.messages = true;
  }
  if (events) {
    await run(events, [
      PENDING_EVENTS,
      ...CONTACT_FACTS,
      ...rollups("events", FACTS.events),
      addRollups(ATTRIBUTION_FACTS),
    ]);
    done.events = true;
  }
  if (submissions) {
    await run(submissions, rollups("submissions", FACTS.submissions));
    done.submissions = true;
  }
  if (contacts) {
    await run(contacts, [CONTACTS_CREATED]);
    const [removed] = await query<{ any: boolean }>(
      workspaceId,
      `SELECT EXISTS (SELECT 1 FROM analytics_rollups
                           WHERE workspace_id = $1 AND metric = 'all:contacts.removed' AND tier = 2 AND bucket >= $2)
               OR EXISTS (SELECT 1 FROM analytics_rollup_deltas
                           WHERE workspace_id = $1 AND metric = 'contacts.removed' AND bucket >= $2) AS any`,
      [contacts.from],
      transaction,
    );
    if (!removed.any) {
      await run(contacts, rollups("contacts", FACTS.contacts));
      done.contacts = true;
    }
  }
  if (enrollments) {
    await run(enrollments, [NODE_ENTRIES, ...rollups("enrollments", FACTS.enrollments)]);
    done.enrollments = true;
  }
  return done;
}
