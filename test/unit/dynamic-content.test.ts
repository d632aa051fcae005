import { contentFor } from "../../services/content/dynamic";
import { dynamicSlotsOf } from "../../services/templates/render";

describe("dynamic content", () => {
  it("finds the slots a template names anywhere in its content, translations and variants", () => {
    expect(
      dynamicSlotsOf({
        content: { subject: "Hi", html: "{% dynamic \"hero\" %}<p>{%- dynamic 'footer' -%}</p>" },
        translations: { de: { html: '{% dynamic "hero" %}{% dynamic "de-only" %}' } },
        ab: { variants: [{ content: { text: "{% if x %}{% endif %}" } }] },
      }),
    ).toEqual(["hero", "footer", "de-only"]);
  });

  it("gives each contact the first matching variant, else the default, asking only for the undecided", async () => {
    const asked: string[][] = [];
    const matches: Record<string, string[]> = { A: ["c1", "c2"], B: ["c2", "c3"] };
    const byContact = await contentFor(
      [
        {
          id: "s",
          name: "Hero",
          slot: "hero",
          defaultContent: "default",
          variants: [
            { filter: { tag: "A" }, content: "a" },
            { filter: { tag: "B" }, content: "b" },
          ],
          createdAt: "",
          updatedAt: "",
        },
      ],
      ["c1", "c2", "c3", "c4"],
      async (filter, ids) => {
        asked.push(ids);
        return matches[String(filter.tag)].filter((id) => ids.includes(id));
      },
    );
    expect(byContact).toEqual({
      c1: { hero: "a" },
      c2: { hero: "a" },
      c3: { hero: "b" },
      c4: { hero: "default" },
    });
    expect(asked).toEqual([
      ["c1", "c2", "c3", "c4"],
      ["c3", "c4"],
    ]);
  });
});
