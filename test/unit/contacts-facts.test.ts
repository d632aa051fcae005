import { contactFacts, optOutFact } from "../../services/contacts/effects";
import { changedFields } from "../../services/contacts/fields";

test("a contact write's facts: created, then updated, then deleted, with the spec 6.2 fields", () => {
  expect(
    contactFacts({
      deleted: [{ id: "d", email: null }],
      updated: [{ id: "u", email: "u@example.test", firstName: "Una", changedFields: ["firstName"] }],
      created: [{ id: "c", email: "c@example.test", firstName: "Cy", lastName: "Lee" }],
    }),
  ).toEqual([
    {
      type: "contact.created",
      data: { contactId: "c", email: "c@example.test", firstName: "Cy", lastName: "Lee" },
    },
    {
      type: "contact.updated",
      data: { contactId: "u", email: "u@example.test", firstName: "Una", lastName: null },
      changedFields: ["firstName"],
    },
    { type: "contact.deleted", data: { contactId: "d", email: null } },
  ]);
  expect(contactFacts({})).toEqual([]);
});

test("an opt-out fact names its channel and source", () => {
  expect(optOutFact({ id: "c", email: "c@example.test", externalId: "x-1" }, "sms", "import")).toEqual({
    type: "unsubscribe.sms",
    data: { contactId: "c", email: "c@example.test", externalId: "x-1", channel: "sms", source: "import" },
  });
});

test("the fields a write changed, by API name: JSON keys and consent channels one by one", () => {
  const before = {
    first_name: "Ann",
    tags: ["a"],
    score: "5",
    custom_fields: { plan: "free", seats: 2 },
    attributes: {},
    consent: { email: { status: "opted_in", source: "api" }, sms: { status: "unknown" } },
  };
  const after = {
    first_name: "Ann",
    tags: ["a", "b"],
    score: 5,
    custom_fields: { plan: "pro", seats: 2 },
    attributes: { vip: true },
    consent: { email: { status: "opted_in", source: "form" }, sms: { status: "opted_out" } },
  };
  expect(changedFields(before, after)).toEqual([
    "tags",
    "attributes.vip",
    "customFields.plan",
    "consent.sms",
  ]);
  expect(changedFields(after, after)).toEqual([]);
  expect(changedFields({ custom_fields: { old: 1 } }, { custom_fields: null })).toEqual(["customFields.old"]);
});
