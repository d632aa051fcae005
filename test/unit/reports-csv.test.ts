import { parse } from "csv-parse/sync";
import { csvText, flatten, rowsOf, table } from "../../services/reports/csv";

describe("report CSV", () => {
  test("nested keys are joined by dots, arrays by index", () => {
    expect(flatten({ a: 1, b: { c: "x", d: { e: true } }, r: [0.5, 0.25], n: null, o: {} })).toEqual([
      ["a", 1],
      ["b.c", "x"],
      ["b.d.e", true],
      ["r.0", 0.5],
      ["r.1", 0.25],
      ["n", null],
      ["o", null],
    ]);
    expect(flatten(7)).toEqual([["value", 7]]);
  });

  test("a row per item of the first top-level array; one row when there is none", () => {
    expect(rowsOf({ metric: "sent", points: [{ t: 1 }, { t: 2 }] })).toEqual([{ t: 1 }, { t: 2 }]);
    expect(rowsOf({ total: 3, orders: 1 })).toEqual([{ total: 3, orders: 1 }]);
  });

  test("columns are every key met, in the order first met; missing cells are empty", () => {
    const answer = {
      channels: [
        { channel: "email", counts: { sent: 2 }, suppressed: { dnc: 1 } },
        { channel: "sms", counts: { sent: 1 }, suppressed: { unsubscribed: 4 } },
      ],
    };
    expect(table(answer)).toEqual({
      header: ["channel", "counts.sent", "suppressed.dnc", "suppressed.unsubscribed"],
      rows: [
        ["email", 2, 1, null],
        ["sms", 1, null, 4],
      ],
    });
  });

  test("the text parses back to the same cells, quoting included", async () => {
    const answer = { sources: [{ utmSource: 'news, "weekly"', utmMedium: null, contacts: 3, live: false }] };
    const parsed = parse(await csvText(answer), { columns: true });
    expect(parsed).toEqual([{ utmSource: 'news, "weekly"', utmMedium: "", contacts: "3", live: "false" }]);
  });
});
