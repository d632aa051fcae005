import { contactFacts, optOutFact } from "../../services/contacts/effects";

test("a contact write's facts: created, then updated, then deleted, with the spec 6.2 fields", () => {
  expect(
    contactFacts({
      deleted: [{ id: "d", email: null }],
      updated: [{ id: "u", email: "u@example.test", firstName: "Una" }],
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
