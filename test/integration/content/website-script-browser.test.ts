import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser, screenshot } from "../../helpers/browser";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * The website script on a customer's site in headless Chromium: page views
 * recorded across origins, dynamic content drawn for the visitor, a focus
 * item shown by its delay with its form, and the visitor identified by that
 * form, so the session's earlier page views and the later ones are the
 * contact's (and the page's content is now a known contact's).
 */
describeWithBrowser("the website script in a browser", () => {
  let app: TestApp;
  let browser: Browser;
  let site: http.Server;
  let siteOrigin: string;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let key: string;

  beforeAll(async () => {
    const port = await freePort();
    app = await startApp({
      services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content"],
      env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
    });
    site = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        `<!doctype html><title>Acme ${req.url}</title><h1>Acme</h1><div data-cms-slot="hero"></div><p>${"Words. ".repeat(50)}</p>` +
          `<script src="${app.baseUrl}/cms.js" data-key="${key}" async></script>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    ctx = await ownerWithWorkspace(app.baseUrl);
    const c = ctx.owner.client;
    key = (await c.patch(ctx.ws, { settings: { allowedOrigins: [siteOrigin] } })).body.siteKey;
    const form = await c.post(`${ctx.ws}/forms`, {
      name: "Guide",
      fields: [{ key: "email", label: "Your email", type: "email", required: true, mapTo: "email" }],
      settings: { submitLabel: "Send me the guide", successMessage: "Check your inbox." },
    });
    await c.post(`${ctx.ws}/dynamic-content`, {
      name: "Hero",
      slot: "hero",
      defaultContent: "<strong>Welcome to Acme</strong>",
      variants: [
        {
          filter: { match: "all", conditions: [{ field: "email", operator: "is_set" }] },
          content: "<strong>Welcome back</strong>",
        },
      ],
    });
    const item = await c.post(`${ctx.ws}/focus-items`, {
      name: "Guide offer",
      type: "slide_in",
      content: "<p>Get our pricing guide</p>",
      formId: form.body.id,
      trigger: { on: "delay", value: 1 },
      rules: { urls: ["/pricing"], frequency: { maxViews: 1, perDays: 1 } },
    });
    expect(item.status).toBe(201);
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await new Promise((resolve) => site?.close(resolve));
  });

  const events = async () =>
    (await ctx.owner.client.get(`${ctx.ws}/events?limit=200`)).body as Array<Record<string, any>>;

  test("page views, a focus item with its form, and the visitor identified by it", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${siteOrigin}/`);
      await page.getByText("Welcome to Acme").waitFor();
      await waitFor(
        async () =>
          (await events()).some((e) => e.type === "page_view" && e.pageUrl === `${siteOrigin}/`) || undefined,
        10_000,
      );
      // Not on this page: the item is for /pricing.
      await page.waitForTimeout(1500);
      expect(await page.locator(".cms-focus").count()).toBe(0);

      await page.goto(`${siteOrigin}/pricing?utm_source=newsletter`);
      const offer = page.getByRole("region", { name: "Guide offer" });
      await offer.getByText("Get our pricing guide").waitFor();
      await offer.getByLabel("Your email").fill("visitor@example.com");
      await screenshot(page, "website-script-focus-item");
      await offer.getByRole("button", { name: "Send me the guide" }).click();
      await offer.getByText("Check your inbox.").waitFor();

      // Identified now: the next page's view is the contact's; the offer is not shown again.
      await page.goto(`${siteOrigin}/pricing`);
      await page.getByText("Welcome back").waitFor();
      await page.waitForTimeout(1500);
      expect(await page.locator(".cms-focus").count()).toBe(0);
    } finally {
      await context.close();
    }
    const contacts = (await ctx.owner.client.get(`${ctx.ws}/contacts?search=visitor@example.com`)).body.data;
    expect(contacts).toHaveLength(1);
    const mine = await waitFor(async () => {
      const got = (await events()).filter((e) => e.contactId === contacts[0].id);
      return got.filter((e) => e.type === "page_view").length === 3 ? got : undefined;
    }, 10_000);
    expect(mine.map((e) => e.type).sort()).toEqual([
      "focus_item.conversion",
      "focus_item.view",
      "form.submitted",
      "page_view",
      "page_view",
      "page_view",
    ]);
    expect(mine.find((e) => e.type === "page_view" && e.utmSource === "newsletter")).toBeTruthy();
    const [counted] = (await ctx.owner.client.get(`${ctx.ws}/focus-items`)).body.data;
    expect(counted).toMatchObject({ name: "Guide offer", views: 1, conversions: 1 });
  });

  test("a bar holding a form: slim over the header, its form opened on click, gone once sent", async () => {
    const form = await ctx.owner.client.post(`${ctx.ws}/forms`, {
      name: "Updates",
      fields: [{ key: "email", label: "Email for updates", type: "email", required: true, mapTo: "email" }],
      settings: { submitLabel: "Keep me posted", successMessage: "You are on the list." },
    });
    const bar = await ctx.owner.client.post(`${ctx.ws}/focus-items`, {
      name: "Updates bar",
      type: "bar",
      content: "<p>News every month</p>",
      formId: form.body.id,
      trigger: { on: "load" },
      rules: { urls: ["/bar"] },
    });
    expect(bar.status).toBe(201);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${siteOrigin}/bar`);
      const region = page.getByRole("region", { name: "Updates bar" });
      await region.getByText("News every month").waitFor();
      const closed = await region.boundingBox();
      expect(closed!.height).toBeLessThanOrEqual(48);
      expect(await page.getByLabel("Email for updates").count()).toBe(0);
      await screenshot(page, "website-script-bar");

      await region.getByRole("button", { name: "Show the form" }).click();
      await region.getByLabel("Email for updates").fill("bar-reader@example.com");
      await screenshot(page, "website-script-bar-open");
      await region.getByRole("button", { name: "Keep me posted" }).click();
      await region.getByText("You are on the list.").waitFor();

      // The next page's configuration is applied as soon as it arrives: the answered bar is not among its items.
      const configured = page.waitForResponse((res) => res.url().includes("/api/script/config"));
      await page.goto(`${siteOrigin}/bar`);
      await (await configured).finished();
      // The answer is read and applied in the page's next tasks: two frames later it has been.
      await page.evaluate(
        "new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(null))))",
      );
      expect(await page.locator(".cms-focus").count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});
