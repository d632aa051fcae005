import { pointsOf, spanOf, type Frame } from "./buckets";
import { fieldError } from "../../lib/errors";
import {
  type AttributionModel,
  COUNT_KEYS,
  FUNNEL_STEPS,
  type Counts,
  type CountKey,
  type Metric,
  type Rates,
} from "./analytics.schemas";
import { funnelCounts, sourceCounts } from "./firsts.repo";
import * as realtimeRepo from "./realtime.repo";
import { cohortCounts } from "./cohorts.repo";
import { sumBefore, sumRollups, type RollupQuery, type RollupRow } from "./rollups.repo";
import { attributionForSegment, membersBefore, sumForSegment } from "./segment.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The analytics answers, each a few sums over the rollups. Filters: `channel`
 * narrows message counts and events (by the event's `metadata.channel`);
 * `campaignId` narrows message counts, events and revenue (by
 * `metadata.campaignId`); contacts and submissions are the workspace's.
 * `segmentId` narrows every figure to the segment's current members: the
 * rollup answers summed from their raw rows (segment.repo.ts), the funnel,
 * sources, cohorts and attribution from their per-contact facts.
 */

export interface Scope {
  workspaceId: WorkspaceId;
  frame: Frame;
  channel?: string;
  campaignId?: string;
  segmentId?: string;
}

/** Sums over the rollups, or over the segment's members' rows. */
const sums = (s: Scope, q: RollupQuery) =>
  s.segmentId ? sumForSegment(s.workspaceId, s.segmentId, q) : sumRollups(s.workspaceId, q);

/** Contacts held at `end`: created minus removed, or the segment's current members created by then. */
async function heldAt(s: Scope, end: Date): Promise<number> {
  if (s.segmentId) return membersBefore(s.workspaceId, s.segmentId, end);
  const held = await sumBefore(s.workspaceId, ["contacts", "contacts.removed"], end);
  return (held.get("contacts") ?? 0) - (held.get("contacts.removed") ?? 0);
}

const MESSAGE_METRICS = COUNT_KEYS.map((key) => `msg.${key}`);
const ZERO_COUNTS = Object.fromEntries(COUNT_KEYS.map((key) => [key, 0])) as Counts;

/** Counts from rows of `<prefix>.<status>` metrics. */
export function countsOf(rows: Array<{ metric?: string; value: number }>): Counts {
  const counts = { ...ZERO_COUNTS };
  for (const row of rows) {
    const key = row.metric?.slice(row.metric.indexOf(".") + 1) as CountKey;
    if (key in counts) counts[key] += row.value;
  }
  return counts;
}

/** Each count over `sent`; all 0 when nothing was sent. */
export function ratesOf(counts: Counts): Rates {
  return Object.fromEntries(
    COUNT_KEYS.map((key) => [key, counts.sent ? counts[key] / counts.sent : 0]),
  ) as Rates;
}

const total = (rows: RollupRow[]) => rows.reduce((sum, row) => sum + row.value, 0);
const byPeriod = (rows: RollupRow[]) => new Map(rows.map((row) => [row.period!, row.value]));
/** `''` is how the rollups write "none". */
const orNull = (key: string | undefined) => (key ? key : null);

const messageFilter = (s: Scope) => ({ channel: s.channel, campaignId: s.campaignId });

export async function overview(s: Scope) {
  const edges = s.frame.edges;
  const [messages, events, revenue, own, held] = await Promise.all([
    sums(s, { metrics: MESSAGE_METRICS, edges, ...messageFilter(s), by: ["metric"] }),
    sums(s, { metrics: ["events"], edges, ...messageFilter(s), by: [] }),
    sums(s, { metrics: ["revenue"], edges, campaignId: s.campaignId, by: [] }),
    sums(s, { metrics: ["contacts", "submissions"], edges, by: ["metric"] }),
    heldAt(s, spanOf(s.frame).end),
  ]);
  const counts = countsOf(messages);
  const ownOf = (metric: string) => own.find((row) => row.metric === metric)?.value ?? 0;
  return {
    contacts: { total: held, new: ownOf("contacts") },
    counts,
    rates: ratesOf(counts),
    events: total(events),
    submissions: ownOf("submissions"),
    revenue: total(revenue),
  };
}

/** The rollup metric behind a timeseries metric, and the filters that apply to it. */
function seriesOf(metric: Metric, s: Scope): { metric: string; channel?: string; campaignId?: string } {
  if (metric === "events") return { metric, ...messageFilter(s) };
  if (metric === "revenue") return { metric, campaignId: s.campaignId };
  if (metric === "contacts" || metric === "submissions") return { metric };
  return { metric: `msg.${metric}`, ...messageFilter(s) };
}

export async function timeseries(s: Scope, metric: Metric) {
  const series = seriesOf(metric, s);
  const rows = await sums(s, {
    metrics: [series.metric],
    edges: s.frame.edges,
    channel: series.channel,
    campaignId: series.campaignId,
    by: ["period"],
  });
  return { metric, points: pointsOf(s.frame, byPeriod(rows)) };
}

/** Totals by `dim`, most first, then by key. */
function byDim(rows: RollupRow[]): Array<[string, number]> {
  const sums = new Map<string, number>();
  for (const row of rows) sums.set(row.dim!, (sums.get(row.dim!) ?? 0) + row.value);
  return [...sums].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** One campaign: its enrollments, message counts, node entries and link clicks over the range. */
export async function campaign(s: Scope & { campaignId: string }) {
  const { frame, campaignId } = s;
  const edges = frame.edges;
  const [enrollments, messages, nodes, links] = await Promise.all([
    sums(s, { metrics: ["enrollments"], edges, campaignId, by: [] }),
    sums(s, { metrics: MESSAGE_METRICS, edges, ...messageFilter(s), by: ["metric"] }),
    sums(s, { metrics: ["campaign.node"], edges, campaignId, by: ["dim"] }),
    sums(s, { metrics: ["link.clicks"], edges, ...messageFilter(s), by: ["dim"] }),
  ]);
  const counts = countsOf(messages);
  return {
    enrollments: total(enrollments),
    counts,
    rates: ratesOf(counts),
    nodes: byDim(nodes).map(([nodeId, entered]) => ({ nodeId, entered })),
    links: byDim(links).map(([url, clicks]) => ({ url, clicks })),
  };
}

export async function deliverability(s: Scope) {
  const rows = await sums(s, {
    metrics: MESSAGE_METRICS,
    edges: s.frame.edges,
    ...messageFilter(s),
    by: ["channel", "metric", "dim"],
  });
  const channels = [...new Set(rows.map((row) => row.channel!))].sort();
  return {
    channels: channels.map((channel) => {
      const own = rows.filter((row) => row.channel === channel);
      const counts = countsOf(own);
      const suppressed: Record<string, number> = {};
      for (const row of own)
        if (row.metric === "msg.suppressed" && row.dim)
          suppressed[row.dim] = (suppressed[row.dim] ?? 0) + row.value;
      return { channel, counts, rates: ratesOf(counts), suppressed };
    }),
  };
}

const MAX_DOMAINS = 100;

export async function domains(s: Scope) {
  const rows = await sums(s, {
    metrics: COUNT_KEYS.map((key) => `domain.${key}`),
    edges: s.frame.edges,
    ...messageFilter(s),
    by: ["dim", "metric"],
  });
  const byDomain = new Map<string, RollupRow[]>();
  for (const row of rows) byDomain.set(row.dim!, [...(byDomain.get(row.dim!) ?? []), row]);
  const answers = [...byDomain].map(([domain, own]) => {
    const counts = countsOf(own);
    return { domain, counts, rates: ratesOf(counts) };
  });
  answers.sort((a, b) => b.counts.sent - a.counts.sent || a.domain.localeCompare(b.domain));
  return { domains: answers.slice(0, MAX_DOMAINS) };
}

/** Events per bucket (the unsplit series when unfiltered) and by type over the whole range (its biggest tiles). */
export async function activity(s: Scope) {
  const { frame } = s;
  const [periods, types] = await Promise.all([
    sums(s, { metrics: ["events"], edges: frame.edges, ...messageFilter(s), by: ["period"] }),
    sums(s, { metrics: ["events"], edges: frame.edges, ...messageFilter(s), by: ["dim"] }),
  ]);
  const byType = byDim(types).map(([type, count]) => ({ type, count }));
  return { points: pointsOf(frame, byPeriod(periods)), byType };
}

/** Revenue per bucket, and revenue and orders by campaign over the whole range. */
export async function revenue(s: Scope) {
  const { frame, campaignId } = s;
  const [periods, campaigns] = await Promise.all([
    sums(s, { metrics: ["revenue"], edges: frame.edges, campaignId, by: ["period"] }),
    sums(s, {
      metrics: ["revenue", "orders"],
      edges: frame.edges,
      campaignId,
      by: ["campaign", "metric"],
    }),
  ]);
  const byCampaignId = new Map<string, { revenue: number; orders: number }>();
  for (const row of campaigns) {
    const entry = byCampaignId.get(row.campaign!) ?? { revenue: 0, orders: 0 };
    if (row.metric === "revenue") entry.revenue += row.value;
    else entry.orders += row.value;
    byCampaignId.set(row.campaign!, entry);
  }
  const byCampaign = [...byCampaignId]
    .map(([campaign, { revenue: amount, orders }]) => ({
      campaignId: orNull(campaign),
      revenue: amount,
      orders,
    }))
    .sort((x, y) => y.revenue - x.revenue || (x.campaignId ?? "").localeCompare(y.campaignId ?? ""));
  return {
    total: byCampaign.reduce((sum, c) => sum + c.revenue, 0),
    orders: byCampaign.reduce((sum, c) => sum + c.orders, 0),
    points: pointsOf(frame, byPeriod(periods)),
    byCampaign,
  };
}

/** A funnel's steps from `a,b,c`, or a 400 naming `steps`. */
export function stepsOf(text: string): string[] {
  const steps = text.split(",").map((step) => step.trim());
  if (
    steps.length < FUNNEL_STEPS.min ||
    steps.length > FUNNEL_STEPS.max ||
    steps.some((s) => !s || s.length > 200)
  )
    throw fieldError(
      "steps",
      `must be ${FUNNEL_STEPS.min} to ${FUNNEL_STEPS.max} event types separated by commas, each 1 to 200 characters`,
    );
  return steps;
}

export async function funnel(s: Scope, steps: string[], windowDays: number) {
  const { start, end } = spanOf(s.frame);
  const counts = await funnelCounts(s.workspaceId, steps, start, end, windowDays * 86_400_000, s.segmentId);
  return {
    steps: steps.map((type, i) => ({
      type,
      contacts: counts[i],
      rate: counts[0] ? counts[i] / counts[0] : 0,
    })),
  };
}

const MAX_SOURCES = 100;

export async function sources(s: Scope, conversion: string) {
  const { start, end } = spanOf(s.frame);
  const rows = await sourceCounts(s.workspaceId, conversion, start, end, MAX_SOURCES, s.segmentId);
  return {
    sources: rows.map((row) => ({
      utmSource: row.utm_source,
      utmMedium: orNull(row.utm_medium),
      contacts: Number(row.contacts),
      conversions: Number(row.conversions),
    })),
  };
}

/** Cohorts (and so retention columns) an answer may hold: 120 is four months of days. */
export const MAX_COHORTS = 120;

/**
 * Cohorts: the contacts whose first `event` (else their creation) falls in
 * each bucket of the range; `retention[i]` is the share of them that did any
 * event in the i-th bucket after their own (`retention[0]` their own bucket),
 * up to the range's last bucket. Empty cohorts are listed with size 0.
 */
export async function cohorts(s: Scope, event: string | null) {
  const { edges } = s.frame;
  const periods = edges.length - 1;
  if (periods > MAX_COHORTS)
    throw fieldError(
      "granularity",
      `gives ${periods} cohorts over this range, more than ${MAX_COHORTS}; take a coarser one or a shorter range`,
    );
  const { sizes, active } = await cohortCounts(s.workspaceId, event, edges, s.segmentId);
  const activeOf = new Map(active.map((a) => [`${a.cohort}:${a.period}`, a.contacts]));
  return {
    cohorts: edges.slice(0, -1).map((edge, i) => {
      const cohort = i + 1;
      const size = sizes.get(cohort) ?? 0;
      return {
        cohort: edge.toISOString(),
        size,
        retention: Array.from({ length: periods - i }, (_, k) =>
          size ? (activeOf.get(`${cohort}:${cohort + k}`) ?? 0) / size : 0,
        ),
      };
    }),
  };
}

const MAX_TOUCHES = 100;

/**
 * Conversions (events of type `conversion`, any but page views and
 * `message.*`) in the range and their `metadata.amount`, attributed when
 * stored (migration 0089) over the
 * contact's touches of the 30 days before: by touch kind and key, most
 * conversions first, at most 100. For a segment, its members' conversions
 * as stored with their touches (migration 0099).
 */
export async function attribution(s: Scope, model: AttributionModel, conversion: string) {
  if (conversion === "page_view" || conversion.startsWith("message."))
    throw fieldError(
      "conversion",
      "cannot be a page view or a message tracking event: those are not attributed as conversions",
    );
  const metricOf = (measure: string) => `attr.${model}.${measure}.${conversion}`;
  const { start, end } = spanOf(s.frame);
  const rows = s.segmentId
    ? await attributionForSegment(s.workspaceId, s.segmentId, model, conversion, start, end)
    : await sumRollups(s.workspaceId, {
        metrics: [metricOf("conversions"), metricOf("revenue")],
        edges: s.frame.edges,
        by: ["metric", "channel", "dim"],
      });
  type Touch = { kind: "campaign" | "source"; key: string; conversions: number; revenue: number };
  const touches = new Map<string, Touch>();
  for (const row of rows) {
    const id = `${row.channel}\n${row.dim}`;
    const touch = touches.get(id) ?? {
      kind: row.channel as Touch["kind"],
      key: row.dim!,
      conversions: 0,
      revenue: 0,
    };
    if (row.metric === metricOf("conversions")) touch.conversions += row.value;
    else touch.revenue += row.value;
    touches.set(id, touch);
  }
  const sorted = [...touches.values()].sort(
    (a, b) =>
      b.conversions - a.conversions ||
      b.revenue - a.revenue ||
      a.kind.localeCompare(b.kind) ||
      a.key.localeCompare(b.key),
  );
  return { model, touches: sorted.slice(0, MAX_TOUCHES) };
}

export const REALTIME_MINUTES = 30;
const RECENT_EVENTS = 20;

/** The last 30 minutes from the raw events: per minute (the current one last), visitors, newest events. */
export async function realtime(workspaceId: WorkspaceId, now: Date = new Date()) {
  const minute = 60_000;
  const end = new Date(Math.floor(now.getTime() / minute) * minute + minute);
  const start = new Date(end.getTime() - REALTIME_MINUTES * minute);
  const [perMinute, visitors, recent] = await Promise.all([
    realtimeRepo.minuteCounts(workspaceId, start, end),
    realtimeRepo.visitorCount(workspaceId, start, end),
    realtimeRepo.recentEvents(workspaceId, start, end, RECENT_EVENTS),
  ]);
  const points = Array.from({ length: REALTIME_MINUTES }, (_, i) => {
    const t = start.getTime() + i * minute;
    return { t: new Date(t).toISOString(), value: perMinute.get(t) ?? 0 };
  });
  return { activeVisitors: visitors, points, recentEvents: recent };
}
