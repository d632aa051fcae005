import crypto from "node:crypto";
import { compose, type Renderable } from "../../services/templates/compose";
import {
  checkLiquid,
  compileMjml,
  finishEmail,
  pickLocale,
  pickVariant,
  prepareEmail,
  renderContent,
  renderScope,
  TemplateFault,
} from "../../services/templates/render";

const workspace = { name: "Acme", slug: "acme" };

function template(overrides: Partial<Renderable> = {}): Renderable {
  return {
    id: "tpl-1",
    channel: "email",
    locale: "en",
    content: {
      subject: "Hello {{ contact.firstName }}",
      html: "<p>Hi {{ contact.firstName }}</p>",
      text: null,
    },
    translations: {},
    ab: null,
    ...overrides,
  };
}

async function faultOf(work: Promise<unknown>): Promise<TemplateFault> {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TemplateFault);
  return err as TemplateFault;
}

describe("pickLocale: contact locale, its language, the workspace default, the base", () => {
  const available = ["de", "fr-CA", "pt"];
  it.each([
    ["fr-CA", "en", "fr-CA"],
    ["FR-ca", "en", "fr-CA"],
    ["de-AT", "en", "de"],
    ["es", "pt", "pt"],
    ["es", "en", "en"],
    [null, "de", "de"],
    [undefined, "it", "en"],
    ["en-GB", "de", "en"],
  ])("contact %p with default %p reads %p", (contactLocale, defaultLocale, expected) => {
    expect(pickLocale("en", available, contactLocale, defaultLocale)).toBe(expected);
  });
});

describe("pickVariant", () => {
  const variants = [
    { id: "A", weight: 30 },
    { id: "B", weight: 70 },
  ];

  it("gives a contact the same variant every time", () => {
    const first = pickVariant("tpl-1", "contact-42", variants);
    for (let i = 0; i < 20; i++) expect(pickVariant("tpl-1", "contact-42", variants)).toBe(first);
  });

  it("follows the contract's hash: SHA-256 of templateId:contactId, uint32 mod 100, on cumulative weights", () => {
    const digest = crypto.createHash("sha256").update("t:c").digest();
    const bucket = digest.readUInt32BE(0) % 100;
    const expected = bucket < 30 ? "A" : "B";
    expect(pickVariant("t", "c", variants)).toBe(expected);
  });

  it("splits a large audience by the weights", () => {
    const counts: Record<string, number> = { A: 0, B: 0 };
    for (let i = 0; i < 20_000; i++) counts[pickVariant("tpl-1", `contact-${i}`, variants) as string]++;
    expect(counts.A / 20_000).toBeGreaterThan(0.28);
    expect(counts.A / 20_000).toBeLessThan(0.32);
  });

  it("gives every contact a fixed winner, and none without variants", () => {
    expect(pickVariant("tpl-1", "contact-1", variants, "B")).toBe("B");
    expect(pickVariant("tpl-1", "contact-1", variants, "Z")).toMatch(/^[AB]$/);
    expect(pickVariant("tpl-1", "contact-1", [])).toBeNull();
  });
});

describe("renderContent", () => {
  it("renders missing variables empty and reserved names over the caller's variables", async () => {
    const scope = renderScope(
      { contact: { firstName: "Ada" }, workspace },
      { contact: "shadowed", coupon: "SAVE10" },
    );
    const out = await renderContent(
      { body: "{{ contact.firstName }}|{{ coupon }}|{{ nothing.here }}|{{ workspace.name }}" },
      scope,
    );
    expect(out.body).toBe("Ada|SAVE10||Acme");
  });

  it("keeps a variable named __proto__ a plain variable: the scope's prototype stays", async () => {
    const variables = JSON.parse('{"__proto__": {"polluted": "yes"}, "coupon": "SAVE10"}');
    const scope = renderScope({ contact: {}, workspace }, variables);
    expect(Object.getPrototypeOf(scope)).toBe(Object.prototype);
    expect(Object.hasOwn(scope, "__proto__")).toBe(true);
    expect((await renderContent({ body: "{{ polluted }}|{{ coupon }}" }, scope)).body).toBe("|SAVE10");
  });

  it("renders nested fields (buttons) and leaves non-Liquid text untouched", async () => {
    const out = await renderContent(
      { text: "plain", buttons: [{ text: "Go {{ n }}", url: "https://x.test/{{ n }}" }] },
      renderScope({ contact: {}, workspace }, { n: 3 }),
    );
    expect(out).toEqual({ text: "plain", buttons: [{ text: "Go 3", url: "https://x.test/3" }] });
  });

  it("refuses file access: include and render find nothing", async () => {
    const fault = await faultOf(
      renderContent({ html: "{% include '/etc/passwd' %}" }, renderScope({ contact: {}, workspace })),
    );
    expect(fault.details[0].field).toBe("content.html");
    await faultOf(renderContent({ html: "{% render 'secrets' %}" }, renderScope({ contact: {}, workspace })));
  });

  it("stops a runaway loop instead of holding the worker", async () => {
    const fault = await faultOf(
      renderContent(
        { body: "{% for i in (1..100000000) %}{{ i }}{% endfor %}" },
        renderScope({ contact: {}, workspace }),
      ),
    );
    expect(fault.details[0].field).toBe("content.body");
  });

  it("stops a render that runs past its time budget", async () => {
    const fault = await faultOf(
      renderContent(
        { body: "{% for i in (1..3000) %}{% for j in (1..3000) %}{% endfor %}{% endfor %}" },
        renderScope({ contact: {}, workspace }),
      ),
    );
    expect(fault.details[0].message).toMatch(/limit/i);
  });

  it("fails on an unknown filter (strict filters)", async () => {
    await faultOf(
      renderContent({ body: "{{ 'x' | no_such_filter }}" }, renderScope({ contact: {}, workspace })),
    );
  });

  it("renders a dynamic slot from the scope, or nothing", async () => {
    const scope = renderScope({ contact: {}, workspace, dynamic: { hero: "<b>Sale</b>" } });
    const out = await renderContent({ html: '[{% dynamic "hero" %}][{% dynamic "other" %}]' }, scope);
    expect(out.html).toBe("[<b>Sale</b>][]");
  });
});

