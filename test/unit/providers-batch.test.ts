import { holesOf, joinWithKeys, skeletonOf } from "../../services/providers/clients/batch";

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
