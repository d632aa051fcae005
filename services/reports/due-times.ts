import { Cron } from "croner";
import type { FieldIssue } from "../../lib/errors";

/**
 * When a schedule is due: its 5-field cron read in its IANA zone, by croner
 * (its DST behaviour is pinned by test/unit/reports-due-times.test.ts).
 *
 * Daylight-saving changes, as defined here:
 * - A fixed-time schedule (no `*` and no step in the minute and hour fields:
 *   `30 2 * * *`, `0 9,17 * * 1-5`) whose time falls in a spring-forward gap
 *   runs once, at the first valid time after the gap (a Berlin 02:30 runs at
 *   03:00 CEST; a Lord Howe 02:15 at 02:30). When the time occurs twice (fall
 *   back) it runs once, at the first occurrence (a Berlin 02:30 runs at 02:30
 *   CEST, not again at 02:30 CET).
 * - An interval schedule (`*` or a step in the minute or hour: `0 * * * *`,
 *   `*\/15 * * * *`) follows real time: wall times that do not exist are
 *   skipped and repeated ones run on both occurrences, so it never bunches
 *   up or leaves a hole longer than its interval.
 */

const FIELDS = ["minute", "hour", "day of month", "month", "day of week"] as const;

/** croner for a schedule; throws on a pattern or zone it cannot read. */
const cronOf = (cron: string, timezone: string) =>
  new Cron(cron, { timezone, mode: "5-part", fixedTimeRule: "no-wildcard", paused: true });

/** Whether `timezone` is an IANA zone this runtime knows. */
export function zoneIssue(timezone: string, field = "timezone"): FieldIssue | null {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return null;
  } catch {
    return { field, message: `'${timezone}' is not an IANA time zone (e.g. Europe/Berlin)` };
  }
}

/** What is wrong with a 5-field cron expression, or null. */
export function cronIssue(cron: string, field = "cron"): FieldIssue | null {
  const parts = cron.trim().split(/\s+/);
  if (parts.length !== FIELDS.length)
    return {
      field,
      message: `must have 5 fields (${FIELDS.join(", ")}), found ${cron.trim() ? parts.length : 0}`,
    };
  try {
    cronOf(cron, "UTC");
    return null;
  } catch (err) {
    return { field, message: (err as Error).message.replace(/^CronPattern: /, "") };
  }
}

/** The first time after `after` the schedule is due (null: never again, e.g. 30 February). */
export function nextRunAfter(cron: string, timezone: string, after: Date): Date | null {
  return cronOf(cron, timezone).nextRun(after);
}
