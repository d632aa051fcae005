import { repliedToKeys } from "../../services/messages/replied-to";

test("a mail's references are looked up as provider ids, bare and bracketed, and as our ids where they are our Message-IDs", () => {
  expect(repliedToKeys(["<m_abc@acme.test>", " 0102abc@email.amazonses.com ", "sg-1", ""])).toEqual({
    providerIds: [
      "m_abc@acme.test",
      "0102abc@email.amazonses.com",
      "sg-1",
      "<m_abc@acme.test>",
      "<0102abc@email.amazonses.com>",
      "<sg-1>",
    ],
    ownIds: ["m_abc", "0102abc"],
  });
});

test("an id with no local part names none of ours; the last @ splits one with an @ in its local part", () => {
  expect(repliedToKeys(["@acme.test", "a@b@acme.test"]).ownIds).toEqual(["a@b"]);
});
