import { fieldError } from "../../lib/errors";

/**
 * Backfill (contract-messaging 12): `POST {ws}/events` may carry the time
 * the event happened, so a workspace moving from another tool brings its
 * history. A time more than five minutes ahead of the clock is refused (a
 * clock a little fast is not); one before 1970 is no history an event
 * source keeps, and PostgreSQL has no year 0.
 */
export const MAX_AHEAD_MS = 5 * 60 * 1000;
const EARLIEST = Date.UTC(1970, 0, 1);

/** The event's time as stored (ISO, UTC), or undefined for "now"; 400 naming `timestamp` when out of range. */
export function backfillTime(timestamp: string | undefined, now = Date.now()): string | undefined {
  if (timestamp === undefined) return undefined;
  const at = Date.parse(timestamp);
  if (Number.isNaN(at)) throw fieldError("timestamp", "must be an ISO 8601 date-time");
  if (at > now + MAX_AHEAD_MS) throw fieldError("timestamp", "must not be more than 5 minutes in the future");
  if (at < EARLIEST) throw fieldError("timestamp", "must not be before 1970-01-01T00:00:00Z");
  return new Date(at).toISOString();
}
