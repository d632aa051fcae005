import { findCycle, MAX_DEPTH, OPERATORS, validateFilter } from "../../services/segments/filter-schema";

const one = (condition: unknown) => ({ match: "all", conditions: [condition] });
const fieldsOf = (filter: unknown) => validateFilter(filter).issues.map((i) => i.field);

describe("validateFilter", () => {
  test("accepts the contract's example and reports its facts", () => {
    const filter = {
      match: "all",
      conditions: [
        { field: "email", operator: "ends_with", value: "@acme.com" },
        { field: "attributes.plan", operator: "in", value: ["pro", "team"] },
        { field: "tags", operator: "contains", value: "vip" },
        { field: "createdAt", operator: "within_last", value: { days: 30 } },
        {
          event: "purchase",
          operator: "performed",
          count: { gte: 2 },
          within: { days: 30 },
          where: [{ field: "metadata.amount", operator: "gt", value: 100 }],
        },
        { segment: "s1", operator: "in" },
        {
          match: "any",
          conditions: [
            { field: "score", operator: "gte", value: 10 },
            { segment: "s2", operator: "not_in" },
          ],
        },
      ],
    };
    const { issues, facts } = validateFilter(filter);
    expect(issues).toEqual([]);
    expect(facts).toEqual({
      segmentIds: ["s1", "s2"],
      segmentRefs: [
        { id: "s1", path: "filter.conditions[5].segment" },
        { id: "s2", path: "filter.conditions[6].conditions[1].segment" },
      ],
      eventTypes: ["purchase"],
      usesScore: true,
      timeRelative: true,
    });
  });

  test("a filter is time-relative when it reads the clock, wherever the node is", () => {
    const timeRelative = (filter: unknown) => validateFilter(filter).facts.timeRelative;
    expect(timeRelative(one({ field: "createdAt", operator: "within_last", value: { days: 7 } }))).toBe(true);
    expect(
      timeRelative(one({ field: "attributes.trialEnds", operator: "within_last", value: { days: 1 } })),
    ).toBe(true);
    expect(
      timeRelative(
        one({
          match: "any",
          conditions: [{ event: "login", operator: "not_performed", within: { days: 30 } }],
        }),
      ),
    ).toBe(true);
    expect(
      timeRelative(
        one({
          event: "login",
          operator: "performed",
          where: [{ field: "timestamp", operator: "within_last", value: { days: 2 } }],
        }),
      ),
    ).toBe(true);
    // Fixed dates never move: before/after/between compare with constants.
    expect(timeRelative(one({ field: "createdAt", operator: "before", value: "2024-01-01" }))).toBe(false);
    expect(timeRelative(one({ field: "createdAt", operator: "after", value: "2024-01-01" }))).toBe(false);
    expect(timeRelative(one({ event: "login", operator: "performed", count: { gte: 2 } }))).toBe(false);
    expect(timeRelative(one({ field: "email", operator: "eq", value: "within_last" }))).toBe(false);
  });

  test("reports the path of each bad node", () => {
    expect(fieldsOf(one({ field: "nope", operator: "eq", value: "x" }))).toEqual([
      "filter.conditions[0].field",
    ]);
    expect(fieldsOf(one({ field: "score", operator: "contains", value: "x" }))).toEqual([
      "filter.conditions[0].operator",
    ]);
    expect(fieldsOf(one({ field: "score", operator: "gt", value: "10" }))).toEqual([
      "filter.conditions[0].value",
    ]);
    expect(fieldsOf({ match: "some", conditions: [] })).toEqual(["filter.match"]);
    expect(fieldsOf({ match: "all" })).toEqual(["filter.conditions"]);
    expect(fieldsOf(one({ field: "email", event: "x", operator: "eq" }))).toEqual(["filter.conditions[0]"]);
    expect(fieldsOf(one({ event: "purchase", operator: "did" }))).toEqual(["filter.conditions[0].operator"]);
    expect(fieldsOf(one({ event: "purchase", operator: "performed", count: { gte: -1 } }))).toEqual([
      "filter.conditions[0].count",
    ]);
    expect(fieldsOf(one({ event: "purchase", operator: "performed", count: { gte: 1, lte: 2 } }))).toEqual([
      "filter.conditions[0].count",
    ]);
    expect(fieldsOf(one({ event: "purchase", operator: "performed", within: { days: 0 } }))).toEqual([
      "filter.conditions[0].within",
    ]);
    expect(
      fieldsOf(
        one({
          event: "purchase",
          operator: "performed",
          where: [{ field: "email", operator: "eq", value: "x" }],
        }),
      ),
    ).toEqual(["filter.conditions[0].where[0].field"]);
    expect(fieldsOf(one({ segment: "s", operator: "contains" }))).toEqual(["filter.conditions[0].operator"]);
    expect(fieldsOf(one({ field: "email", operator: "eq", value: "x", sql: "1=1" }))).toEqual([
      "filter.conditions[0].sql",
    ]);
    expect(
      fieldsOf(one({ match: "any", conditions: [{ field: "tags", operator: "gt", value: 1 }] })),
    ).toEqual(["filter.conditions[0].conditions[0].operator"]);
    expect(fieldsOf(null)).toEqual(["filter"]);
  });

  test("values must fit the operator", () => {
    const bad: Array<[string, string, unknown]> = [
      ["email", "eq", 5],
      ["email", "contains", ""],
      ["email", "in", []],
      ["email", "in", [1]],
      ["score", "between", [1]],
      ["score", "between", ["a", "b"]],
      ["score", "in", ["1"]],
      ["createdAt", "before", "yesterday"],
      ["createdAt", "between", ["2024-01-01", 5]],
      ["createdAt", "within_last", { days: 1.5 }],
      ["createdAt", "within_last", 7],
      ["email", "is_set", "x"],
      ["consent.email", "eq", "maybe"],
      ["attributes.plan", "eq", { nested: true }],
      ["attributes.plan", "in", [["x"]]],
    ];
    for (const [field, operator, value] of bad) {
      expect([field, operator, fieldsOf(one({ field, operator, value }))]).toEqual([
        field,
        operator,
        ["filter.conditions[0].value"],
      ]);
    }
  });

  test("operators are checked per field type", () => {
    expect(OPERATORS.date).not.toContain("contains");
    expect(fieldsOf(one({ field: "createdAt", operator: "eq", value: "2024-01-01" }))).toEqual([
      "filter.conditions[0].operator",
    ]);
    expect(fieldsOf(one({ field: "tags", operator: "eq", value: "x" }))).toEqual([
      "filter.conditions[0].operator",
    ]);
    expect(fieldsOf(one({ field: "consent.email", operator: "contains", value: "x" }))).toEqual([
      "filter.conditions[0].operator",
    ]);
    expect(fieldsOf(one({ field: "consent.fax", operator: "eq", value: "opted_in" }))).toEqual([
      "filter.conditions[0].field",
    ]);
    expect(fieldsOf(one({ field: "company.secret", operator: "eq", value: "x" }))).toEqual([
      "filter.conditions[0].field",
    ]);
    expect(fieldsOf(one({ field: "attributes.", operator: "is_set" }))).toEqual([
      "filter.conditions[0].field",
    ]);
    expect(fieldsOf(one({ field: "attributes.a..b", operator: "is_set" }))).toEqual([
      "filter.conditions[0].field",
    ]);
  });

  test("field names that look like SQL are unknown fields, never identifiers", () => {
    for (const field of [
      "email; DROP TABLE contacts",
      "c.email",
      "email--",
      "1=1",
      "__proto__",
      "constructor",
      "toString",
    ]) {
      expect(fieldsOf(one({ field, operator: "is_set" }))).toEqual(["filter.conditions[0].field"]);
    }
  });

  test(`groups nest at most ${MAX_DEPTH} deep`, () => {
    const nest = (depth: number) => {
      let g: Record<string, unknown> = { match: "all", conditions: [{ field: "email", operator: "is_set" }] };
      for (let i = 1; i < depth; i += 1) g = { match: "all", conditions: [g] };
      return g;
    };
    expect(validateFilter(nest(MAX_DEPTH)).issues).toEqual([]);
    const issues = validateFilter(nest(MAX_DEPTH + 1)).issues;
    expect(issues).toHaveLength(1);
    expect(issues[0].field).toBe(`filter${".conditions[0]".repeat(MAX_DEPTH)}`);
  });

  test("a filter may hold at most 200 conditions", () => {
    const many = {
      match: "any",
      conditions: Array.from({ length: 201 }, () => ({ field: "email", operator: "is_set" })),
    };
    expect(fieldsOf(many)).toEqual(["filter.conditions[200]"]);
  });
});

describe("findCycle", () => {
  const graph = new Map([
    ["b", ["c"]],
    ["c", ["d"]],
    ["d", []],
  ]);
  test("no cycle", () => expect(findCycle("a", ["b"], graph)).toBeNull());
  test("self reference", () => expect(findCycle("a", ["a"], graph)).toEqual(["a", "a"]));
  test("indirect cycle", () => {
    const g = new Map(graph);
    g.set("d", ["a"]);
    expect(findCycle("a", ["b"], g)).toEqual(["a", "b", "c", "d", "a"]);
  });
});
