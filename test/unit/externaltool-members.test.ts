import { retryAfterSeconds } from "../../services/integrations/externaltool/client";
import {
  contactOf,
  memberOf,
  sampleOf,
  subscriberHash,
} from "../../services/integrations/externaltool/members";

test("the member hash is md5 of the lowercase email (the API's documented example)", () => {
  expect(subscriberHash("Urist.McVankab@freddiesjokes.com")).toBe(
    subscriberHash("urist.mcvankab@freddiesjokes.com"),
  );
  expect(subscriberHash("urist.mcvankab@freddiesjokes.com")).toBe("62eeb292278cc15f5817cb78f7790b08");
});

test.each([
  ["subscribed", { email: "opted_in" }],
  ["unsubscribed", { email: "opted_out" }],
  ["cleaned", { email: "opted_out" }],
  ["pending", undefined],
  ["transactional", undefined],
  ["archived", undefined],
])("a %s member imports with consent %j", (status, consent) => {
  expect(contactOf({ email_address: "a@b.test", status }, []).consent).toEqual(consent);
});

test("an imported member: merge fields, blank ones left out, remote tags and the import's own without repeats", () => {
  const member = {
    email_address: " Ada@Example.test ",
    status: "subscribed",
    merge_fields: { FNAME: "Ada", LNAME: " ", PHONE: "+33612345678", BIRTHDAY: "12/10" },
    tags: [{ id: 1, name: "vip" }, { id: 2, name: "" }, { name: 3 }],
  };
  expect(contactOf(member, ["vip", "imported"])).toEqual({
    contact: {
      email: "Ada@Example.test",
      firstName: "Ada",
      lastName: null,
      phone: "+33612345678",
      tags: ["vip", "imported"],
    },
    consent: { email: "opted_in" },
  });
  expect(contactOf({ status: "subscribed" }, []).contact).toEqual({
    email: null,
    firstName: null,
    lastName: null,
    phone: null,
  });
  expect(sampleOf({ email_address: 42, status: null })).toMatchObject({ email: "", status: "", tags: [] });
});

test("a pushed contact: its fields as merge fields, subscribed unless it opted out of email, none without an email", () => {
  const contact = { email: "ada@example.test", firstName: "Ada", lastName: null, phone: "+33612345678" };
  expect(memberOf(contact)).toEqual({
    email_address: "ada@example.test",
    status_if_new: "subscribed",
    merge_fields: { FNAME: "Ada", PHONE: "+33612345678" },
  });
  expect(memberOf({ ...contact, consent: { email: { status: "opted_out" } } })?.status_if_new).toBe(
    "unsubscribed",
  );
  expect(memberOf({ ...contact, consent: { sms: { status: "opted_out" } } })?.status_if_new).toBe(
    "subscribed",
  );
  expect(memberOf({ ...contact, email: null })).toBeNull();
});

test.each([
  [null, 1],
  ["3", 3],
  ["0", 0],
  ["600", 60],
  ["soon", 1],
  [new Date(Date.UTC(2026, 0, 1, 0, 0, 5)).toUTCString(), 5],
])("Retry-After %s waits %d s (at most a minute)", (header, seconds) => {
  expect(retryAfterSeconds(header, Date.UTC(2026, 0, 1))).toBe(seconds);
});
