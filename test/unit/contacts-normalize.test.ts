import { applyConsent } from "../../services/contacts/consent";
import { jsonAlternatives } from "../../services/contacts/contact-search.repo";
import {
  checkCustomFields,
  checkCustomValue,
  missingRequired,
  type CustomFieldDef,
} from "../../services/contacts/custom-fields";
import {
  hasIdentity,
  mergeObject,
  normalizeContactInput,
  normalizeEmail,
  normalizeLocale,
  normalizePhone,
  normalizeTimezone,
} from "../../services/contacts/normalize";

describe("normalize", () => {
  test("email is trimmed and lower-cased; junk refused", () => {
    expect(normalizeEmail("  Ada@Example.COM ")).toBe("ada@example.com");
    for (const bad of ["", "ada", "ada@", "@x.io", "a b@x.io", "ada@x", `${"a".repeat(250)}@x.io`])
      expect(normalizeEmail(bad)).toBeNull();
  });
  test("phone becomes E.164; national numbers need a default country", () => {
    expect(normalizePhone("+1 (415) 555-2671")).toBe("+14155552671");
    expect(normalizePhone("06 12 34 56 78")).toBeNull();
    expect(normalizePhone("06 12 34 56 78", "FR")).toBe("+33612345678");
    expect(normalizePhone("+1 555")).toBeNull();
  });
  test("phone: every possible number is kept, even where the numbering-plan metadata says 'not valid'", () => {
    // +1 555-01xx is the reserved fictional range; +44 7700 900xxx is Ofcom's drama range.
    expect(normalizePhone("+15550100111")).toBe("+15550100111");
    expect(normalizePhone("+1 (555) 010-0111")).toBe("+15550100111");
    expect(normalizePhone("+447700900123")).toBe("+447700900123");
    for (const bad of ["", "not a phone", "+", "+1", "+12", "+1234567890123456789", "12ab34"])
      expect(normalizePhone(bad)).toBeNull();
  });
  test("timezone must be IANA; locale canonicalised", () => {
    expect(normalizeTimezone("America/New_York")).toBe("America/New_York");
    expect(normalizeTimezone("Mars/Base")).toBeNull();
    expect(normalizeLocale("en_us")).toBe("en-US");
    expect(normalizeLocale("!!")).toBeNull();
  });
  test("input issues name each field; blanks clear; tags deduplicated", () => {
    const { write, issues } = normalizeContactInput({
      email: "x",
      phone: "1",
      tags: [" a", "a", "b"],
      city: "",
      attributes: { "a.b": 1 },
    });
    expect(issues.map((i) => i.field)).toEqual(["email", "phone", "attributes.a.b"]);
    expect(write.tags).toEqual(["a", "b"]);
    expect(write.city).toBeNull();
  });
  test("mergeObject: null removes a key", () => {
    expect(mergeObject({ a: 1, b: 2 }, { b: null, c: 3 })).toEqual({ a: 1, c: 3 });
  });
});

describe("custom fields", () => {
  const defs: CustomFieldDef[] = [
    { key: "size", type: "number", options: [], required: false },
    { key: "since", type: "date", options: [], required: true },
    { key: "vip", type: "boolean", options: [], required: false },
    { key: "tier", type: "select", options: ["gold", "silver"], required: false },
    { key: "langs", type: "multi-select", options: ["en", "fr"], required: false },
    { key: "note", type: "text", options: [], required: false },
  ];
  test("typed values checked; unknown keys refused", () => {
    const { values, issues } = checkCustomFields(defs, {
      size: "12",
      since: "2024-02-30",
      vip: true,
      tier: "bronze",
      langs: ["en", "en"],
      nope: 1,
      note: null,
    });
    expect(issues.map((i) => i.field)).toEqual([
      "customFields.size",
      "customFields.since",
      "customFields.tier",
      "customFields.nope",
    ]);
    expect(values).toEqual({ vip: true, langs: ["en"], note: null });
  });
  test("coerce accepts CSV text forms", () => {
    const def = (key: string) => defs.find((d) => d.key === key)!;
    expect(checkCustomValue(def("size"), "12.5", true)).toEqual({ value: 12.5 });
    expect(checkCustomValue(def("vip"), "Yes", true)).toEqual({ value: true });
    expect(checkCustomValue(def("langs"), "en; fr", true)).toEqual({ value: ["en", "fr"] });
    expect(checkCustomValue(def("langs"), '["fr"]', true)).toEqual({ value: ["fr"] });
    expect(checkCustomValue(def("since"), "2024-02-29", true)).toEqual({ value: "2024-02-29" });
    expect(checkCustomValue(def("size"), "abc", true).error).toBe("must be a number");
  });
  test("required fields reported when missing", () => {
    expect(missingRequired(defs, { size: 1 })).toEqual([
      { field: "customFields.since", message: "is required" },
    ]);
  });
});

describe("consent", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  test("one channel opt-out keeps the others and emits that channel", () => {
    const { consent, optOuts } = applyConsent(
      { email: { status: "opted_in", source: "form", updatedAt: null } },
      "sms",
      "opted_out",
      "api",
      now,
    );
    expect(consent.email.status).toBe("opted_in");
    expect(consent.sms).toEqual({ status: "opted_out", source: "api", updatedAt: now.toISOString() });
    expect(optOuts).toEqual(["sms"]);
  });
  test("all sets every channel and emits only all; opt-in emits nothing", () => {
    const out = applyConsent({}, "all", "opted_out", "link", now);
    expect(Object.keys(out.consent).sort()).toEqual(["chatapp1", "chatapp2", "email", "push", "sms"]);
    expect(out.optOuts).toEqual(["all"]);
    expect(applyConsent({}, "email", "opted_in", "api", now).optOuts).toEqual([]);
  });
});

describe("attribute filter values", () => {
  test("query text also matches the number or boolean it spells", () => {
    expect(jsonAlternatives("5")).toEqual(["5", 5]);
    expect(jsonAlternatives("true")).toEqual(["true", true]);
    expect(jsonAlternatives("pro")).toEqual(["pro"]);
    expect(jsonAlternatives("1e999")).toEqual(["1e999"]);
  });
});

describe("hasIdentity", () => {
  test("an email, phone, externalId or a chatapp1 chat identifies a contact; other attributes do not", () => {
    expect(hasIdentity({ email: "a@b.co" })).toBe(true);
    expect(hasIdentity({ externalId: "crm-1" })).toBe(true);
    expect(hasIdentity({ attributes: { chatapp1ChatId: "12345" } })).toBe(true);
    expect(hasIdentity({ attributes: { chatapp1ChatId: "" } })).toBe(false);
    expect(hasIdentity({ attributes: { plan: "pro" } })).toBe(false);
    expect(hasIdentity({ email: null, phone: null, attributes: null })).toBe(false);
  });
});
