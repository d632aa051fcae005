import { Binds, query } from "../../lib/database";
import type { RollupKey, RollupQuery, RollupRow } from "./rollups.repo";
import { sourcesOf, type SegmentSource } from "./segment-metrics";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Sums for a segment (`segmentId`): rollups are not kept per segment (its
 * members change), so these are the same facts the rollup triggers count,
 * taken from the raw rows of the segment's current members, by each table's
 * per-contact index, over the frame only: events (and purchases, link clicks),
 * messages reaching each status, form submissions, campaign enrollments and
 * their first entry of each node, and the kept per-contact facts of migration
 * 0089 (creation, opt-outs). The cost grows with the members' rows
 * in the range, not the workspace's. Same row shape as `sumRollups`.
 */

const KEY_SQL: Record<Exclude<RollupKey, "period">, string> = {
  metric: "f.metric",
  channel: "f.channel",
  campaign: "f.campaign",
  dim: "f.dim",
};

/** `$1` workspace, `$2` segment, `$3` and `$4` the frame's start and end. Each branch yields (metric, at, channel, campaign, dim, value). */
const MEMBERS = `SELECT sm.contact_id FROM segment_members sm JOIN segments s ON s.id = sm.segment_id
                  WHERE sm.segment_id = $2 AND s.workspace_id = $1`;
const EVENTS = `
  SELECT x.metric, e.timestamp AS at,
         CASE WHEN x.metric IN ('events', 'link.clicks') THEN analytics_key(e.metadata ->> 'channel') ELSE '' END AS channel,
         analytics_key(e.metadata ->> 'campaignId') AS campaign,
         CASE x.metric WHEN 'events' THEN analytics_key(e.type)
                       WHEN 'link.clicks' THEN coalesce(left(e.metadata ->> 'url', 500), '')
                       ELSE analytics_key(e.utm_source) END AS dim,
         CASE x.metric WHEN 'revenue' THEN analytics_amount(e.metadata -> 'amount') ELSE 1 END AS value
    FROM segment_contacts m
    JOIN events e ON e.contact_id = m.contact_id AND e.timestamp >= $3 AND e.timestamp < $4
    JOIN LATERAL (VALUES ('events'), ('revenue'), ('orders'), ('link.clicks')) AS x(metric)
      ON x.metric = 'events'
      OR (x.metric IN ('revenue', 'orders') AND e.type = 'purchase')
      OR (x.metric = 'link.clicks' AND e.type = 'message.click' AND e.metadata ->> 'url' IS NOT NULL)
   WHERE e.workspace_id = $1`;
const MESSAGES = `
  SELECT x.prefix || s.status AS metric, s.at, g.channel, analytics_key(g.campaign_id) AS campaign,
         CASE WHEN x.prefix = 'domain.' THEN analytics_key(lower(split_part(g.to_address, '@', 2)))
              WHEN s.status IN ('suppressed', 'bounced') THEN analytics_key(g.reason) ELSE '' END AS dim,
         1::numeric AS value
    FROM segment_contacts m
    -- A message reaches its statuses after it is created: the contact index's range ends at the frame's end.
    JOIN messages g ON g.contact_id = m.contact_id AND g.workspace_id = $1 AND g.created_at < $4
   CROSS JOIN LATERAL (VALUES ('sent', g.sent_at), ('delivered', g.delivered_at), ('opened', g.opened_at),
                              ('clicked', g.clicked_at),
                              (g.status, CASE WHEN g.status IN ('failed', 'bounced', 'complained', 'suppressed')
                                              THEN (SELECT min((h ->> 'at')::timestamptz)
                                                      FROM jsonb_array_elements(g.history) h
                                                     WHERE h ->> 'status' = g.status) END)) AS s(status, at)
    JOIN (VALUES ('msg.'), ('domain.')) AS x(prefix) ON x.prefix = 'msg.' OR g.channel = 'email'
   WHERE s.at >= $3 AND s.at < $4`;
const SUBMISSIONS = `
  SELECT 'submissions', f.created_at, '', '', f.form_id, 1::numeric
    FROM segment_contacts m JOIN form_submissions f ON f.contact_id = m.contact_id
   WHERE f.workspace_id = $1 AND f.created_at >= $3 AND f.created_at < $4`;
const CREATED = `
  SELECT 'contacts', c.created_at, '', '', '', 1::numeric
    FROM segment_contacts m JOIN analytics_contact_created c ON c.workspace_id = $1 AND c.contact_id = m.contact_id
   WHERE c.created_at >= $3 AND c.created_at < $4`;
const OPT_OUTS = `
  SELECT 'msg.unsubscribed', o.at, o.channel, o.campaign_id, '', 1::numeric
    FROM segment_contacts m JOIN analytics_contact_opt_outs o ON o.workspace_id = $1 AND o.contact_id = m.contact_id
   WHERE o.at >= $3 AND o.at < $4`;
const ENROLLMENTS = `
  SELECT 'enrollments', n.created_at, '', n.campaign_id, '', 1::numeric
    FROM segment_contacts m JOIN campaign_enrollments n ON n.workspace_id = $1 AND n.contact_id = m.contact_id
   WHERE n.created_at >= $3 AND n.created_at < $4`;
