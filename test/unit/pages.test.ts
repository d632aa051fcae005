import { prefersHtml } from "../../lib/pages";

describe("prefersHtml", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["*/*", false],
    ["application/json", false],
    ["application/json, text/html", false],
    ["text/html;q=0.5, application/json", false],
    ["text/html", true],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8", true],
    ["application/json;q=0.5, text/html", true],
    ["text/*", true],
  ])("Accept %p -> %p", (accept, expected) => {
    expect(prefersHtml(accept)).toBe(expected);
  });
});
