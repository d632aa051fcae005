import { contactWriteOf, definitionIssues, readSubmission, targetOf } from "../../services/forms/form-fields";
import type { FormField } from "../../services/forms/forms.schemas";

const field = (f: Partial<FormField> & Pick<FormField, "key" | "type">): FormField => ({
  label: f.key,
  required: false,
  ...f,
});

describe("form definitions", () => {
  it("maps to a visitor's own contact fields, JSON keys or consent channels only", () => {
    expect(targetOf("email")).toEqual({ kind: "field", name: "email" });
    expect(targetOf("customFields.plan")).toEqual({ kind: "json", doc: "customFields", key: "plan" });
    expect(targetOf("consent.sms")).toEqual({ kind: "consent", channel: "sms" });
    for (const refused of [
      "ownerId",
      "stage",
      "tags",
      "score",
      "consent.fax",
      "customFields.a.b",
      "customFields.",
    ])
      expect(targetOf(refused)).toBeNull();
  });

  it("names each problem by its path", () => {
    expect(
      definitionIssues([
        field({ key: "a", type: "select" }),
        field({ key: "a", type: "text", options: ["x"] }),
        field({ key: "pageUrl", type: "consent", mapTo: "consent.email" }),
        field({ key: "b", type: "consent" }),
        field({ key: "c", type: "text", mapTo: "consent.sms" }),
        field({ key: "d", type: "number", validation: { min: 5, max: 1 } }),
        field({ key: "e", type: "email", mapTo: "firstName" }),
        field({ key: "f", type: "hidden", mapTo: "customFields.size" }),
        field({ key: "g", type: "text", mapTo: "customFields.size" }),
      ]),
    ).toEqual([
      { field: "fields[0].options", message: "a select field needs options" },
      { field: "fields[1].key", message: "a is used by another field" },
      { field: "fields[1].options", message: "a text field takes no options" },
      { field: "fields[2].key", message: "pageUrl is reserved" },
      { field: "fields[3].mapTo", message: "a consent field maps to consent.<channel>" },
      { field: "fields[4].mapTo", message: "only a consent field maps to consent" },
      { field: "fields[5].validation.min", message: "must not be above max" },
      { field: "fields[6].mapTo", message: "an email field maps to email or a custom field" },
      { field: "fields[8].mapTo", message: "customFields.size is written by another field" },
    ]);
  });
});

describe("submissions", () => {
  const fields = [
    field({ key: "email", type: "email", required: true, mapTo: "email" }),
    field({ key: "name", type: "text", mapTo: "firstName", validation: { minLength: 2 } }),
    field({ key: "size", type: "radio", options: ["S", "M"], mapTo: "customFields.size" }),
    field({ key: "topics", type: "checkbox", options: ["news", "offers"] }),
    field({ key: "age", type: "number", validation: { min: 18 } }),
    field({ key: "born", type: "date" }),
    field({ key: "terms", type: "consent", required: true, label: "I agree", mapTo: "consent.email" }),
    field({ key: "utm_source", type: "hidden", defaultValue: "direct" }),
  ];

  it("reads form posts (text) and JSON alike, leaving blank optional fields out", () => {
    expect(
      readSubmission(fields, {
        email: " ann@example.com ",
        name: "",
        size: "M",
        topics: ["news", "offers"],
        age: "21",
        terms: "on",
      }),
    ).toEqual({
      values: {
        email: "ann@example.com",
        size: "M",
        topics: ["news", "offers"],
        age: 21,
        terms: true,
        utm_source: "direct",
      },
      issues: [],
    });
    expect(
      readSubmission(fields, { email: "a@b.co", terms: true, topics: "news", utm_source: "ad" }).values,
    ).toEqual({
      email: "a@b.co",
      terms: true,
      topics: ["news"],
      utm_source: "ad",
    });
  });

  it("refuses what the rules do not allow, by key", () => {
    expect(
      readSubmission(fields, {
        email: "nope",
        name: "A",
        size: "XL",
        topics: ["spam"],
        age: "12",
        born: "2026-02-31x",
        terms: "no",
      }).issues,
    ).toEqual([
      { field: "email", message: "must be an email address" },
      { field: "name", message: "must be at least 2 characters" },
      { field: "size", message: "must be one of S, M" },
      { field: "topics", message: "must be among news, offers" },
      { field: "age", message: "must be at least 18" },
      { field: "born", message: "must be a date such as 2026-01-31" },
      { field: "terms", message: "must be accepted" },
    ]);
    expect(readSubmission(fields, { terms: true }).issues).toEqual([
      { field: "email", message: "is required" },
    ]);
    expect(readSubmission([field({ key: "t", type: "text" })], { t: "x".repeat(1001) }).issues).toEqual([
      { field: "t", message: "must be at most 1000 characters" },
    ]);
  });

  it("writes mapped values to the contact and ticked consent with the text shown", () => {
    const { values } = readSubmission(fields, { email: "a@b.co", size: "S", terms: true, name: "Al" });
    expect(contactWriteOf(fields, values)).toEqual({
      contact: { email: "a@b.co", firstName: "Al", customFields: { size: "S" } },
      consent: [{ channel: "email", text: "I agree" }],
      keyOf: { email: "email", firstName: "name", "customFields.size": "size", customFields: "size" },
    });
  });
});
