import { Binds } from "../../services/segments/filter-compiler";
import { compileWhere, periodStartSql, validateWhere } from "../../services/scoring/rules";

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
});