describe("checkLiquid", () => {
  it("names every faulty field with its line", () => {
    let fault: TemplateFault | null = null;
    try {
      checkLiquid({ subject: "ok {{ a }}", html: "line one\nline two {% if %}\n", text: "{{ x | nope }}" });
    } catch (err) {
      fault = err as TemplateFault;
    }
    expect(fault).toBeInstanceOf(TemplateFault);
    const fields = fault?.details.map((d) => d.field);
    expect(fields).toContain("content.html");
    expect(fields).toContain("content.text");
    expect(fields).not.toContain("content.subject");
    expect(fault?.details.find((d) => d.field === "content.html")?.line).toBe(2);
  });
});

describe("compileMjml", () => {
  it("compiles MJML into responsive HTML", async () => {
    const out = await compileMjml({
      mjml: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{ contact.firstName }}</mj-text></mj-column></mj-section></mj-body></mjml>",
    });
    expect(out.html).toEqual(expect.stringContaining("Hi {{ contact.firstName }}"));
    expect(out.html).toEqual(expect.stringContaining("<!doctype html>"));
  });

  it("answers MJML's faults with the field and line", async () => {
    const fault = await faultOf(
      compileMjml({ mjml: "<mjml><mj-body>\n<mj-section><mj-bogus/></mj-section></mj-body></mjml>" }),
    );
    expect(fault.details[0]).toMatchObject({ field: "content.mjml", line: 2 });
  });

  it("leaves content without MJML alone", async () => {
    const content = { html: "<p>x</p>" };
    expect(await compileMjml(content)).toBe(content);
  });
});

describe("prepareEmail (once per template text)", () => {
  it("inlines CSS from style tags", () => {
    const out = prepareEmail({
      html: "<html><head><style>p { color: red; }</style></head><body><p>Hi</p></body></html>",
      text: null,
    });
    expect(out.html).toMatch(/<p style="color: red;">Hi<\/p>/);
  });

  it("derives a text part when none is given, headings as written, skipping images, and keeps a given one", () => {
    const derived = prepareEmail({
      html: '<h1>Title</h1><p>Body <a href="https://x.test">link</a></p><img src="a.png">',
    });
    expect(derived.text).toMatch(/^Title\n/);
    expect(derived.text).toMatch(/Body link \[https:\/\/x\.test\]/);
    expect(derived.text).not.toMatch(/a\.png/);
    expect(prepareEmail({ html: "<p>x</p>", text: "mine" }).text).toBe("mine");
  });

  it("keeps every Liquid token whole through inlining and text derivation, even past the wrap width", () => {
    const html =
      '<html><head><style>td { padding: 4px; }</style></head><body><table>{% for item in items %}<tr><td title="{{ item.title | escape }}">{{ item.name | upcase | append: " and a long tail that would wrap" }}</td></tr>{% endfor %}</table><a href="{{ unsubscribeUrl }}">Unsubscribe</a></body></html>';
    const out = prepareEmail({ html });
    expect(out.html).toContain('<td title="{{ item.title | escape }}" style="padding: 4px;">');
    expect(out.html).toContain("{% for item in items %}<tr>");
    // In the text part each output prints the text of what it prints into the HTML.
    expect(out.text).toContain(
      '{{ item.name | upcase | append: " and a long tail that would wrap" | text_of_html }}',
    );
    expect(out.text).toContain("Unsubscribe [{{ unsubscribeUrl | text_of_html }}]");
    expect(out.text).toContain("{% for item in items %}");
  });

  it("gives an email without HTML an empty text part rather than undefined", () => {
    expect(prepareEmail({ html: "" })).toMatchObject({ html: null, text: "" });
  });
});

