import { cronIssue, nextRunAfter, zoneIssue } from "../../services/reports/due-times";

/** The next `n` runs after `from`, as UTC instants. */
function runs(cron: string, zone: string, from: string, n: number): string[] {
  const out: string[] = [];
  let at: Date | null = new Date(from);
  while (out.length < n && (at = nextRunAfter(cron, zone, at))) out.push(at.toISOString());
  return out;
}

describe("schedule due times across daylight-saving changes", () => {
  // [case, cron, zone, from (UTC), expected runs (UTC)]; local times worked out by hand in the comments.
  test.each([
    // New York springs forward 2026-03-08 02:00 EST -> 03:00 EDT: 02:30 does not exist, runs once at 03:00 EDT.
    [
      "NY 02:30, spring day",
      "30 2 * * *",
      "America/New_York",
      "2026-03-07T12:00:00Z",
      ["2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"],
    ],
    // New York falls back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice, runs at the first (EDT).
    [
      "NY 01:30, fall-back day",
      "30 1 * * *",
      "America/New_York",
      "2026-10-31T12:00:00Z",
      ["2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"],
    ],
    // Berlin springs forward 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 runs once, at 03:00 CEST.
    [
      "Berlin 02:30, spring day",
      "30 2 * * *",
      "Europe/Berlin",
      "2026-03-28T12:00:00Z",
      ["2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"],
    ],
    // Berlin falls back 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 runs once, at 02:30 CEST.
    [
      "Berlin 02:30, fall-back day",
      "30 2 * * *",
      "Europe/Berlin",
      "2026-10-24T12:00:00Z",
      ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
    ],
    // A list of fixed times inside the gap: both land on 03:00, once.
    [
      "Berlin 02:15 and 02:45, spring day",
      "15,45 2 * * *",
      "Europe/Berlin",
      "2026-03-28T12:00:00Z",
      ["2026-03-29T01:00:00.000Z", "2026-03-30T00:15:00.000Z"],
    ],
    // Kolkata (+05:30, no DST): 02:30 IST is 21:00 UTC the day before, every day.
    [
      "Kolkata 02:30",
      "30 2 * * *",
      "Asia/Kolkata",
      "2026-03-07T12:00:00Z",
      ["2026-03-07T21:00:00.000Z", "2026-03-08T21:00:00.000Z"],
    ],
    // Kolkata, a weekly Monday 09:00 IST = 03:30 UTC.
    [
      "Kolkata Mondays 09:00",
      "0 9 * * 1",
      "Asia/Kolkata",
      "2026-03-07T00:00:00Z",
      ["2026-03-09T03:30:00.000Z", "2026-03-16T03:30:00.000Z"],
    ],
    // Lord Howe springs forward 30 minutes 2026-10-04 02:00 (+10:30) -> 02:30 (+11): 02:15 runs once at 02:30.
    [
      "Lord Howe 02:15, spring day",
      "15 2 * * *",
      "Australia/Lord_Howe",
      "2026-10-03T00:00:00Z",
      ["2026-10-03T15:30:00.000Z", "2026-10-04T15:15:00.000Z"],
    ],
    // Lord Howe falls back 2026-04-05 02:00 (+11) -> 01:30 (+10:30): 01:45 runs once, at the first (+11).
    [
      "Lord Howe 01:45, fall-back day",
      "45 1 * * *",
      "Australia/Lord_Howe",
      "2026-04-04T00:00:00Z",
      ["2026-04-04T14:45:00.000Z", "2026-04-05T15:15:00.000Z"],
    ],
  ])("%s", (_case, cron, zone, from, expected) => {
    expect(runs(cron, zone, from, expected.length)).toEqual(expected);
  });

  test("an interval schedule follows real time: Berlin hourly runs every UTC hour through the repeated hour", () => {
    expect(runs("0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z", 4)).toEqual([
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
      "2026-10-25T02:00:00.000Z", // 03:00 CET
      "2026-10-25T03:00:00.000Z",
    ]);
    // Steps inside the gap hour do not exist that day and are skipped.
    expect(runs("*/30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-30T00:00:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  test("a date that never comes has no next run", () => {
    expect(nextRunAfter("0 0 30 2 *", "UTC", new Date("2026-01-01T00:00:00Z"))).toBeNull();
  });
});

describe("cron and zone checks", () => {
  test.each([
    ["0 0 * * * *", "must have 5 fields"],
    ["0 0 * *", "must have 5 fields"],
    ["", "must have 5 fields"],
    ["61 * * * *", "minute"],
    ["a b c d e", "illegal"],
  ])("%j is refused", (cron, message) => {
    expect(cronIssue(cron)).toEqual({ field: "cron", message: expect.stringContaining(message) });
  });

  test("good crons and zones pass", () => {
    expect(cronIssue("*/15 9-17 * * 1-5")).toBeNull();
    expect(zoneIssue("Australia/Lord_Howe")).toBeNull();
    expect(zoneIssue("Mars/Olympus")).toEqual({
      field: "timezone",
      message: expect.stringContaining("IANA"),
    });
  });
});