/** Each enrollment's first entry of each node (what analytics_node_entries keeps), at its first log's time. */
const NODE_ENTRIES = `
  SELECT 'campaign.node', l.at, '', n.campaign_id, l.node_id, 1::numeric
    FROM segment_contacts m
    -- An enrollment logs its nodes after it is created: the contact index's range ends at the frame's end.
    JOIN campaign_enrollments n ON n.workspace_id = $1 AND n.contact_id = m.contact_id AND n.created_at < $4
   CROSS JOIN LATERAL (SELECT analytics_key(g.node_id) AS node_id, min(g.created_at) AS at
                         FROM campaign_logs g WHERE g.enrollment_id = n.id GROUP BY 1) l
   WHERE l.at >= $3 AND l.at < $4`;

const BRANCHES: Record<SegmentSource, string> = {
  events: EVENTS,
  messages: MESSAGES,
  submissions: SUBMISSIONS,
  created: CREATED,
  optOuts: OPT_OUTS,
  enrollments: ENROLLMENTS,
  nodeEntries: NODE_ENTRIES,
};

/**
 * A condition: `contact` (a column, qualified by its table's alias) is a current member of the segment bound
 * at `segment`, a segment of the workspace bound at `$1`. For the answers
 * read from per-contact facts (firsts.repo.ts, cohorts.repo.ts), which stay
 * exact for a segment without touching raw rows.
 */
export const memberOf = (contact: string, segment: string) =>
  `EXISTS (SELECT 1 FROM segment_members member_of JOIN segments member_seg ON member_seg.id = member_of.segment_id
            WHERE member_of.segment_id = ${segment} AND member_seg.workspace_id = $1 AND member_of.contact_id = ${contact})`;

/** Sums over the frame for the segment's current members, one row per distinct value of `by`. */
export async function sumForSegment(
  workspaceId: WorkspaceId,
  segmentId: string,
  q: RollupQuery,
): Promise<RollupRow[]> {
  const branches = [...sourcesOf(q.metrics)].map((source) => BRANCHES[source]);
  if (!branches.length) return [];
  const binds = Binds.inWorkspace([segmentId, q.edges[0], q.edges[q.edges.length - 1]]);
  const keys = q.by.map((key) =>
    key === "period"
      ? `width_bucket(f.at, ${binds.p(q.edges, "timestamptz[]")}) AS period`
      : `${KEY_SQL[key]} AS ${key}`,
  );
  const where = [`f.metric = ANY (${binds.p(q.metrics, "text[]")})`];
  if (q.channel !== undefined) where.push(`f.channel = ${binds.p(q.channel)}`);
  if (q.campaignId !== undefined) where.push(`f.campaign = ${binds.p(q.campaignId)}`);
  const rows = await query<Record<string, string | number>>(
    workspaceId,
    `WITH segment_contacts AS (${MEMBERS})
     SELECT ${[...keys, "sum(f.value) AS value"].join(", ")}
       FROM (${branches.join("\nUNION ALL\n")}) AS f(metric, at, channel, campaign, dim, value)
      WHERE ${where.join(" AND ")}
      ${q.by.length ? `GROUP BY ${q.by.map((_, i) => i + 1).join(", ")}` : ""}`,
    binds.values,
  );
  return rows.map((row) => ({ ...row, value: Number(row.value) }));
}

/** The segment's current members created before `end`: its contacts held then (none of them removed). */
export async function membersBefore(workspaceId: WorkspaceId, segmentId: string, end: Date): Promise<number> {
  const [row] = await query<{ n: string }>(
    workspaceId,
    `SELECT count(*) AS n FROM segment_members sm
       JOIN segments s ON s.id = sm.segment_id AND s.workspace_id = $1
       JOIN analytics_contact_created c ON c.workspace_id = $1 AND c.contact_id = sm.contact_id
      WHERE sm.segment_id = $2 AND c.created_at < $3`,
    [segmentId, end],
  );
  return Number(row.n);
}

/**
 * Attribution for the segment's current members: their conversions of type
 * `conversion` in `[start, end)` as stored with their touches (migration
 * 0099), given to the touches as `model` gives them, summed by touch kind
 * (`channel`) and key (`dim`). The same rows, metrics and values the
 * attribution rollups hold for these conversions.
 */
export async function attributionForSegment(
  workspaceId: WorkspaceId,
  segmentId: string,
  model: string,
  conversion: string,
  start: Date,
  end: Date,
): Promise<RollupRow[]> {
  const rows = await query<{ metric: string; channel: string; dim: string; value: string }>(
    workspaceId,
    `WITH segment_contacts AS (${MEMBERS})
     SELECT 'attr.' || m.model || '.' || v.measure || '.' || c.type AS metric, t.kind AS channel, t.key AS dim,
            sum(CASE v.measure WHEN 'conversions' THEN 1::numeric ELSE c.amount END / m.share) AS value
       FROM segment_contacts sc
       JOIN analytics_contact_conversions c
         ON c.workspace_id = $1 AND c.contact_id = sc.contact_id AND c.type = $4 AND c.at >= $5 AND c.at < $6
      CROSS JOIN LATERAL unnest(c.kinds, c.keys) WITH ORDINALITY AS t(kind, key, i)
      CROSS JOIN LATERAL (VALUES ('first_touch', t.i = 1, 1::numeric),
                                 ('last_touch', t.i = cardinality(c.kinds), 1::numeric),
                                 ('linear', true, cardinality(c.kinds)::numeric)) AS m(model, counts, share)
      CROSS JOIN (VALUES ('conversions'), ('revenue')) AS v(measure)
      WHERE m.model = $3 AND m.counts
      GROUP BY 1, 2, 3`,
    [segmentId, model, conversion, start, end],
  );
  return rows.map((row) => ({ ...row, value: Number(row.value) }));
}
