import { backfillTime, MAX_AHEAD_MS } from "../../services/events/backfill";

const NOW = Date.parse("2026-03-29T12:00:00.000Z");

const refusal = (timestamp: string) => {
  try {
    backfillTime(timestamp, NOW);
  } catch (err) {
    const e = err as { code: number; type: string; data: { details: Array<{ field: string }> } };
    return { code: e.code, type: e.type, fields: e.data.details.map((d) => d.field) };
  }
  return null;
};

test("no timestamp means now (undefined)", () => {
  expect(backfillTime(undefined, NOW)).toBeUndefined();
});

test.each([
  ["2025-01-02T03:04:05Z", "2025-01-02T03:04:05.000Z"],
  ["2025-01-02T03:04:05.123+02:00", "2025-01-02T01:04:05.123Z"],
  ["2026-03-29T05:30:00-05:30", "2026-03-29T11:00:00.000Z"],
  ["1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"],
])("a past time %s is kept as %s", (given, stored) => {
  expect(backfillTime(given, NOW)).toBe(stored);
});

test("up to five minutes ahead is a clock a little fast, and kept", () => {
  const edge = new Date(NOW + MAX_AHEAD_MS).toISOString();
  expect(backfillTime(edge, NOW)).toBe(edge);
});

test.each([
  new Date(NOW + MAX_AHEAD_MS + 1).toISOString(),
  "2027-01-01T00:00:00Z",
  "1969-12-31T23:59:59Z",
  "0000-01-01T00:00:00Z",
  "not a date",
])("%s is a 400 naming timestamp", (given) => {
  expect(refusal(given)).toEqual({ code: 400, type: "VALIDATION_ERROR", fields: ["timestamp"] });
});
