import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser, screenshot } from "../../helpers/browser";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * Forms in headless Chromium: the hosted page with JavaScript (fetch, the
 * answer in place, UTM fields from the URL) and without it (a plain post
 * answered with a page or a redirect), and the embed script on another
 * site, posting across origins to the service it came from.
 */
describeWithBrowser("forms in a browser", () => {
  let app: TestApp;
  let browser: Browser;
  let site: http.Server;
  let siteOrigin: string;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let formId: string;
  let redirectingId: string;

  beforeAll(async () => {
    const port = await freePort();
    app = await startApp({
      services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms"],
      env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
    });
    // A customer's site on another origin: its home page embeds the form; /thanks is where a form sends people.
    site = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        req.url === "/thanks"
          ? "<!doctype html><title>Thanks</title><h1>Thanks from Acme</h1>"
          : `<!doctype html><title>Acme</title><h1>Acme site</h1><script src="${app.baseUrl}/api/forms/${formId}/embed"></script><p>Footer</p>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    ctx = await ownerWithWorkspace(app.baseUrl);
    const c = ctx.owner.client;
    await c.patch(ctx.ws, { settings: { allowedOrigins: [siteOrigin] } });
    const fields = [
      { key: "email", label: "Email", type: "email", required: true, mapTo: "email" },
      { key: "first", label: "First name", type: "text", mapTo: "firstName" },
      { key: "news", label: "Send me the newsletter", type: "consent", mapTo: "consent.email" },
      { key: "utm_source", label: "Source", type: "hidden", defaultValue: "direct" },
    ];
    const made = await c.post(`${ctx.ws}/forms`, {
      name: "Join us",
      fields,
      settings: { submitLabel: "Join", successMessage: "Welcome aboard." },
    });
    expect(made.status).toBe(201);
    formId = made.body.id;
    const redirecting = await c.post(`${ctx.ws}/forms`, {
      name: "Join and go",
      fields,
      settings: { redirectUrl: `${siteOrigin}/thanks` },
    });
    expect(redirecting.status).toBe(201);
    redirectingId = redirecting.body.id;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await new Promise((resolve) => site?.close(resolve));
  });

  const submissions = async (id: string) =>
    (await ctx.owner.client.get(`${ctx.ws}/forms/${id}/submissions`)).body.data as Array<Record<string, any>>;

  test("the hosted page submits with fetch and answers in place, with the URL's UTM source", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${app.baseUrl}/f/${formId}?utm_source=newsletter`);
      await page.getByLabel("Email").fill("page@example.com");
      await page.getByLabel("First name").fill("Paige");
      await page.getByLabel("Send me the newsletter").check();
      await screenshot(page, "form-hosted");
      await page.getByRole("button", { name: "Join" }).click();
      await page.getByRole("status").filter({ hasText: "Welcome aboard." }).waitFor();
      expect(page.url()).toBe(`${app.baseUrl}/f/${formId}?utm_source=newsletter`);
    } finally {
      await page.close();
    }
    const [submission] = await submissions(formId);
    expect(submission).toMatchObject({
      fields: { email: "page@example.com", first: "Paige", news: true, utm_source: "newsletter" },
      pageUrl: `${app.baseUrl}/f/${formId}?utm_source=newsletter`,
      consent: [{ channel: "email", status: "opted_in" }],
    });
  });

  test("without JavaScript the form posts and the service answers with a page, or a redirect", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(`${app.baseUrl}/f/${formId}`);
      await page.getByLabel("Email").fill("nojs@example.com");
      await page.getByRole("button", { name: "Join" }).click();
      await page.getByText("Welcome aboard.").waitFor();
      expect(page.url()).toBe(`${app.baseUrl}/api/forms/${formId}/submit`);

      await page.goto(`${app.baseUrl}/f/${redirectingId}`);
      await page.getByLabel("Email").fill("away@example.com");
      await page.getByRole("button", { name: "Submit" }).click();
      await page.getByRole("heading", { name: "Thanks from Acme" }).waitFor();
      expect(page.url()).toBe(`${siteOrigin}/thanks`);
    } finally {
      await context.close();
    }
    expect((await submissions(formId)).map((s) => s.fields.email)).toContain("nojs@example.com");
    expect((await submissions(redirectingId)).map((s) => s.fields.email)).toEqual(["away@example.com"]);
  });

  test("the embed draws the form where its tag stands on another site and submits across origins", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${siteOrigin}/`);
      const form = page.locator("form.cms-form");
      await form.waitFor();
      // Drawn between the heading and the footer, where the script tag stands.
      expect(await page.locator("h1 + div.cms-form-embed + script + p").count()).toBe(1);
      await page.getByLabel("Email").fill("embedded@example.com");
      await screenshot(page, "form-embedded");
      await page.getByRole("button", { name: "Join" }).click();
      await page.getByRole("status").filter({ hasText: "Welcome aboard." }).waitFor();
    } finally {
      await page.close();
    }
    const [latest] = await submissions(formId);
    expect(latest).toMatchObject({ fields: { email: "embedded@example.com" }, pageUrl: `${siteOrigin}/` });
  });
});
