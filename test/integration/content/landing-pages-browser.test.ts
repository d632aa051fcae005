import type { Browser } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser, screenshot } from "../../helpers/browser";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * A landing page in headless Chromium, visited by a signed-in workspace
 * user: its form works inside the sandbox, and its own scripts can neither
 * read the service's cookies nor call the API with the visitor's session
 * (which a page of the service itself can).
 */
describeWithBrowser("landing pages in a browser", () => {
  let app: TestApp;
  let browser: Browser;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let address: string;

  beforeAll(async () => {
    const port = await freePort();
    app = await startApp({
      services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content"],
      env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
    });
    ctx = await ownerWithWorkspace(app.baseUrl);
    const c = ctx.owner.client;
    const form = await c.post(`${ctx.ws}/forms`, {
      name: "Leads",
      fields: [{ key: "email", label: "Work email", type: "email", required: true, mapTo: "email" }],
      settings: { submitLabel: "Get the guide", successMessage: "The guide is on its way." },
    });
    const slug = (await c.get(ctx.ws)).body.slug;
    const page = await c.post(`${ctx.ws}/landing-pages`, {
      name: "Guide",
      slug: "guide",
      title: "The guide",
      status: "published",
      html: `<h1>Get the guide</h1><div data-cms-form="${form.body.id}"></div>`,
    });
    expect(page.status).toBe(201);
    address = `${app.baseUrl}/p/${slug}/guide`;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  test("the form inside works; the page's scripts cannot use the visitor's session", async () => {
    const context = await browser.newContext();
    try {
      // The workspace owner is signed in, in this browser.
      await context.addCookies(
        [...ctx.owner.client.cookies].map(([name, value]) => ({ name, value, url: app.baseUrl })),
      );
      const own = await context.newPage();
      await own.goto(`${app.baseUrl}/`);
      const fromOwnPage = await own.evaluate(() => fetch("/api/auth/session").then((r) => r.text()));
      expect(fromOwnPage).toContain(ctx.owner.email);

      const page = await context.newPage();
      await page.goto(address);
      // A string: this file is compiled without the DOM's types.
      const cookie = await page.evaluate(
        `(() => { try { return document.cookie; } catch { return "denied"; } })()`,
      );
      expect(cookie).toBe("denied");
      const session = await page.evaluate(() =>
        fetch("/api/auth/session", { credentials: "include" }).then(
          (r) => r.text(),
          () => "blocked",
        ),
      );
      expect(session).not.toContain(ctx.owner.email);

      await page.getByLabel("Work email").fill("reader@example.com");
      await screenshot(page, "landing-page");
      await page.getByRole("button", { name: "Get the guide" }).click();
      await page.getByRole("status").filter({ hasText: "The guide is on its way." }).waitFor();
    } finally {
      await context.close();
    }
    const contacts = (await ctx.owner.client.get(`${ctx.ws}/contacts?search=reader@example.com`)).body.data;
    expect(contacts).toMatchObject([{ email: "reader@example.com" }]);
  });

  test("the website script on a landing page: its slot and focus item shown, its form sent in place", async () => {
    const c = ctx.owner.client;
    const workspace = (await c.get(ctx.ws)).body;
    const form = await c.post(`${ctx.ws}/forms`, {
      name: "Demo",
      fields: [{ key: "email", label: "Email for the demo", type: "email", required: true, mapTo: "email" }],
      settings: { submitLabel: "Book a demo", successMessage: "See you soon." },
    });
    await c.post(`${ctx.ws}/dynamic-content`, {
      name: "Offer",
      slot: "offer",
      defaultContent: "<strong>Spring offer: 20% off</strong>",
    });
    await c.post(`${ctx.ws}/focus-items`, {
      name: "Webinar",
      type: "slide_in",
      content: "<p>Join the webinar on Friday</p>",
      trigger: { on: "load" },
    });
    await c.post(`${ctx.ws}/landing-pages`, {
      name: "Demo",
      slug: "demo",
      title: "Book a demo",
      status: "published",
      html:
        `<h1>Book a demo</h1><div data-cms-slot="offer"></div><div data-cms-form="${form.body.id}"></div>` +
        `<script src="${app.baseUrl}/cms.js" data-key="${workspace.siteKey}" async></script>`,
    });
    const context = await browser.newContext();
    const errors: string[] = [];
    try {
      const page = await context.newPage();
      page.on("pageerror", (err) => errors.push(err.message));
      const address = `${app.baseUrl}/p/${workspace.slug}/demo`;
      await page.goto(address);
      await page.getByText("Spring offer: 20% off").waitFor();
      await page.getByRole("region", { name: "Webinar" }).getByText("Join the webinar on Friday").waitFor();
      // The form wears the hosted page's look.
      const button = page.getByRole("button", { name: "Book a demo" });
      await expect(
        page.evaluate<string>(
          "getComputedStyle(document.querySelector('form.cms-form button')).backgroundColor",
        ),
      ).resolves.toBe("rgb(45, 91, 227)");
      await page.getByLabel("Email for the demo").fill("demo@example.com");
      await screenshot(page, "landing-page-with-script");
      await button.click();
      await page.getByRole("status").filter({ hasText: "See you soon." }).waitFor();
      // Answered in place: still the landing page, not the service's thank-you page.
      expect(page.url()).toBe(address);
      await expect(page.locator("h1").textContent()).resolves.toBe("Book a demo");
    } finally {
      await context.close();
    }
    expect(errors).toEqual([]);
    const contacts = (await c.get(`${ctx.ws}/contacts?search=demo@example.com`)).body.data;
    expect(contacts).toMatchObject([{ email: "demo@example.com" }]);
  });
});
