import type { ContactRow } from "../../services/contacts/contacts.repo";
import { emailKey } from "../../services/contacts/duplicates.repo";
import { deepLink } from "../../services/contacts/link";
import { mergedConsent, mergedProfile } from "../../services/contacts/merge";
import { asWorkspaceId } from "../../lib/tenancy";

const row = (over: Partial<ContactRow>): ContactRow => ({
  id: "x",
  workspace_id: asWorkspaceId("w"),
  email: null,
  phone: null,
  first_name: null,
  last_name: null,
  external_id: null,
  locale: null,
  timezone: null,
  country: null,
  city: null,
  tags: [],
  attributes: {},
  custom_fields: {},
  stage: null,
  score: 0,
  company_id: null,
  owner_id: null,
  consent: {},
  created_at: new Date(),
  updated_at: new Date(),
  ...over,
});

describe("merge", () => {
  test("the primary keeps its values, fills gaps from duplicates in order, unions tags, sums scores", () => {
    const m = mergedProfile(row({ email: "p@x.io", tags: ["a"], attributes: { plan: "pro" }, score: 3 }), [
      row({
        email: "d@x.io",
        first_name: "First",
        tags: ["b", "a"],
        attributes: { plan: "free", seats: 1 },
        score: 2,
      }),
      row({ first_name: "Second", city: "Oslo", tags: ["c"], attributes: { seats: 9 }, score: 1 }),
    ]);
    expect(m).toMatchObject({
      email: "p@x.io",
      first_name: "First",
      city: "Oslo",
      tags: ["a", "b", "c"],
      attributes: { plan: "pro", seats: 1 },
      score: 6,
    });
  });
  test("consent: an opt-out anywhere wins, else the newest decision", () => {
    const consent = mergedConsent([
      {
        email: { status: "opted_in", source: "form", updatedAt: "2026-01-02" },
        sms: { status: "opted_in", source: "a", updatedAt: "2026-01-01" },
      },
      {
        email: { status: "opted_out", source: "link", updatedAt: "2025-01-01" },
        sms: { status: "opted_in", source: "b", updatedAt: "2026-02-01" },
      },
      { email: { status: "opted_in", source: "api", updatedAt: "2027-01-01" } },
    ]);
    expect(consent.email.status).toBe("opted_out");
    expect(consent.sms.source).toBe("b");
  });
});

describe("duplicates and links", () => {
  test("email key ignores +tags and dots of the local part", () => {
    expect(emailKey("John.Doe+news@Mail.com")).toBe("johndoe@mail.com");
    expect(emailKey("johndoe@mail.com")).toBe("johndoe@mail.com");
  });
  test("deep link carries the token as start, keeping other query parameters", () => {
    expect(deepLink("https://chat.example/bot?lang=en", "T0k")).toBe(
      "https://chat.example/bot?lang=en&start=T0k",
    );
  });
});
