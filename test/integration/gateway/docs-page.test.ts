import type { Browser } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser, screenshot } from "../../helpers/browser";
import { ownerWithWorkspace, type SignedInUser } from "../../helpers/http";

/**
 * GET /, GET /api/docs in headless Chromium: a person signs in at
 * /auth/signin, lands on the home page, opens the reference (Swagger UI from
 * its npm package) and sends a request from it with the session cookie.
 */
describeWithBrowser("API reference in a browser", () => {
  let app: TestApp;
  let browser: Browser;
  let owner: SignedInUser;

  beforeAll(async () => {
    // The sign-in redirect goes to PUBLIC_URL, so the app must know its own port.
    const port = await freePort();
    app = await startApp({ env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` } });
    ({ owner } = await ownerWithWorkspace(app.baseUrl));
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it("signs in, lands on the home page, and sends a request from the reference", async () => {
    const page = await browser.newPage();
    await page.goto(`${app.baseUrl}/auth/signin`);
    // The sign-in page wears the one stylesheet our own pages share.
    await expect(
      page.evaluate<string>("getComputedStyle(document.querySelector('form.card')).backgroundColor"),
    ).resolves.toBe("rgb(255, 255, 255)");
    await screenshot(page, "signin");
    await page.fill("#email", owner.email);
    await page.fill("#password", owner.password);
    await page.click("button[type=submit]");
    await page.waitForURL(`${app.baseUrl}/`);
    await page.getByText(`Signed in as ${owner.email}.`).waitFor();
    await screenshot(page, "home");

    await page.click("text=API reference");
    await page.waitForURL(`${app.baseUrl}/api/docs`);
    await page
      .locator(".opblock-tag", { hasText: /^Workspaces/ })
      .first()
      .click();
    const operation = page.locator(".opblock-get", { has: page.locator('[data-path="/api/workspaces"]') });
    await operation.locator(".opblock-summary").first().click();
    await operation.getByRole("button", { name: "Execute" }).click();
    const status = operation.locator(".live-responses-table tbody .response-col_status").first();
    await status.waitFor();
    expect((await status.textContent())?.trim()).toBe("200");
    await expect(
      operation.locator(".live-responses-table tbody .response-col_description").first().textContent(),
    ).resolves.toContain('"name": "Acme"');
    await screenshot(page, "api-reference");
    await page.close();
  }, 60_000);

  it("serves Swagger UI's files from the package, not a CDN", async () => {
    const res = await app.http().get("/api/docs/assets/swagger-ui-bundle.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("javascript");
    const html = (await app.http().get("/api/docs")).text;
    expect(html).not.toMatch(/https?:\/\//);
  });
});
