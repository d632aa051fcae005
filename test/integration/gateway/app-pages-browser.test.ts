import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser } from "../../helpers/browser";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * The service's own pages in headless Chromium under their security
 * headers: each page's scripts run (the policy refuses inline script, so
 * any left inline would show as an error), nothing is refused by the
 * policy, the favicon is there, and no other site can frame sign-in.
 */
describeWithBrowser("app pages in a browser, under their security headers", () => {
  let app: TestApp;
  let browser: Browser;
  let site: http.Server;
  let siteOrigin: string;
  let formId: string;

  beforeAll(async () => {
    const port = await freePort();
    app = await startApp({
      services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms"],
      env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
    });
    const ctx = await ownerWithWorkspace(app.baseUrl);
    formId = (
      await ctx.owner.client.post(`${ctx.ws}/forms`, {
        name: "Leads",
        fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
      })
    ).body.id;
    // Another site that tries to frame the sign-in page and a form's page.
    site = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        `<!doctype html><title>Framer</title><iframe src="${app.baseUrl}/auth/signin"></iframe>` +
          `<iframe src="${app.baseUrl}/f/${formId}"></iframe>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await new Promise((resolve) => site?.close(resolve));
  });

  /** Opens `path`, runs `ready` (what shows the page's script ran), and answers the console's errors. */
  async function visit(path: string, ready: (page: Page) => Promise<unknown>): Promise<string[]> {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`${path}: ${message.text()}`);
    });
    page.on("pageerror", (err) => errors.push(`${path}: ${err.message}`));
    try {
      await page.goto(`${app.baseUrl}${path}`);
      await ready(page);
    } finally {
      await page.close();
    }
    return errors;
  }

  test("each page's own scripts run and nothing is refused", async () => {
    // A function, not a string: the page's CSP refuses the eval a string predicate is polled with.
    const filled = (selector: string) => (page: Page) =>
      page.waitForFunction(
        (s) =>
          !!(
            globalThis as unknown as { document: { querySelector(q: string): { value: string } | null } }
          ).document.querySelector(s)?.value,
        selector,
      );
    const errors = [
      ...(await visit("/auth/signin", filled("#csrfToken"))),
      ...(await visit("/api/auth/signout", (page) => page.waitForSelector("#submit:not([disabled])"))),
      ...(await visit("/", (page) => page.getByText("Not signed in.").waitFor())),
      ...(await visit("/auth/reset-password?token=t", (page) => page.getByRole("button").waitFor())),
      ...(await visit(`/f/${formId}`, filled("input[name=pageUrl]"))),
      ...(await visit("/api/docs", (page) => page.locator(".swagger-ui .info .title").waitFor())),
    ];
    expect(errors).toEqual([]);
  }, 60_000);

  test("the favicon is served", async () => {
    const page = await browser.newPage();
    try {
      const icon = await page.goto(`${app.baseUrl}/favicon.ico`);
      expect(icon?.status()).toBe(200);
    } finally {
      await page.close();
    }
  });

  test("another site cannot frame sign-in, nor any other page of ours", async () => {
    const page = await browser.newPage();
    try {
      const refused = page.waitForEvent("console", (message) => /frame-ancestors/.test(message.text()));
      await page.goto(siteOrigin);
      await refused;
      const frames = page.frames().filter((frame) => frame !== page.mainFrame());
      expect(frames).toHaveLength(2);
      for (const frame of frames) expect(await frame.locator("form").count()).toBe(0);
    } finally {
      await page.close();
    }
  });
});
