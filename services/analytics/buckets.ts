import { LRUCache } from "lru-cache";
import { DateTime, IANAZone } from "luxon";
import { fieldError } from "../../lib/errors";

/**
 * The time frame of an analytics answer (contract-messaging 12): `from`/`to`
 * inclusive (default the last 30 days), cut into buckets of the granularity
 * in the requested zone. A bucket starts at a local hour, midnight, Monday or
 * first of the month, so a day is 23 or 25 hours long across a DST change;
 * `t` is that start in UTC. The frame covers whole buckets: it runs from the
 * start of the bucket holding `from` to the end of the one holding `to`, so
 * every figure is a sum of whole rollup buckets (15 minutes, UTC) and exact.
 */

export const GRANULARITIES = ["hour", "day", "week", "month"] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** Rollups are kept per 15 minutes (UTC); every bucket edge must fall on one of theirs. */
export const ROLLUP_BUCKET_MS = 15 * 60_000;
/** More points than this is a request for raw data, not a chart. */
export const MAX_POINTS = 10_000;
const DEFAULT_DAYS = 30;
/** Years a bound may name: the database and the driver write any moment of these the same way. */
const YEARS = { min: 1900, max: 2999 } as const;

export interface Frame {
  zone: string;
  granularity: Granularity;
  /** Bucket starts in order, then the end of the last bucket (exclusive): `starts.length + 1` edges. */
  edges: Date[];
}

/** A zone luxon knows (IANA names, `UTC`), or null. luxon's check makes an `Intl` formatter each time. */
export const validZone = (zone: string): string | null =>
  zones.has(zone) || IANAZone.isValidZone(zone) ? zone : null;

/** Offsets kept per zone, and zones kept. */
const KEPT_OFFSETS = 100_000;
const KEPT_ZONES = 1_000;

/**
 * An IANA zone that keeps the offsets it answered. luxon asks a zone's
 * offset several times for each instant it computes, and an IANA zone
 * answers through Intl (`formatToParts`, tens of microseconds a call), so
 * the 91 edges of a 90-day frame took 4.7 ms of each request. An instant's
 * offset does not change while the process runs; frames repeat (dashboards,
 * reports), so most of them are now answered from the memo.
 */
class KeptOffsetsZone extends IANAZone {
  private readonly offsets = new LRUCache<number, number>({ max: KEPT_OFFSETS });

  override offset(ts: number): number {
    let offset = this.offsets.get(ts);
    if (offset === undefined) {
      offset = super.offset(ts);
      this.offsets.set(ts, offset);
    }
    return offset;
  }
}

const zones = new LRUCache<string, KeptOffsetsZone>({ max: KEPT_ZONES });
/** The one zone object of a valid zone name. */
function zoneNamed(name: string): KeptOffsetsZone {
  let zone = zones.get(name);
  if (!zone) {
    zone = new KeptOffsetsZone(name);
    zones.set(name, zone);
  }
  return zone;
}

/** A bound as sent: an ISO date-time, or a date (its whole day in the zone). */
function parseBound(value: string, zone: KeptOffsetsZone, field: "from" | "to"): DateTime {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const parsed = DateTime.fromISO(value, { zone, setZone: false });
  if (!parsed.isValid) throw fieldError(field, "must be an ISO 8601 date or date-time");
  if (parsed.year < YEARS.min || parsed.year > YEARS.max)
    throw fieldError(field, `must be in the years ${YEARS.min} to ${YEARS.max}`);
  if (dateOnly && field === "to") return parsed.endOf("day");
  return parsed.setZone(zone);
}

/** Edges kept across the frames kept: a year of hours is 8,761 of them. */
const KEPT_FRAME_EDGES = 200_000;

/**
 * Frames with both bounds given, kept: such a frame never depends on the
 * clock, and dashboards and reports ask the same ones again and again (a
 * 90-day frame of days costs about a millisecond of luxon arithmetic).
 * Frozen, so no answer can change one it shares.
 */
const frames = new LRUCache<string, Frame>({
  maxSize: KEPT_FRAME_EDGES,
  sizeCalculation: (frame) => frame.edges.length,
});

type FrameQuery = { from?: string; to?: string; granularity?: Granularity; timezone: string };

/** The buckets of a query, or a 400 naming the field at fault. */
export function frameOf(query: FrameQuery, now: Date = new Date()): Frame {
  if (query.to === undefined) return computeFrame(query, now);
  const key = JSON.stringify([query.timezone, query.granularity ?? "day", query.from ?? null, query.to]);
  let frame = frames.get(key);
  if (!frame) {
    frame = computeFrame(query, now);
    Object.freeze(frame.edges);
    frames.set(key, Object.freeze(frame));
  }
  return frame;
}

function computeFrame(query: FrameQuery, now: Date): Frame {
  const name = validZone(query.timezone);
  if (!name) throw fieldError("timezone", "must be an IANA time zone (e.g. Europe/Berlin)");
  const zone = zoneNamed(name);
  const granularity = query.granularity ?? "day";
  const to = query.to ? parseBound(query.to, zone, "to") : DateTime.fromJSDate(now, { zone });
  const from = query.from ? parseBound(query.from, zone, "from") : to.minus({ days: DEFAULT_DAYS });
  if (from > to) throw fieldError("to", "must not be before from");
  const edges: Date[] = [];
  let start = from.startOf(granularity === "week" ? "week" : granularity);
  while (start <= to) {
    if (edges.length >= MAX_POINTS)
      throw fieldError(
        "granularity",
        `gives more than ${MAX_POINTS} points over this range; take a coarser one`,
      );
    edges.push(start.toJSDate());
    start = start.plus({ [`${granularity}s`]: 1 });
  }
  edges.push(start.toJSDate());
  const off = edges.find((edge) => edge.getTime() % ROLLUP_BUCKET_MS !== 0);
  if (off)
    throw fieldError(
      "timezone",
      `has a bucket edge off the quarter hour (${off.toISOString()}); figures there cannot be exact`,
    );
  return { zone: name, granularity, edges };
}

/** The frame's first instant and its end (exclusive). */
export const spanOf = (frame: Frame) => ({ start: frame.edges[0], end: frame.edges[frame.edges.length - 1] });

/** One point per bucket, `t` its start in UTC, 0 where `values` (by bucket index, 1-based) has none. */
export function pointsOf(frame: Frame, values: Map<number, number>): Array<{ t: string; value: number }> {
  return frame.edges
    .slice(0, -1)
    .map((edge, i) => ({ t: edge.toISOString(), value: values.get(i + 1) ?? 0 }));
}
