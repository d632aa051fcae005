import { rebuildRanges, type Kept } from "../../services/analytics/rebuild-ranges";

const at = (iso: string) => new Date(iso);
const untrimmed: Kept = {
  events: { oldest: at("2026-03-25T07:10:00Z"), trimmed: false },
  messages: { oldest: at("2026-03-26T00:00:00Z"), trimmed: false },
  submissions: { oldest: null, trimmed: false },
};
const days = (range: { from: Date; to: Date } | null) =>
  range && [range.from.toISOString(), range.to.toISOString()];

describe("analytics rebuild ranges", () => {
  test("whole UTC days around the requested range, every source, when nothing was trimmed", () => {
    const ranges = rebuildRanges(
      { from: at("2026-03-20T13:00:00Z"), to: at("2026-04-01T00:00:00Z") },
      untrimmed,
    );
    for (const source of ["events", "messages", "submissions", "contacts", "enrollments"] as const)
      expect(days(ranges[source])).toEqual(["2026-03-20T00:00:00.000Z", "2026-04-01T00:00:00.000Z"]);
    expect(
      days(
        rebuildRanges({ from: at("2026-03-20T00:00:00Z"), to: at("2026-04-01T00:00:01Z") }, untrimmed).events,
      ),
    ).toEqual(["2026-03-20T00:00:00.000Z", "2026-04-02T00:00:00.000Z"]);
  });

  test("a trimmed source starts at the first midnight at or after its oldest row kept, never before from", () => {
    const kept: Kept = {
      events: { oldest: at("2026-03-25T07:10:00Z"), trimmed: true },
      messages: { oldest: at("2026-03-26T00:00:00Z"), trimmed: true },
      submissions: { oldest: at("2026-03-30T10:00:00Z"), trimmed: true },
    };
    const ranges = rebuildRanges({ from: at("2026-03-01T00:00:00Z"), to: at("2026-03-28T00:00:00Z") }, kept);
    // The oldest row's own day may have lost rows before it: not rebuilt.
    expect(days(ranges.events)).toEqual(["2026-03-26T00:00:00.000Z", "2026-03-28T00:00:00.000Z"]);
    // On a midnight exactly, its day is whole.
    expect(days(ranges.messages)).toEqual(["2026-03-26T00:00:00.000Z", "2026-03-28T00:00:00.000Z"]);
    // Its days all before the oldest row kept: nothing.
    expect(ranges.submissions).toBeNull();
    // Contacts, enrollments and logs are not retained.
    expect(days(ranges.contacts)).toEqual(["2026-03-01T00:00:00.000Z", "2026-03-28T00:00:00.000Z"]);
    const later = rebuildRanges({ from: at("2026-03-27T05:00:00Z"), to: at("2026-03-28T00:00:00Z") }, kept);
    expect(days(later.events)).toEqual(["2026-03-27T00:00:00.000Z", "2026-03-28T00:00:00.000Z"]);
  });

  test("a trimmed source with no row left is not rebuilt", () => {
    const ranges = rebuildRanges(
      { from: at("2026-03-01T00:00:00Z"), to: at("2026-03-28T00:00:00Z") },
      { ...untrimmed, submissions: { oldest: null, trimmed: true } },
    );
    expect(ranges.submissions).toBeNull();
    expect(ranges.events).not.toBeNull();
  });
});
