import { holesOf, joinWithKeys, skeletonOf } from "../../services/providers/clients/batch";
import { rounds } from "../../services/providers/emailapi2/client";
import type { BatchRecipient } from "../../services/providers/clients/types";

describe("batched bodies", () => {
  const source =
    '<html><body><p>Hi {{ contact.firstName }}</p><a href="https://example.com/a?c={{ contact.id }}">A</a><a href="{{ unsubscribeUrl }}">Leave</a></body></html>';

  it("cuts a source at outputs, links, the top and the end of the body", () => {
    expect(skeletonOf(source, true)).toEqual([
      "<html><body>",
      "<p>Hi ",
      '</p><a href="',
      '">A</a><a href="',
      '">Leave</a>',
      "</body></html>",
    ]);
    expect(skeletonOf("Hi {{ contact.firstName }}!", false)).toEqual(["Hi ", "!"]);
    expect(skeletonOf("{% if a %}x{% endif %}", false)).toBeNull();
    expect(skeletonOf("Hi {{- name }}", false)).toBeNull();
  });

  it("reads each recipient's holes back from its rendered message, so filling them gives it exactly", () => {
    const literals = skeletonOf(source, true)!;
    const rendered =
      '<html><body><div style="display:none">Pre</div><p>Hi Ana</p><a href="https://t.test/x?m=1&amp;u=a">A</a><a href="https://cms.test/api/unsubscribe?token=t">Leave</a><img src="https://t.test/px?m=1"></body></html>';
    const holes = holesOf(rendered, literals)!;
    expect(holes).toEqual([
      '<div style="display:none">Pre</div>',
      "Ana",
      "https://t.test/x?m=1&amp;u=a",
      "https://cms.test/api/unsubscribe?token=t",
      '<img src="https://t.test/px?m=1">',
    ]);
    const body = joinWithKeys(literals, (i) => `-k${i}-`);
    expect(holes.reduce((text, hole, i) => text.replace(`-k${i}-`, hole), body)).toBe(rendered);
  });

  it("refuses a message without the source's fixed parts", () => {
    const literals = skeletonOf("Hi {{ name }}, bye", false)!;
    expect(holesOf("Hello Ana, bye", literals)).toBeNull();
    expect(holesOf("Hi Ana, bye!", literals)).toBeNull();
    expect(holesOf("Hi , bye", literals)).toEqual([""]);
  });
});

describe("Mailgun batch rounds", () => {
  const recipient = (to: string, headers: Record<string, string>): BatchRecipient => ({
    message: { messageId: to, channel: "email", to, content: {}, headers },
    html: [],
    text: null,
  });

  it("puts each address once per request, case-insensitively, and only recipients of the same header names together", () => {
    const marketing = { "List-Unsubscribe": "<u>" };
    const split = rounds([
      recipient("a@x.test", marketing),
      recipient("b@x.test", marketing),
      recipient("A@x.test", marketing),
      recipient("c@x.test", {}),
      recipient("a@x.test", marketing),
      recipient("d@x.test", {}),
    ]);
    expect(split.map((round) => round.map(({ recipient: r, at }) => `${at}:${r.message.to}`))).toEqual([
      ["0:a@x.test", "1:b@x.test"],
      ["2:A@x.test"],
      ["3:c@x.test", "5:d@x.test"],
      ["4:a@x.test"],
    ]);
  });
});
