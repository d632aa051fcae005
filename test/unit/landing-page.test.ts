import { formIdsIn, LANDING_PAGE_HEADERS, landingDocument } from "../../services/content/landing-page";

describe("landing page documents", () => {
  it("finds each form marker once", () => {
    expect(
      formIdsIn(
        '<div data-cms-form="a"></div><p>x</p><div data-cms-form="b" ></div><div data-cms-form="a"></div>',
      ),
    ).toEqual(["a", "b"]);
    expect(formIdsIn('<div data-cms-form="a b"></div>')).toEqual([]);
  });

  it("puts a body in a document with its escaped title, forms drawn and their script once", () => {
    const html = landingDocument(
      "Sale <now>",
      '<h1>Hi</h1><div data-cms-form="f1"></div><div data-cms-form="gone"></div>',
      {
        f1: "<form>F1</form>",
      },
      "tok",
    );
    expect(html).toContain("<title>Sale &lt;now&gt;</title>");
    expect(html).toContain("<h1>Hi</h1><form>F1</form>\n");
    expect(html.match(/form\.js/g)).toHaveLength(1);
    expect(landingDocument("T", "<p>No forms</p>", {}, "tok")).not.toContain("<script");
  });

  it("keeps a whole document as written, the forms' script before its last </body>", () => {
    const doc = '<!DOCTYPE html><html><body><div data-cms-form="f1"></div></body></html>';
    expect(landingDocument("T", doc, { f1: "<form></form>" }, "tok")).toBe(
      '<!DOCTYPE html><html><body><form></form><meta name="cms-page" content="tok"><link rel="stylesheet" href="/form.css"><script src="/form.js" data-enhance></script></body></html>',
    );
  });

  it("styles the forms it draws and carries the page's token, in the head when the page has one", () => {
    const doc = '<html><head><title>T</title></head><body><div data-cms-form="f1"></div></body></html>';
    expect(landingDocument("T", doc, { f1: "<form></form>" }, "tok")).toBe(
      '<html><head><title>T</title><meta name="cms-page" content="tok"><link rel="stylesheet" href="/form.css"></head><body><form></form><script src="/form.js" data-enhance></script></body></html>',
    );
    expect(landingDocument("T", '<div data-cms-form="f1"></div>', { f1: "<form></form>" }, "tok")).toMatch(
      /<link rel="stylesheet" href="\/form\.css">\n<\/head>/,
    );
    expect(landingDocument("T", "<p>No forms</p>", {}, "tok")).not.toContain("form.css");
    expect(landingDocument("T", "<p>No forms</p>", {}, 'a"b')).toContain(
      '<meta name="cms-page" content="a&quot;b">',
    );
  });

  it("is served sandboxed without the service's origin", () => {
    expect(LANDING_PAGE_HEADERS["Content-Security-Policy"]).toMatch(/^sandbox allow-forms allow-scripts/);
    expect(LANDING_PAGE_HEADERS["Content-Security-Policy"]).not.toMatch(/allow-same-origin/);
  });
});
