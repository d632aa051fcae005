import { DateTime } from "luxon";

/**
 * Business hours as one calendar (contract-messaging 11, issue 31 item 6),
 * read in the workspace's zone: the contract's single period
 * `{days, start, end}`, or several `periods` (each `{days, start, end}`; a
 * period whose end is not after its start runs overnight into the next day),
 * and `holidays` (local ISO dates, closed all day). Pure; auto-replies and
 * assignment rules both ask `isOpen`.
 */

export interface Period {
  /** ISO weekdays, 1 = Monday … 7 = Sunday: the days the period starts on. */
  days: number[];
  /** "HH:MM", local. */
  start: string;
  end: string;
}

export interface BusinessHours {
  days?: number[];
  start?: string;
  end?: string;
  periods?: Period[];
  holidays?: string[];
}

const minutesOf = (hhmm: string): number => {
  const [h, m] = hhmm.split(":").map(Number);
  return h * 60 + m;
};

/** What makes a calendar unreadable (a single period missing a part), or null. */
export function hoursIssue(hours: BusinessHours): { field: string; message: string } | null {
  const parts = [hours.days, hours.start, hours.end].filter((part) => part !== undefined).length;
  if (parts > 0 && parts < 3) return { field: "days", message: "days, start and end go together" };
  if (parts === 0 && !hours.periods?.length)
    return { field: "periods", message: "give days, start and end, or periods" };
  return null;
}

/** Every period of the calendar, the contract's single one first. */
export function periodsOf(hours: BusinessHours): Period[] {
  const single =
    hours.days && hours.start !== undefined && hours.end !== undefined
      ? [{ days: hours.days, start: hours.start, end: hours.end }]
      : [];
  return [...single, ...(hours.periods ?? [])];
}

/** Whether a period that starts on local day `weekday` covers the local minute `minute` of that day or of the next. */
function covers(period: Period, weekday: number, minute: number): boolean {
  const start = minutesOf(period.start);
  const end = minutesOf(period.end);
  const previous = weekday === 1 ? 7 : weekday - 1;
  if (start < end) return period.days.includes(weekday) && minute >= start && minute < end;
  // Overnight (22:00-06:00) or a whole day (00:00-00:00): from the start to midnight, then on to the end.
  return (
    (period.days.includes(weekday) && minute >= start) || (period.days.includes(previous) && minute < end)
  );
}

/**
 * Whether `at` falls within the calendar in `zone` (an IANA name; an unknown
 * one reads as UTC). A holiday closes its local date, including the part of
 * an overnight period that runs into it.
 */
export function isOpen(hours: BusinessHours, at: Date, zone: string): boolean {
  let local = DateTime.fromJSDate(at, { zone });
  if (!local.isValid) local = DateTime.fromJSDate(at, { zone: "UTC" });
  if ((hours.holidays ?? []).includes(local.toISODate() ?? "")) return false;
  const minute = local.hour * 60 + local.minute;
  return periodsOf(hours).some((period) => covers(period, local.weekday, minute));
}

/** The local date (YYYY-MM-DD) of `at` in `zone`: the "day" an auto-reply fires at most once in. */
export function localDay(at: Date, zone: string): string {
  const local = DateTime.fromJSDate(at, { zone });
  return (local.isValid ? local : DateTime.fromJSDate(at, { zone: "UTC" })).toISODate() ?? "";
}
