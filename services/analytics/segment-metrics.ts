/**
 * Which rows hold each rollup metric, for answers narrowed to a segment
 * (segment.repo.ts sums them from the members' rows): a query reads only the
 * sources its metrics need, so an events-only answer never reads messages.
 */

export type SegmentSource =
  "events" | "messages" | "submissions" | "created" | "optOuts" | "enrollments" | "nodeEntries";

const STATUSES = ["sent", "delivered", "opened", "clicked", "bounced", "complained", "failed", "suppressed"];

const SOURCE_OF = new Map<string, SegmentSource | null>([
  ["events", "events"],
  ["revenue", "events"],
  ["orders", "events"],
  ["link.clicks", "events"],
  ["enrollments", "enrollments"],
  ["campaign.node", "nodeEntries"],
  ["contacts", "created"],
  // A current member is not removed.
  ["contacts.removed", null],
  ["submissions", "submissions"],
  ["msg.unsubscribed", "optOuts"],
  // Opt-outs carry no recipient: like the rollups, never any.
  ["domain.unsubscribed", null],
  ...STATUSES.flatMap((status) => [
    [`msg.${status}`, "messages"] as const,
    [`domain.${status}`, "messages"] as const,
  ]),
]);

/** The sources `metrics` need; a metric no segment answer sums is a programming error. */
export function sourcesOf(metrics: string[]): Set<SegmentSource> {
  const sources = new Set<SegmentSource>();
  for (const metric of metrics) {
    const source = SOURCE_OF.get(metric);
    if (source === undefined) throw new Error(`no segment sums for metric ${metric}`);
    if (source) sources.add(source);
  }
  return sources;
}
