import { Binds, likeEscape } from "../../lib/database";
import { compileField, compileFilter } from "../../services/segments/filter-compiler";
import { OPERATORS, type FieldOperator, type FilterGroup } from "../../services/segments/filter-schema";

const compile = (filter: FilterGroup, mode: "row" | "set" = "row") => {
  const binds = new Binds(["ws"]);
  const sql = compileFilter(filter, binds, { mode, workspaceParam: "$1" });
  return { sql, values: binds.values };
};
const one = (condition: FilterGroup["conditions"][number]): FilterGroup => ({
  match: "all",
  conditions: [condition],
});

/** A value that fits each operator (per field type), for the exhaustive sweep. */
function sampleValue(type: string, op: FieldOperator): unknown {
  if (op === "is_set" || op === "is_not_set") return undefined;
  if (op === "within_last") return { days: 3 };
  if (op === "before" || op === "after") return "2024-01-01";
  if (op === "between") return type === "date" ? ["2024-01-01", "2024-02-01"] : [1, 2];
  if (op === "in" || op === "not_in")
    return type === "number" ? [1, 2] : type === "consent" ? ["opted_in"] : ["x'y", "z"];
  if (["gt", "gte", "lt", "lte"].includes(op)) return 7;
  if (type === "number") return 7;
  if (type === "consent") return "opted_out";
  return "x'y";
}

const FIELD_OF_TYPE: Record<string, string> = {
  text: "firstName",
  email: "email",
  number: "score",
  date: "createdAt",
  tags: "tags",
  consent: "consent.email",
  json: "attributes.plan",
};

