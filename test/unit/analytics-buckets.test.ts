import { DateTime, IANAZone } from "luxon";
import { frameOf, pointsOf, validZone } from "../../services/analytics/buckets";
import { tilesOf } from "../../services/analytics/tiles";

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());
const fieldOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as { data?: { details?: Array<{ field: string }> } }).data?.details?.[0]?.field;
  }
  return undefined;
};

describe("analytics buckets", () => {
  test("frames over a year of DST changes, asked twice (the second from the kept offsets), are luxon's own local starts", () => {
    for (const timezone of ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]) {
      for (const granularity of ["hour", "day", "week", "month"] as const) {
        const query = {
          from: "2026-01-01",
          to: granularity === "hour" ? "2026-01-20" : "2026-12-31",
          granularity,
          timezone,
        };
        const zone = new IANAZone(timezone);
        const expected: string[] = [];
        let start = DateTime.fromISO(query.from, { zone }).startOf(
          granularity === "week" ? "week" : granularity,
        );
        const end = DateTime.fromISO(query.to, { zone }).endOf("day");
        while (start <= end) {
          expected.push(start.toUTC().toISO()!);
          start = start.plus({ [`${granularity}s`]: 1 });
        }
        expected.push(start.toUTC().toISO()!);
        expect(iso(frameOf(query).edges)).toEqual(expected);
        expect(iso(frameOf(query).edges)).toEqual(expected);
      }
    }
  });

  test("Berlin days across the spring-forward Sunday: 24, 23 and 24 hours, starts at local midnight", () => {
    const frame = frameOf({
      from: "2026-03-28",
      to: "2026-03-30",
      granularity: "day",
      timezone: "Europe/Berlin",
    });
    expect(iso(frame.edges)).toEqual([
      "2026-03-27T23:00:00.000Z",
      "2026-03-28T23:00:00.000Z",
      "2026-03-29T22:00:00.000Z",
      "2026-03-30T22:00:00.000Z",
    ]);
  });

  test("Berlin days across the fall-back Sunday last 25 hours", () => {
    const frame = frameOf({
      from: "2026-10-25",
      to: "2026-10-25",
      granularity: "day",
      timezone: "Europe/Berlin",
    });
    expect(iso(frame.edges)).toEqual(["2026-10-24T22:00:00.000Z", "2026-10-25T23:00:00.000Z"]);
  });

  test("Berlin hours skip the missing 02:00 and repeat none", () => {
    const frame = frameOf({
      from: "2026-03-29T00:00:00+01:00",
      to: "2026-03-29T04:00:00+02:00",
      granularity: "hour",
      timezone: "Europe/Berlin",
    });
    expect(iso(frame.edges)).toEqual([
      "2026-03-28T23:00:00.000Z",
      "2026-03-29T00:00:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T02:00:00.000Z",
      "2026-03-29T03:00:00.000Z",
    ]);
  });

  test("Kolkata (UTC+05:30) days and hours start on the half hour", () => {
    const days = frameOf({
      from: "2026-03-29",
      to: "2026-03-30",
      granularity: "day",
      timezone: "Asia/Kolkata",
    });
    expect(iso(days.edges)).toEqual([
      "2026-03-28T18:30:00.000Z",
      "2026-03-29T18:30:00.000Z",
      "2026-03-30T18:30:00.000Z",
    ]);
    const hours = frameOf({
      from: "2026-03-29T10:45:00Z",
      to: "2026-03-29T11:29:59Z",
      granularity: "hour",
      timezone: "Asia/Kolkata",
    });
    expect(iso(hours.edges)).toEqual(["2026-03-29T10:30:00.000Z", "2026-03-29T11:30:00.000Z"]);
  });

  test("Kathmandu (UTC+05:45) lands on the quarter hour", () => {
    const days = frameOf({
      from: "2026-03-29",
      to: "2026-03-29",
      granularity: "day",
      timezone: "Asia/Kathmandu",
    });
    expect(iso(days.edges)).toEqual(["2026-03-28T18:15:00.000Z", "2026-03-29T18:15:00.000Z"]);
  });

  test("weeks start on Monday, months on the first, in the zone", () => {
    const weeks = frameOf({
      from: "2026-03-25",
      to: "2026-04-01",
      granularity: "week",
      timezone: "Europe/Berlin",
    });
    expect(iso(weeks.edges)).toEqual([
      "2026-03-22T23:00:00.000Z",
      "2026-03-29T22:00:00.000Z",
      "2026-04-05T22:00:00.000Z",
    ]);
    const months = frameOf({
      from: "2026-02-10",
      to: "2026-03-31",
      granularity: "month",
      timezone: "America/New_York",
    });
    expect(iso(months.edges)).toEqual([
      "2026-02-01T05:00:00.000Z",
      "2026-03-01T05:00:00.000Z",
      "2026-04-01T04:00:00.000Z",
    ]);
  });

  test("the default range is the last 30 days in days", () => {
    const frame = frameOf({ timezone: "UTC" }, new Date("2026-11-27T03:00:00Z"));
    expect(frame.edges[0].toISOString()).toBe("2026-10-28T00:00:00.000Z");
    expect(frame.edges.at(-1)!.toISOString()).toBe("2026-11-28T00:00:00.000Z");
    expect(frame.edges).toHaveLength(32);
  });

  test("a frame with both bounds is kept, frozen; one ending now is computed each time; an error is not kept", () => {
    const query = { from: "2026-08-31", to: "2026-11-28", timezone: "Europe/Berlin" };
    const kept = frameOf(query);
    expect(frameOf({ ...query })).toBe(kept);
    expect(Object.isFrozen(kept) && Object.isFrozen(kept.edges)).toBe(true);
    expect(() => (kept.edges as Date[]).push(new Date())).toThrow(TypeError);
    expect(frameOf({ ...query, granularity: "week" })).not.toBe(kept);
    expect(frameOf({ ...query, timezone: "UTC" }).edges[0].toISOString()).toBe("2026-08-31T00:00:00.000Z");
    const before = frameOf({ from: "2026-11-01", timezone: "UTC" }, new Date("2026-11-27T03:00:00Z"));
    const after = frameOf({ from: "2026-11-01", timezone: "UTC" }, new Date("2026-11-28T03:00:00Z"));
    expect([before.edges.length, after.edges.length]).toEqual([28, 29]);
    const bad = { from: "2026-03-30", to: "2026-03-28", timezone: "UTC" };
    expect(fieldOf(() => frameOf(bad))).toBe("to");
    expect(fieldOf(() => frameOf(bad))).toBe("to");
  });

  test("points fill empty buckets with 0 and write t as UTC", () => {
    const frame = frameOf({ from: "2026-03-28", to: "2026-03-30", timezone: "Europe/Berlin" });
    expect(pointsOf(frame, new Map([[2, 7]]))).toEqual([
      { t: "2026-03-27T23:00:00.000Z", value: 0 },
      { t: "2026-03-28T23:00:00.000Z", value: 7 },
      { t: "2026-03-29T22:00:00.000Z", value: 0 },
    ]);
  });

  test("bad input names its field", () => {
    expect(fieldOf(() => frameOf({ timezone: "Mars/Olympus" }))).toBe("timezone");
    expect(fieldOf(() => frameOf({ from: "2026-03-30", to: "2026-03-28", timezone: "UTC" }))).toBe("to");
    expect(
      fieldOf(() => frameOf({ from: "2000-01-01", to: "2026-01-01", granularity: "hour", timezone: "UTC" })),
    ).toBe("granularity");
    // Until 1893 Berlin kept its local mean time (+00:53:28): no bucket edge on a quarter hour.
    expect(fieldOf(() => frameOf({ from: "1900-01-01", to: "1900-01-02", timezone: "Asia/Kolkata" }))).toBe(
      "timezone",
    );
    expect(fieldOf(() => frameOf({ from: "0001-01-01", timezone: "UTC" }))).toBe("from");
    expect(fieldOf(() => frameOf({ to: "9999-12-31", timezone: "UTC" }))).toBe("to");
    expect(validZone("Asia/Kolkata")).toBe("Asia/Kolkata");
  });
});

