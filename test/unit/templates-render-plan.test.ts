import { Liquid } from "liquidjs";
import { planOf, renderPlan, type Plan } from "../../services/templates/render-plan";
import { renderContent, TemplateFault } from "../../services/templates/render";

/**
 * Rendering output by output with the values of shared outputs kept
 * (render-plan.ts) must print exactly what Liquid prints for the whole
 * template, message after message, whatever the values.
 */

const whole = new Liquid({ strictFilters: true, ownPropertyOnly: true });
const LIMITS = { length: 10_000_000, ms: 250 };

const TEMPLATES = [
  "Hi {{ contact.firstName }}!",
  "{{ offer | upcase }} and {{ offer | downcase }}",
  "{{ missing | default: 'friend' }}",
  "{{ n | plus: 1 }} {{ n | divided_by: 3 }}",
  "{{ list }} {{ list.size }} {{ list.first }} {{ list.last }}",
  "{{ nested.a.b }}",
  "{{ nested }}",
  "{{ text | escape }} {{ text | truncate: 5 }} {{ text | url_encode }}",
  "{{ 'literal' | upcase }}",
  "{{ nothing }}|{{ nothing | default: 'd' }}",
  "{{ flag }} {{ zero }}",
  "{{ offer | append: offer }} {{ 'x' | append: offer }}",
  "{{ day | date: '%Y' }}",
  "a {{- offer -}} b\n  {{ offer | replace: 'a', 'b' }}",
  '{{ contact["firstName"] }} {{ contact.id | prepend: "#" }}',
];

const scopes = Array.from({ length: 250 }, (_, i) => ({
  contact: { firstName: i % 3 ? `N${i % 7}` : null, id: `c${i}` },
  offer: i % 4 ? `Deal ${i % 5}` : "",
  n: i % 6,
  zero: i % 2 ? -0 : 0,
  list: i % 2 ? [1, 2, i % 3] : [],
  nested: i % 2 ? { a: { b: `deep${i % 3}` } } : { a: null },
  text: `<b>"x&y" ${i % 4}</b> héllo`,
  nothing: null,
  flag: i % 2 === 0,
  day: "2024-01-02",
}));

describe("render plans", () => {
  it("print what Liquid prints for the whole template, for every value, again and again", async () => {
    for (let round = 0; round < 2; round++)
      for (const text of TEMPLATES)
        for (const scope of scopes)
          expect((await renderContent({ text }, scope)).text).toBe(whole.parseAndRenderSync(text, scope));
  });

  it("leave a template with a tag to Liquid whole", () => {
    expect(planOf(whole, whole.parse("{% if a %}{{ a }}{% endif %}"))).toBeNull();
    expect(planOf(whole, whole.parse("{% assign b = a %}{{ b }}"))).toBeNull();
    expect(planOf(whole, whole.parse("x {{ a }} y"))).not.toBeNull();
  });

  it("keep a shared output's values, and stop keeping those of an output that prints each contact's own", () => {
    const plan = planOf(
      whole,
      whole.parse("{{ offer | upcase }} for {{ contact.id | upcase }} ({{ contact.name }})"),
    ) as Plan;
    for (let i = 0; i < 300; i++)
      expect(
        renderPlan(whole, plan, { offer: "sale", contact: { id: `c${i}`, name: `N${i}` } }, LIMITS),
      ).toBe(`SALE for C${i} (N${i})`);
    const [shared, , own, , plain] = plan.parts as Array<{ memo: Map<string, string> | null; hits: number }>;
    expect(shared.memo?.size).toBe(1);
    expect(shared.hits).toBe(299);
    expect(own.memo).toBeNull();
    // A string printed without filters needs nothing kept.
    expect(plain.memo?.size).toBe(0);
  });

  it("keep at most a thousand values per template", () => {
    const plan = planOf(whole, whole.parse("{{ a }}{{ b }}")) as Plan;
    for (let i = 0; i < 3000; i++) renderPlan(whole, plan, { a: `a${i % 900}`, b: `b${i % 900}` }, LIMITS);
    expect(plan.kept).toBeLessThanOrEqual(1000);
  });

  it("hold the render's limits over the whole text", async () => {
    const plan = planOf(whole, whole.parse("{{ a }}{{ a }}{{ a }}")) as Plan;
    expect(() => renderPlan(whole, plan, { a: "x".repeat(40) }, { length: 100, ms: 250 })).toThrow(
      /memory limit/,
    );
    const long = `{{ a }}`.repeat(300);
    await expect(renderContent({ long }, { a: "y".repeat(40_000) })).rejects.toBeInstanceOf(TemplateFault);
  });
});
