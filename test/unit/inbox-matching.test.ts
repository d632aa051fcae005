import {
  bareMessageId,
  keywordMatch,
  literalLiquid,
  replyContent,
  replyHeaders,
  replySubject,
} from "../../services/inbox/matching";
import { renderContent } from "../../services/templates/render";

describe("inbox matching", () => {
  it("keywords match whole words in any case; none match anything", () => {
    expect(keywordMatch([], "anything")).toBe(true);
    expect(keywordMatch(["price"], "What is the PRICE?")).toBe(true);
    expect(keywordMatch(["price"], "priceless")).toBe(false);
    expect(keywordMatch(["opening hours"], "your opening hours please")).toBe(true);
    expect(keywordMatch(["c++"], "I love c++ a lot")).toBe(true);
    expect(keywordMatch(["préstamo"], "un préstamo?")).toBe(true);
  });

  it("a reply's text is sent as written: Liquid in it prints itself", async () => {
    const text = "Use {{ contact.email }} or {% if x %}";
    const rendered = await renderContent({ body: literalLiquid(text) }, { contact: { email: "leak@x" } });
    expect(rendered.body).toBe(text);
    const email = replyContent("email", "a < b\nsee {x}", "Hello");
    const html = await renderContent(email, {});
    expect(html).toEqual({
      subject: "Re: Hello",
      text: "a < b\nsee {x}",
      html: "<p>a &lt; b<br>see {x}</p>",
    });
    expect(replyContent("sms", "hi", null)).toEqual({ body: "hi" });
    expect(replySubject("RE: Hello")).toBe("RE: Hello");
  });

  it("email replies carry In-Reply-To and References of the message they answer", () => {
    expect(bareMessageId(" <abc@mg.test> ")).toBe("abc@mg.test");
    expect(replyHeaders({ providerMessageId: "in-2@x", refs: ["out-1@y"] })).toEqual({
      "In-Reply-To": "<in-2@x>",
      References: "<out-1@y> <in-2@x>",
    });
    expect(replyHeaders({ providerMessageId: null, refs: [] })).toEqual({});
  });
});