describe("rollup tiles", () => {
  const at = (iso: string) => Date.parse(iso);
  const show = (tiles: ReturnType<typeof tilesOf>) =>
    tiles.map((t) => `${t.tier} ${new Date(t.lo).toISOString()} ${new Date(t.hi).toISOString()}`);

  test("a 90-day Berlin range in one piece: the first hour, whole UTC days, the last 23 hours", () => {
    expect(show(tilesOf([[at("2026-01-01T23:00:00Z"), at("2026-04-01T22:00:00Z")]]))).toEqual([
      "1 2026-01-01T23:00:00.000Z 2026-01-02T00:00:00.000Z",
      "2 2026-01-02T00:00:00.000Z 2026-04-01T00:00:00.000Z",
      "1 2026-04-01T00:00:00.000Z 2026-04-01T22:00:00.000Z",
    ]);
  });

  test("Berlin days one by one are hours, merged into one tile across bucket edges", () => {
    expect(
      show(
        tilesOf([
          [at("2026-03-27T23:00:00Z"), at("2026-03-28T23:00:00Z")],
          [at("2026-03-28T23:00:00Z"), at("2026-03-29T22:00:00Z")],
        ]),
      ),
    ).toEqual(["1 2026-03-27T23:00:00.000Z 2026-03-29T22:00:00.000Z"]);
  });

  test("Kolkata days take quarters at each end", () => {
    expect(show(tilesOf([[at("2026-03-28T18:30:00Z"), at("2026-03-30T18:30:00Z")]]))).toEqual([
      "0 2026-03-28T18:30:00.000Z 2026-03-28T19:00:00.000Z",
      "1 2026-03-28T19:00:00.000Z 2026-03-29T00:00:00.000Z",
      "2 2026-03-29T00:00:00.000Z 2026-03-30T00:00:00.000Z",
      "1 2026-03-30T00:00:00.000Z 2026-03-30T18:00:00.000Z",
      "0 2026-03-30T18:00:00.000Z 2026-03-30T18:30:00.000Z",
    ]);
  });

  test("every span is covered once, edge to edge, with aligned tiles", () => {
    const spans: Array<[number, number]> = [
      [at("2026-03-01T05:45:00Z"), at("2026-03-01T06:00:00Z")],
      [at("2026-03-01T06:00:00Z"), at("2026-03-09T05:15:00Z")],
      [at("2026-03-09T05:15:00Z"), at("2026-03-09T05:30:00Z")],
    ];
    const tiles = tilesOf(spans);
    expect(tiles[0].lo).toBe(spans[0][0]);
    expect(tiles[tiles.length - 1].hi).toBe(spans[2][1]);
    const size = [900_000, 3_600_000, 86_400_000];
    for (const [i, tile] of tiles.entries()) {
      if (i > 0) expect(tile.lo).toBe(tiles[i - 1].hi);
      expect(tile.lo % size[tile.tier]).toBe(0);
      expect(tile.hi % size[tile.tier]).toBe(0);
    }
    expect(() => tilesOf([[at("2026-03-01T05:40:00Z"), at("2026-03-01T06:00:00Z")]])).toThrow();
  });
});
