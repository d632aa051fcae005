import { asWorkspaceId } from "../../lib/tenancy";
import { Binds } from "../../lib/database";
import {
  compileWhere,
  decaysAtSql,
  periodStartSql,
  ruleShapeIssues,
  scoringRounds,
  validateCondition,
  validateWhere,
  type RuleShape,
} from "../../services/scoring/rules";

describe("scoring rules", () => {
  test("where is validated with paths rooted at `where`", () => {
    expect(validateWhere([{ field: "metadata.amount", operator: "gt", value: 10 }])).toEqual([]);
    expect(validateWhere([{ field: "email", operator: "eq", value: "x" }])).toEqual([
      { field: "where[0].field", message: "unknown field 'email'" },
    ]);
    expect(validateWhere([{ field: "metadata.amount", operator: "gt", value: "ten" }])[0].field).toBe(
      "where[0].value",
    );
    expect(validateWhere("nope")[0].field).toBe("where");
  });

  test("where compiles to one predicate over e, values bound", () => {
    const binds = new Binds();
    expect(compileWhere(null, binds)).toBe("true");
    expect(compileWhere([], binds)).toBe("true");
    const sql = compileWhere(
      [
        { field: "metadata.amount", operator: "gt", value: 10 },
        { field: "utmSource", operator: "eq", value: "x' OR 1=1" },
      ],
      binds,
    );
    expect(sql).toBe(
      "COALESCE((segments_num((e.metadata #> $1::text[])) > $2::numeric AND e.utm_source = $3::text), false)",
    );
    expect(binds.values).toEqual([["amount"], 10, "x' OR 1=1"]);
  });

  test("cap periods are fixed windows", () => {
    expect(periodStartSql("$1::timestamptz", "$2::int")).toBe(
      "to_timestamp(floor(extract(epoch FROM $1::timestamptz) / ($2::int * 86400)) * ($2::int * 86400))",
    );
  });

  test("decay expiry is the event time plus the rule's days, or never", () => {
    expect(decaysAtSql("$7::timestamptz", "$12::int")).toBe(
      "CASE WHEN $12::int IS NULL THEN NULL ELSE $7::timestamptz + make_interval(days => $12::int) END",
    );
  });
});

describe("rule conditions", () => {
  const all = (...conditions: unknown[]) => ({ match: "all", conditions });

  test("a condition is the segments language with paths rooted at `condition`, and reports its event types", () => {
    expect(validateCondition(all({ field: "attributes.plan", operator: "eq", value: "pro" }))).toEqual({
      issues: [],
      eventTypes: [],
    });
    expect(
      validateCondition(
        all({ match: "any", conditions: [{ event: "purchase", operator: "performed", count: { gte: 3 } }] }),
      ),
    ).toEqual({ issues: [], eventTypes: ["purchase"] });
    expect(validateCondition(all({ field: "nope", operator: "eq", value: 1 })).issues).toEqual([
      { field: "condition.conditions[0].field", message: "unknown field 'nope'" },
    ]);
    expect(validateCondition({ match: "some", conditions: [] }).issues[0].field).toBe("condition.match");
    expect(validateCondition("plan is pro").issues[0].field).toBe("condition");
  });

  test("a condition may not read the score, segment membership or the clock", () => {
    const fields = (condition: unknown) => validateCondition(condition).issues.map((i) => i.field);
    expect(fields(all({ field: "score", operator: "gte", value: 10 }))).toEqual([
      "condition.conditions[0].field",
    ]);
    expect(fields(all({ match: "any", conditions: [{ segment: "s1", operator: "in" }] }))).toEqual([
      "condition.conditions[0].conditions[0].segment",
    ]);
    expect(fields(all({ field: "createdAt", operator: "within_last", value: { days: 3 } }))).toEqual([
      "condition.conditions[0].operator",
    ]);
    expect(fields(all({ event: "login", operator: "performed", within: { days: 3 } }))).toEqual([
      "condition.conditions[0].within",
    ]);
    expect(
      fields(
        all(
          { field: "email", operator: "is_set" },
          {
            event: "login",
            operator: "performed",
            where: [{ field: "timestamp", operator: "within_last", value: { days: 1 } }],
          },
        ),
      ),
    ).toEqual(["condition.conditions[1].where[0].operator"]);
    // Fixed dates are fine: they do not move as time passes.
    expect(fields(all({ field: "createdAt", operator: "before", value: "2024-01-01" }))).toEqual([]);
  });
});

describe("rule shape", () => {
  const shape = (fields: Partial<RuleShape>): RuleShape => ({
    eventType: null,
    condition: undefined,
    where: undefined,
    maxPerContact: null,
    periodCap: undefined,
    decay: undefined,
    ...fields,
  });
  const condition = { match: "all", conditions: [] };

  test("exactly one of eventType and condition, naming the field", () => {
    expect(ruleShapeIssues(shape({ eventType: "purchase" }), new Set(["eventType"]))).toEqual([]);
    expect(ruleShapeIssues(shape({ condition }), new Set(["condition"]))).toEqual([]);
    expect(ruleShapeIssues(shape({}), new Set())).toEqual([
      { field: "eventType", message: "a rule needs eventType (an event rule) or condition" },
    ]);
    const both = shape({ eventType: "purchase", condition });
    expect(ruleShapeIssues(both, new Set(["eventType", "condition"]))[0].field).toBe("condition");
    // A PATCH giving eventType to a condition rule names eventType.
    expect(ruleShapeIssues(both, new Set(["eventType"]))[0].field).toBe("eventType");
  });

  test("where, caps and decay belong to event rules", () => {
    expect(
      ruleShapeIssues(
        shape({
          eventType: "purchase",
          where: [{}],
          maxPerContact: 2,
          periodCap: { max: 1, days: 1 },
          decay: { days: 3 },
        }),
        new Set(),
      ),
    ).toEqual([]);
    expect(
      ruleShapeIssues(
        shape({
          condition,
          where: [{}],
          maxPerContact: 2,
          periodCap: { max: 1, days: 1 },
          decay: { days: 3 },
        }),
        new Set(),
      ).map((i) => i.field),
    ).toEqual(["where", "maxPerContact", "periodCap", "decay"]);
    // Cleared values are no values.
    expect(ruleShapeIssues(shape({ condition, where: [], decay: null, periodCap: null }), new Set())).toEqual(
      [],
    );
  });
});

describe("scoring rounds", () => {
  const job = (contactId: string, group = "g", workspaceId = "w") => ({
    workspaceId: asWorkspaceId(workspaceId),
    contactId,
    group,
  });

  it("puts a contact's events in successive rounds, in arrival order", () => {
    expect(scoringRounds([job("a"), job("b"), job("a"), job("a"), job("b")])).toEqual([
      [[0, 1]],
      [[2, 4]],
      [[3]],
    ]);
  });

  it("groups a round by rule set, and tells workspaces apart", () => {
    expect(scoringRounds([job("a", "x"), job("b", "y"), job("c", "x"), job("a", "x", "v")])).toEqual([
      [[0, 2, 3], [1]],
    ]);
  });

  it("answers no rounds for no jobs", () => {
    expect(scoringRounds([])).toEqual([]);
  });
});