describe("finishEmail", () => {
  it("puts an escaped, hidden preheader first in the body", () => {
    const out = finishEmail({ html: "<html><body><p>x</p></body></html>", preheader: "Save <now>" });
    expect(out.html).toMatch(/<body><div style="display:none[^"]*">Save &lt;now&gt;<\/div><p/);
  });

  it("leaves an email without a preheader as rendered", () => {
    const rendered = { html: "<p>x</p>", preheader: " " };
    expect(finishEmail(rendered)).toEqual(rendered);
  });

  it("drops the blanks an empty variable leaves at a line's end", () => {
    expect(finishEmail({ text: "Hello Ana \nBye  \n" }).text).toBe("Hello Ana\nBye");
  });
});

describe("compose of an email", () => {
  it("renders the prepared source: inlined styles, a text part with the contact's values", async () => {
    const out = await compose(
      template({
        content: {
          subject: "Hi",
          preheader: "For {{ contact.firstName }}",
          html: '<html><head><style>p { color: red; }</style></head><body><p>Hi {{ contact.firstName }}</p><a href="{{ unsubscribeUrl }}">u</a></body></html>',
          text: null,
        },
      }),
      {
        contact: { id: "c", firstName: "Ada" },
        defaultLocale: "en",
        workspace,
        unsubscribeUrl: "https://u.test/x",
      },
    );
    expect(out.content.html).toContain('<p style="color: red;">Hi Ada</p>');
    expect(out.content.html).toContain(">For Ada</div>");
    expect(out.content.text).toContain("Hi Ada");
    expect(out.content.text).toContain("u [https://u.test/x]");
  });

  it("gives a text part that reads as the rendered HTML: a heading as written, markup and entities of values as text", async () => {
    const out = await compose(
      template({
        content: {
          subject: "Hi",
          html: '<h1>Hello {{ contact.firstName }}!</h1><p>{% dynamic "promo" %} {{ note }} {{ formula | escape }}</p>',
          text: null,
        },
      }),
      {
        contact: { id: "c", firstName: "Ana" },
        defaultLocale: "en",
        workspace,
        dynamic: { promo: "<b>Half price</b>" },
        variables: { note: "for Tom &amp; <i>Jerry</i>", formula: "a < b" },
      },
    );
    expect(out.content.text).toBe("Hello Ana!\n\nHalf price for Tom & Jerry a < b");
  });

  it("leaves outputs inside {% raw %} as they print", async () => {
    const out = await compose(
      template({ content: { subject: "Hi", html: "<p>{% raw %}{{ kept }}{% endraw %}</p>", text: null } }),
      { contact: { id: "c" }, defaultLocale: "en", workspace },
    );
    expect(out.content.text).toBe("{{ kept }}");
  });
});

describe("compose", () => {
  it("overlays the translation the contact reads, then its variant, then renders", async () => {
    const out = await compose(
      template({
        translations: { de: { subject: "Hallo {{ contact.firstName }}" } },
        ab: {
          variants: [
            { id: "A", weight: 50, content: { html: "<p>A {{ contact.firstName }}</p>" } },
            { id: "B", weight: 50, content: { html: "<p>B {{ contact.firstName }}</p>" } },
          ],
          winner: null,
        },
      }),
      { contact: { id: "c-1", firstName: "Ada", locale: "de-DE" }, defaultLocale: "en", workspace },
    );
    expect(out.locale).toBe("de");
    expect(out.content.subject).toBe("Hallo Ada");
    expect(out.content.html).toBe(`<p>${out.variant} Ada</p>`);
    expect(out.content.text).toBe(`${out.variant} Ada`);
  });

  it("falls back to the base for a locale with no translation, and honours forced locale and variant", async () => {
    const tpl = template({
      translations: { fr: { subject: "Bonjour" } },
      ab: {
        variants: [
          { id: "A", weight: 100 },
          { id: "B", weight: 0, content: { subject: "B!" } },
        ],
        winner: null,
      },
    });
    const base = await compose(tpl, {
      contact: { id: "c", firstName: "Ada", locale: "ja" },
      defaultLocale: "en",
      workspace,
    });
    expect(base).toMatchObject({ locale: "en", variant: "A", content: { subject: "Hello Ada" } });
    const forced = await compose(tpl, {
      locale: "fr",
      variant: "B",
      contact: { id: "c" },
      defaultLocale: "en",
      workspace,
    });
    expect(forced).toMatchObject({ locale: "fr", variant: "B", content: { subject: "B!" } });
  });

  it("does not finish non-email channels", async () => {
    const out = await compose(template({ channel: "sms", content: { body: "Hi {{ contact.firstName }}" } }), {
      contact: { id: "c", firstName: "Bo" },
      defaultLocale: "en",
      workspace,
    });
    expect(out.content).toEqual({ body: "Hi Bo" });
  });
});
