import type { Browser, Page } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser, screenshot } from "../../helpers/browser";
import { HttpClient, uniqueEmail } from "../../helpers/http";

/**
 * /auth/signup in headless Chromium: a newcomer finds it from the sign-in
 * page, creates an account and lands on the home page signed in; a refused
 * sign-up (an email taken, the register limit spent) says why on the page.
 */
describeWithBrowser("sign-up page in a browser", () => {
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    // The sign-in answer's url names PUBLIC_URL, so the app must know its own port.
    const port = await freePort();
    app = await startApp({
      services: ["api", "auth", "workspaces"],
      env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
    });
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  /** A page whose requests come from `ip` (the gateway trusts X-Forwarded-For here), so Redis-kept limits never carry over. */
  async function pageFrom(ip: string): Promise<Page> {
    const context = await browser.newContext({ extraHTTPHeaders: { "x-forwarded-for": ip } });
    return context.newPage();
  }

  const randomIp = () => `198.19.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;

  async function fillSignup(page: Page, email: string, password = "correct horse battery") {
    await page.fill("#name", "Ana Newcomer");
    await page.fill("#email", email);
    await page.fill("#password", password);
    await page.click("button[type=submit]");
  }

  it("is linked from sign-in, creates the account and signs it in", async () => {
    const page = await pageFrom(randomIp());
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.goto(`${app.baseUrl}/auth/signin`);
    await page.getByRole("link", { name: "Create one" }).click();
    await page.waitForURL(`${app.baseUrl}/auth/signup`);
    // The same look as sign-in: the one stylesheet of our pages.
    await expect(
      page.evaluate<string>("getComputedStyle(document.querySelector('form.card')).backgroundColor"),
    ).resolves.toBe("rgb(255, 255, 255)");
    await screenshot(page, "signup");

    const email = uniqueEmail("newcomer");
    await fillSignup(page, email);
    await page.waitForURL(`${app.baseUrl}/`);
    await page.getByText(`Signed in as ${email}.`).waitFor();
    const session = await page.evaluate(() =>
      fetch("/api/auth/session").then((r) => r.json() as Promise<{ user?: object }>),
    );
    expect(session.user).toMatchObject({ email, name: "Ana Newcomer" });
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it("says why when the email is taken, and stays on the page", async () => {
    const email = uniqueEmail("taken");
    const registered = await new HttpClient(app.baseUrl).post("/api/auth/register", {
      name: "First",
      email,
      password: "correct horse battery",
    });
    expect(registered.status).toBe(201);
    const page = await pageFrom(randomIp());
    await page.goto(`${app.baseUrl}/auth/signup`);
    await fillSignup(page, email);
    await page.getByText("An account with this email already exists").waitFor();
    expect(page.url()).toBe(`${app.baseUrl}/auth/signup`);
    await page.context().close();
  }, 60_000);

  it("is held to the register limit of its client's address", async () => {
    const ip = randomIp();
    const client = new HttpClient(app.baseUrl);
    for (let i = 0; i < 10; i++) {
      const res = await client.post(
        "/api/auth/register",
        { name: "Batch", email: uniqueEmail("batch"), password: "correct horse battery" },
        { headers: { "x-forwarded-for": ip } },
      );
      expect(res.status).toBe(201);
    }
    const page = await pageFrom(ip);
    await page.goto(`${app.baseUrl}/auth/signup`);
    await fillSignup(page, uniqueEmail("eleventh"));
    await page.getByText(/Too many accounts were created from your network/).waitFor();
    await screenshot(page, "signup-limited");
    await page.context().close();
  }, 60_000);
});
