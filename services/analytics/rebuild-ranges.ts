/**
 * Which UTC days a rebuild of the rollups (rebuild.ts) may recompute, source
 * by source. Retention deletes raw rows while the rollups keep the deleted
 * period. A retained source whose rollups hold more counts up to its oldest
 * row kept than its rows make was trimmed: it is rebuilt only from the first
 * UTC midnight at or after that row (retention cuts at any moment of a day, so
 * the day holding it may have lost rows before it), never before `from`, and
 * not at all once no row is left. An untrimmed source, and contacts,
 * enrollments with their campaign logs (not retained), are rebuilt from `from`.
 */

export const SOURCES = ["events", "messages", "submissions", "contacts", "enrollments"] as const;
export type RebuildSource = (typeof SOURCES)[number];

/** Each retained source's oldest raw row (null: none), and whether rows older than it were counted and deleted. */
export type Kept = Record<"events" | "messages" | "submissions", { oldest: Date | null; trimmed: boolean }>;

/** Whole UTC days, `from` inclusive, `to` exclusive. */
export interface DayRange {
  from: Date;
  to: Date;
}

/** Where "ever" starts: nothing the service holds is older. */
export const BEGINNING = new Date(Date.UTC(1900, 0, 1));

const DAY_MS = 86_400_000;
const floorDay = (t: Date) => new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS);
const ceilDay = (t: Date) => new Date(Math.ceil(t.getTime() / DAY_MS) * DAY_MS);

/**
 * Each source's days to rebuild for the requested range (widened to whole UTC
 * days), or null where nothing may be rebuilt.
 */
export function rebuildRanges(
  requested: { from: Date; to: Date },
  kept: Kept,
): Record<RebuildSource, DayRange | null> {
  const from = floorDay(requested.from);
  const to = ceilDay(requested.to);
  const range = (start: Date) => (start < to ? { from: start, to } : null);
  const retained = ({ oldest, trimmed }: Kept[keyof Kept]) => {
    if (!trimmed) return range(from);
    return oldest === null ? null : range(new Date(Math.max(from.getTime(), ceilDay(oldest).getTime())));
  };
  return {
    events: retained(kept.events),
    messages: retained(kept.messages),
    submissions: retained(kept.submissions),
    contacts: range(from),
    enrollments: range(from),
  };
}