describe("compileFilter", () => {
  test("every operator of every type compiles, values only as bind parameters", () => {
    for (const [type, ops] of Object.entries(OPERATORS)) {
      for (const op of ops) {
        const value = sampleValue(type, op);
        for (const mode of ["row", "set"] as const) {
          const { sql, values } = compile(one({ field: FIELD_OF_TYPE[type], operator: op, value }), mode);
          expect(sql).not.toContain("x'y");
          expect(sql).not.toContain("2024-01-01");
          // row: a boolean that is never NULL; set: a WHERE condition, whose NULL excludes the row
          if (mode === "row") expect(sql.startsWith("COALESCE(")).toBe(true);
          else expect(sql.startsWith("COALESCE(")).toBe(false);
          // every placeholder refers to a bound value, and every bound value is referenced
          const used = new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
          for (let i = 2; i <= values.length; i += 1)
            expect([type, op, used.has(i)]).toEqual([type, op, true]);
          expect(Math.max(0, ...used)).toBeLessThanOrEqual(values.length);
        }
      }
    }
  });

  test("text operators: ILIKE with escaped patterns, email lower-cased", () => {
    expect(compile(one({ field: "email", operator: "eq", value: "A@B.C" }))).toEqual({
      sql: "COALESCE((c.email = $2::text), false)",
      values: ["ws", "a@b.c"],
    });
    expect(compile(one({ field: "firstName", operator: "contains", value: "50%_off\\" })).values[1]).toBe(
      "%50\\%\\_off\\\\%",
    );
    expect(compile(one({ field: "firstName", operator: "starts_with", value: "An" })).values[1]).toBe("An%");
    expect(compile(one({ field: "firstName", operator: "ends_with", value: "nn" })).values[1]).toBe("%nn");
    expect(compile(one({ field: "firstName", operator: "neq", value: "x" })).sql).toContain(
      "IS DISTINCT FROM",
    );
    expect(compile(one({ field: "firstName", operator: "not_in", value: ["x"] })).sql).toContain(
      "c.first_name IS NULL OR NOT",
    );
  });

  test("number, date, tags and consent shapes", () => {
    expect(compile(one({ field: "score", operator: "between", value: [1, 5] })).sql).toBe(
      "COALESCE((c.score BETWEEN $2::numeric AND $3::numeric), false)",
    );
    expect(compile(one({ field: "createdAt", operator: "within_last", value: { days: 9 } }))).toEqual({
      sql: "COALESCE(((c.created_at >= now() - make_interval(days => $2::int) AND c.created_at <= now())), false)",
      values: ["ws", 9],
    });
    expect(compile(one({ field: "tags", operator: "contains", value: "vip" })).sql).toBe(
      "COALESCE((c.tags @> ARRAY[$2::text]), false)",
    );
    expect(compile(one({ field: "tags", operator: "in", value: ["a", "b"] })).values).toEqual([
      "ws",
      ["a", "b"],
    ]);
    const consent = compile(one({ field: "consent.sms", operator: "eq", value: "opted_in" }));
    expect(consent.values).toEqual(["ws", "sms", "opted_in"]);
    expect(consent.sql).toContain("COALESCE(c.consent -> $2::text ->> 'status', 'unknown')");
  });

  test("JSON fields: path and values bound, JSON equality", () => {
    const { sql, values } = compile(one({ field: "attributes.a.b", operator: "eq", value: 42 }));
    expect(values).toEqual(["ws", ["a", "b"], "42"]);
    expect(sql).toBe("COALESCE(((c.attributes #> $2::text[]) = $3::jsonb), false)");
    expect(compile(one({ field: "customFields.size", operator: "in", value: ["L", 1] })).values).toEqual([
      "ws",
      ["size"],
      ['"L"', "1"],
    ]);
    expect(compile(one({ field: "attributes.n", operator: "gt", value: 3 })).sql).toContain("segments_num(");
    expect(compile(one({ field: "attributes.d", operator: "before", value: "2024-01-01" })).sql).toContain(
      "segments_ts(",
    );
  });

  test("behaviour: correlated in row mode, semi-join in set mode", () => {
    const cond = one({ event: "purchase", operator: "performed", count: { gte: 2 }, within: { days: 30 } });
    const row = compile(cond, "row");
    expect(row.sql).toContain(
      "(SELECT count(*) FROM events e WHERE e.contact_id = c.id AND e.type = $2::text",
    );
    expect(row.sql).toContain(">= $4::int");
    expect(row.values).toEqual(["ws", "purchase", 30, 2]);
    const set = compile(cond, "set");
    expect(set.sql).toContain("c.id IN (SELECT e.contact_id FROM events e WHERE e.workspace_id = $1");
    expect(set.sql).toContain("GROUP BY e.contact_id HAVING count(*) >= $4::int");
    expect(compile(one({ event: "x", operator: "performed" }), "row").sql).toContain(
      "EXISTS (SELECT 1 FROM events e",
    );
    expect(compile(one({ event: "x", operator: "not_performed" }), "set").sql).toBe(
      "(NOT EXISTS (SELECT 1 FROM (SELECT e.contact_id FROM events e WHERE e.workspace_id = $1 AND e.contact_id IS NOT NULL AND e.type = $2::text) d WHERE d.contact_id = c.id))",
    );
    expect(compile(one({ event: "x", operator: "performed", count: { lte: 2 } }), "set").sql).toContain(
      "HAVING count(*) > $3::int",
    );
    expect(compile(one({ event: "x", operator: "performed", count: { gte: 0 } }))).toEqual({
      sql: "COALESCE((true), false)",
      values: ["ws"],
    });
    expect(compile(one({ event: "x", operator: "not_performed", count: { gte: 0 } })).sql).toBe(
      "COALESCE((false), false)",
    );
  });

  test("segment membership", () => {
    expect(compile(one({ segment: "s1", operator: "in" }), "row").sql).toContain(
      "EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = $2::text AND sm.contact_id = c.id)",
    );
    expect(compile(one({ segment: "s1", operator: "in" }), "set").sql).toBe(
      "(c.id IN (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = $2::text))",
    );
    expect(compile(one({ segment: "s1", operator: "not_in" }), "set").sql).toBe(
      "(NOT EXISTS (SELECT 1 FROM (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = $2::text) d WHERE d.contact_id = c.id))",
    );
  });

  test("groups: all/any and empty groups", () => {
    expect(compile({ match: "all", conditions: [] }).sql).toBe("COALESCE(true, false)");
    expect(compile({ match: "any", conditions: [] }).sql).toBe("COALESCE(false, false)");
    const any = compile({
      match: "any",
      conditions: [
        { field: "score", operator: "gt", value: 1 },
        {
          match: "all",
          conditions: [
            { field: "tags", operator: "is_set" },
            { field: "email", operator: "is_set" },
          ],
        },
      ],
    });
    expect(any.sql).toBe(
      "COALESCE((c.score > $2::numeric OR (cardinality(c.tags) > 0 AND (c.email IS NOT NULL AND c.email <> ''))), false)",
    );
  });

  test("set mode: joins where AND-ed into the WHERE, hashed subplans under an OR", () => {
    const scan = (type: string) =>
      `SELECT e.contact_id FROM events e WHERE e.workspace_id = $1 AND e.contact_id IS NOT NULL AND e.type = ${type}`;
    // all: every term AND-ed with no wrapper, so each sublink becomes a join; negation an anti-join
    expect(
      compile(
        {
          match: "all",
          conditions: [
            { field: "tags", operator: "contains", value: "vip" },
            { event: "signup", operator: "not_performed", within: { days: 60 } },
            {
              match: "all",
              conditions: [
                { segment: "s1", operator: "not_in" },
                { segment: "s2", operator: "in" },
              ],
            },
          ],
        },
        "set",
      ).sql,
    ).toBe(
      `(c.tags @> ARRAY[$2::text] AND NOT EXISTS (SELECT 1 FROM (${scan("$3::text")} AND e.timestamp >= now() - make_interval(days => $4::int)) d WHERE d.contact_id = c.id)` +
        ` AND (NOT EXISTS (SELECT 1 FROM (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = $5::text) d WHERE d.contact_id = c.id)` +
        ` AND c.id IN (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = $6::text)))`,
    );
    // any: one OR over one scan, each set hashed once (NOT IN, never NULL: the ids are never NULL)
    expect(
      compile(
        {
          match: "any",
          conditions: [
            { field: "tags", operator: "contains", value: "vip" },
            { event: "signup", operator: "not_performed" },
            { match: "all", conditions: [{ segment: "s1", operator: "not_in" }] },
          ],
        },
        "set",
      ),
    ).toEqual({
      sql:
        `(c.tags @> ARRAY[$2::text] OR NOT (c.id IN (${scan("$3::text")}))` +
        ` OR (NOT (c.id IN (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = $4::text))))`,
      values: ["ws", "vip", "signup", "s1"],
    });
    // field conditions only: the row predicate, unwrapped
    const plain: FilterGroup = {
      match: "any",
      conditions: [
        { field: "score", operator: "gt", value: 1 },
        { match: "all", conditions: [] },
      ],
    };
    expect(compile(plain, "set").sql).toBe("(c.score > $2::numeric OR true)");
    expect(compile(plain, "row").sql).toBe("COALESCE((c.score > $2::numeric OR true), false)");
    // empty groups
    expect(compile({ match: "all", conditions: [] }, "set").sql).toBe("true");
    expect(compile({ match: "any", conditions: [] }, "set").sql).toBe("false");
  });

  test("set mode: each count rule, either way, as a semi-join or an anti-join", () => {
    const shape = (
      operator: "performed" | "not_performed",
      count?: { gte?: number; lte?: number; eq?: number },
    ) => compile(one({ event: "x", operator, ...(count ? { count } : {}) }), "set").sql;
    const semi = /^\(c\.id IN \(SELECT e\.contact_id FROM events e/;
    const anti = /^\(NOT EXISTS \(SELECT 1 FROM \(SELECT e\.contact_id FROM events e/;
    expect(shape("performed")).toMatch(semi);
    expect(shape("not_performed")).toMatch(anti);
    expect(shape("performed", { gte: 2 })).toMatch(semi);
    expect(shape("performed", { gte: 2 })).toContain("HAVING count(*) >= $3::int");
    expect(shape("not_performed", { gte: 2 })).toMatch(anti);
    expect(shape("not_performed", { gte: 2 })).toContain("HAVING count(*) >= $3::int");
    expect(shape("performed", { lte: 2 })).toMatch(anti);
    expect(shape("performed", { lte: 2 })).toContain("HAVING count(*) > $3::int");
    expect(shape("not_performed", { lte: 2 })).toMatch(semi);
    expect(shape("not_performed", { lte: 2 })).toContain("HAVING count(*) > $3::int");
    expect(shape("performed", { eq: 0 })).toMatch(anti);
    expect(shape("performed", { eq: 0 })).not.toContain("HAVING");
    expect(shape("not_performed", { eq: 0 })).toMatch(semi);
    expect(shape("performed", { eq: 2 })).toMatch(semi);
    expect(shape("not_performed", { eq: 2 })).toMatch(anti);
    expect(shape("not_performed", { eq: 2 })).toContain("HAVING count(*) = $3::int");
    for (const operator of ["performed", "not_performed"] as const) {
      for (const count of [undefined, { gte: 2 }, { lte: 2 }, { eq: 0 }, { eq: 2 }]) {
        expect(shape(operator, count)).not.toMatch(/NOT \(c\.id IN|COALESCE/);
      }
    }
  });

  test("injection attempts in values never reach the SQL text", () => {
    const hostile = "'); DROP TABLE contacts; -- $1 ::text";
    const conditions: FilterGroup["conditions"] = [
      { field: "email", operator: "eq", value: hostile },
      { field: "firstName", operator: "contains", value: hostile },
      { field: "attributes.plan", operator: "in", value: [hostile] },
      { field: `attributes.${hostile}`, operator: "eq", value: hostile },
      {
        event: hostile,
        operator: "performed",
        where: [{ field: `metadata.${hostile}`, operator: "eq", value: hostile }],
      },
      { segment: hostile, operator: "in" },
    ];
    for (const mode of ["row", "set"] as const) {
      const { sql, values } = compile({ match: "any", conditions }, mode);
      expect(sql).not.toContain("DROP");
      expect(sql).not.toContain("'); ");
      expect(JSON.stringify(values)).toContain("DROP TABLE");
    }
  });

  test("an unknown field name never becomes an identifier", () => {
    expect(() =>
      compileField({ field: "email; DROP TABLE x", operator: "eq", value: "a" }, new Binds(), "contact"),
    ).toThrow(/Unknown field/);
    expect(() =>
      compileField({ field: "metadata.a", operator: "eq", value: "a" }, new Binds(), "contact"),
    ).toThrow(/Unknown field/);
  });

  test("likeEscape", () => {
    expect(likeEscape("a%b_c\\d")).toBe("a\\%b\\_c\\\\d");
  });
});
