import { Readable } from "node:stream";
import { contactRow, encodeAttributeCell, headerRow } from "../../services/contacts/csv-export";
import {
  checkMapping,
  decodeAttributeCell,
  decodeConsentCell,
  decodeRow,
  decodeTags,
  parseTarget,
  planColumns,
  readCsv,
  type CsvItem,
} from "../../services/contacts/csv-import";
import { fullConsent, type ContactView } from "../../services/contacts/contacts.repo";

describe("csv import mapping", () => {
  test("targets: field names in any case or style, attributes.*, customFields.* and consent.<channel>", () => {
    expect(parseTarget("First Name")).toEqual({ kind: "field", field: "firstName" });
    expect(parseTarget("first_name")).toEqual({ kind: "field", field: "firstName" });
    expect(parseTarget("EMAIL")).toEqual({ kind: "field", field: "email" });
    expect(parseTarget("attributes.plan")).toEqual({ kind: "attributes", key: "plan" });
    expect(parseTarget("customFields.size")).toEqual({ kind: "customFields", key: "size" });
    expect(parseTarget("consent.sms")).toEqual({ kind: "consent", channel: "sms" });
    expect(parseTarget("Consent.Email")).toEqual({ kind: "consent", channel: "email" });
    expect(parseTarget("consent.fax")).toBeNull();
    expect(parseTarget("consent.all")).toBeNull();
    expect(parseTarget("password")).toBeNull();
    expect(parseTarget("attributes.")).toBeNull();
  });
  test("mapping checked; columns planned with ignored ones listed (read-only export columns silently)", () => {
    expect(checkMapping({ Mail: "email", X: null, Y: "nope" }).issues).toEqual([
      {
        field: "mapping.Y",
        message: "must name a contact field, attributes.<key>, customFields.<key> or consent.<channel>",
      },
    ]);
    expect(checkMapping([1]).issues[0].field).toBe("mapping");
    const plan = planColumns(["Mail", "id", "createdAt", "Colour", "X"], { Mail: "email", X: null });
    expect(plan.targets.map((t) => t && ("field" in t ? t.field : "key" in t ? t.key : t.channel))).toEqual([
      "email",
      null,
      null,
      null,
      null,
    ]);
    expect(plan.ignored).toEqual(["Colour", "X"]);
  });
  test("cells: attributes typed from JSON, tags split, empty cells mean not given", () => {
    expect(decodeAttributeCell("42")).toBe(42);
    expect(decodeAttributeCell("true")).toBe(true);
    expect(decodeAttributeCell('"42"')).toBe("42");
    expect(decodeAttributeCell("hello")).toBe("hello");
    expect(decodeAttributeCell("{broken")).toBe("{broken");
    expect(decodeTags("a; b;;c")).toEqual(["a", "b", "c"]);
    expect(decodeTags('["x;y"]')).toEqual(["x;y"]);
    const plan = planColumns(["email", "tags", "attributes.n", "city"], {});
    expect(decodeRow(["a@b.io", "", "7", " "], plan)).toEqual({
      input: { email: "a@b.io", attributes: { n: 7 } },
      consent: undefined,
      issues: [],
    });
  });
  test("consent cells: statuses in any case; unknown and empty leave consent as is; others are issues", () => {
    expect(decodeConsentCell(" Opted_Out ")).toBe("opted_out");
    expect(decodeConsentCell("unknown")).toBe("unknown");
    expect(decodeConsentCell("yes")).toBeNull();
    const plan = planColumns(["email", "consent.email", "consent.sms", "consent.push", "SMS ok"], {
      "SMS ok": "consent.chatapp1",
    });
    expect(decodeRow(["a@b.io", "opted_out", "unknown", "", "OPTED_IN"], plan)).toEqual({
      input: { email: "a@b.io" },
      consent: { email: "opted_out", chatapp1: "opted_in" },
      issues: [],
    });
    const bad = decodeRow(["a@b.io", "opted_out", "maybe", "", ""], plan);
    expect(bad.issues).toEqual([
      { field: "consent.sms", message: expect.stringMatching(/^must be opted_in/) },
    ]);
  });
  test("readCsv streams rows with their lines and reports broken ones", async () => {
    const csv = 'email,city\na@x.io,Oslo\nb@x.io\n"c@x.io","Ro\nme"\n\ne@x.io,Rome\nd@x.io,"unclosed\n';
    const items: CsvItem[] = [];
    for await (const item of readCsv(Readable.from([csv]), {})) items.push(item);
    expect(items[0].kind).toBe("header");
    expect(items.slice(1).map((i) => [i.kind, "line" in i ? i.line : 0])).toEqual([
      ["row", 2],
      ["bad", 3],
      ["row", 4],
      ["row", 7],
      ["bad", 8],
    ]);
  });
});

describe("csv export", () => {
  const contact: ContactView = {
    id: "c1",
    email: "a@b.io",
    phone: null,
    firstName: "A",
    lastName: null,
    externalId: null,
    locale: null,
    timezone: null,
    country: null,
    city: null,
    tags: ["x", "y"],
    attributes: { n: 42, s: "42", t: "text", o: { a: [1] } },
    customFields: { langs: ["en"], size: 3 },
    stage: null,
    score: 0,
    companyId: null,
    ownerId: null,
    consent: {
      ...fullConsent({}),
      sms: { status: "opted_out", source: "api", updatedAt: "2026-01-01T00:00:00.000Z" },
    },
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
  };
  test("attribute cells round-trip through decodeAttributeCell", () => {
    for (const value of [42, "42", "text", true, "true", { a: [1] }, [1, "x"], "", '"quoted"']) {
      expect(decodeAttributeCell(encodeAttributeCell(value))).toEqual(value);
    }
  });
  test("a row follows the header: tags joined, consent statuses, attributes and custom fields flattened", () => {
    const columns = { attributes: ["n", "s"], customFields: ["langs", "size"] };
    const header = headerRow(columns);
    const row = contactRow(contact, columns);
    expect(row).toHaveLength(header.length);
    const consent = header.flatMap((h, i) => (h.startsWith("consent.") ? [[h, row[i]]] : []));
    expect(consent).toEqual([
      ["consent.email", "unknown"],
      ["consent.sms", "opted_out"],
      ["consent.push", "unknown"],
      ["consent.chatapp1", "unknown"],
      ["consent.chatapp2", "unknown"],
    ]);
    expect(header.slice(-4)).toEqual([
      "attributes.n",
      "attributes.s",
      "customFields.langs",
      "customFields.size",
    ]);
    expect(row[header.indexOf("tags")]).toBe("x;y");
    expect(row.slice(-4)).toEqual(["42", '"42"', '["en"]', "3"]);
  });
});
