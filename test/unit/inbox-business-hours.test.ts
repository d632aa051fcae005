import { hoursIssue, isOpen, localDay } from "../../services/inbox/business-hours";

/** Business hours in a zone (services/inbox/business-hours.ts): periods, overnight spans, holidays, DST. */

const at = (iso: string) => new Date(iso);
const weekdays = { days: [1, 2, 3, 4, 5], start: "09:00", end: "17:00" };

describe("business hours", () => {
  it("the contract's single period, read in the workspace's zone", () => {
    // Monday 2026-03-02: 09:00 in New York is 14:00 UTC.
    expect(isOpen(weekdays, at("2026-03-02T13:59:00Z"), "America/New_York")).toBe(false);
    expect(isOpen(weekdays, at("2026-03-02T14:00:00Z"), "America/New_York")).toBe(true);
    expect(isOpen(weekdays, at("2026-03-02T21:59:00Z"), "America/New_York")).toBe(true);
    expect(isOpen(weekdays, at("2026-03-02T22:00:00Z"), "America/New_York")).toBe(false);
    // Saturday is closed; Sunday 7 too.
    expect(isOpen(weekdays, at("2026-03-07T15:00:00Z"), "America/New_York")).toBe(false);
    expect(isOpen({ days: [7], start: "10:00", end: "12:00" }, at("2026-03-08T10:30:00Z"), "UTC")).toBe(true);
  });

  it("keeps local hours across a DST change (Europe/Berlin, 29 March 2026)", () => {
    const hours = { days: [1, 2, 3, 4, 5, 6, 7], start: "09:00", end: "10:00" };
    // Before the change Berlin is UTC+1, after it UTC+2: 09:30 local is 08:30Z, then 07:30Z.
    expect(isOpen(hours, at("2026-03-28T08:30:00Z"), "Europe/Berlin")).toBe(true);
    expect(isOpen(hours, at("2026-03-29T08:30:00Z"), "Europe/Berlin")).toBe(false);
    expect(isOpen(hours, at("2026-03-29T07:30:00Z"), "Europe/Berlin")).toBe(true);
    // 02:30 local does not exist on the day of the change; 01:59Z is 03:59 local, inside 03:00-04:00.
    expect(
      isOpen({ days: [7], start: "03:00", end: "04:00" }, at("2026-03-29T01:59:00Z"), "Europe/Berlin"),
    ).toBe(true);
    expect(localDay(at("2026-03-28T23:30:00Z"), "Europe/Berlin")).toBe("2026-03-29");
  });

  it("several periods a day (a lunch break)", () => {
    const hours = {
      periods: [
        { days: [1, 2, 3, 4, 5], start: "09:00", end: "12:00" },
        { days: [1, 2, 3, 4, 5], start: "13:00", end: "17:00" },
      ],
    };
    expect(isOpen(hours, at("2026-03-02T11:59:00Z"), "UTC")).toBe(true);
    expect(isOpen(hours, at("2026-03-02T12:30:00Z"), "UTC")).toBe(false);
    expect(isOpen(hours, at("2026-03-02T13:00:00Z"), "UTC")).toBe(true);
  });

  it("overnight spans run into the next day, from the day they start", () => {
    const night = { days: [5], start: "22:00", end: "06:00" };
    expect(isOpen(night, at("2026-03-06T21:59:00Z"), "UTC")).toBe(false); // Friday 21:59
    expect(isOpen(night, at("2026-03-06T23:00:00Z"), "UTC")).toBe(true); // Friday 23:00
    expect(isOpen(night, at("2026-03-07T05:59:00Z"), "UTC")).toBe(true); // Saturday 05:59
    expect(isOpen(night, at("2026-03-07T06:00:00Z"), "UTC")).toBe(false);
    expect(isOpen(night, at("2026-03-07T23:00:00Z"), "UTC")).toBe(false); // Saturday night: not a start day
    // Sunday night into Monday wraps the week.
    const sunday = { days: [7], start: "20:00", end: "02:00" };
    expect(isOpen(sunday, at("2026-03-09T01:00:00Z"), "UTC")).toBe(true);
  });

  it("holidays close their local date, the part of an overnight span in it too", () => {
    const hours = {
      ...weekdays,
      periods: [{ days: [4], start: "22:00", end: "02:00" }],
      holidays: ["2026-12-25"],
    };
    expect(isOpen(hours, at("2026-12-25T10:00:00Z"), "UTC")).toBe(false); // a Friday
    expect(isOpen(hours, at("2026-12-24T23:00:00Z"), "UTC")).toBe(true); // Thursday night
    expect(isOpen(hours, at("2026-12-25T01:00:00Z"), "UTC")).toBe(false);
    // The holiday is the zone's date: 23:30Z on the 24th is already the 25th in Berlin.
    expect(isOpen(hours, at("2026-12-24T23:30:00Z"), "Europe/Berlin")).toBe(false);
  });

  it("an unknown zone reads as UTC; an incomplete calendar is named", () => {
    expect(isOpen(weekdays, at("2026-03-02T09:30:00Z"), "Not/AZone")).toBe(true);
    expect(hoursIssue({ days: [1], start: "09:00" })).toMatchObject({ field: "days" });
    expect(hoursIssue({})).toMatchObject({ field: "periods" });
    expect(hoursIssue(weekdays)).toBeNull();
  });
});
