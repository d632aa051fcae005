import { config } from "../../lib/config";
import { rewriteTextLinks, trackableTextLinks, trackingUrl } from "../../services/messages/links";

/** The text part's links (services/messages/links.ts): found as a derived text part writes them, signed as the HTML's. */
describe("links of a text part", () => {
  const text = [
    "Hello Ana!",
    "",
    "Our news [https://example.com/news?a=1&b=2], or see https://example.com/shop.",
    "(Also https://example.com/faq) and http://old.example.com/x, twice: https://example.com/shop",
  ].join("\n");

  it("finds each http(s) address once, without the punctuation after it, leaving our own links out", () => {
    const own = `${config().publicUrl}/api/unsubscribe?token=t`;
    expect(trackableTextLinks(`${text}\nUnsubscribe [${own}]`, config().publicUrl)).toEqual([
      "https://example.com/news?a=1&b=2",
      "https://example.com/shop",
      "https://example.com/faq",
      "http://old.example.com/x",
    ]);
  });

  it("puts every coded address through the message's signed short link, the same URL the HTML's link gets", () => {
    const codes = new Map([
      ["https://example.com/news?a=1&b=2", "n1"],
      ["https://example.com/shop", "s1"],
    ]);
    const out = rewriteTextLinks(text, "m1", codes);
    expect(out).toContain(`Our news [${trackingUrl("m1", "n1")}], or see ${trackingUrl("m1", "s1")}.`);
    expect(out).toContain(`twice: ${trackingUrl("m1", "s1")}`);
    expect(out).toContain("(Also https://example.com/faq) and http://old.example.com/x,");
  });
});
