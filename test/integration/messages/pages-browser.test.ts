import type { Browser } from "playwright-core";
import { startApp, type TestApp } from "../../helpers/app";
import { describeWithBrowser, freePort, launchBrowser, screenshot } from "../../helpers/browser";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/**
 * The unsubscribe page and the preference centre in headless Chromium: a
 * person follows the links of a sent email, clicks, and the opt-out is then
 * visible through the API and as a webhook delivery.
 */
describeWithBrowser("unsubscribe and preference pages in a browser", () => {
  let app: TestApp;
  let browser: Browser;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    // The links in a message name PUBLIC_URL, so the app must know its own port.
    const port = await freePort();
    app = await startApp({
      services: [
        "api",
        "auth",
        "workspaces",
        "contacts",
        "events",
        "webhooks",
        "templates",
        "messages",
        "providers",
      ],
      env: {
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        MESSAGE_POLL_MS: "100",
        WEBHOOK_POLL_MS: "100",
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      },
    });
    ctx = await ownerWithWorkspace(app.baseUrl);
    const hook = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
      name: "opt-outs",
      url: receiver.url("/opt-outs"),
      events: ["unsubscribe.email"],
    });
    expect(hook.status).toBe(201);
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await receiver?.close();
  });

  /** Sends an email to a new contact and answers the contact and the links its sent content carries. */
  async function emailWithLinks(email: string, more: Record<string, unknown> = {}) {
    const c = ctx.owner.client;
    const contact = await c.post(`${ctx.ws}/contacts`, { email, firstName: "Robin", ...more });
    expect(contact.status).toBe(201);
    const res = await c.post(`${ctx.ws}/messages`, {
      contactId: contact.body.id,
      channel: "email",
      content: {
        subject: "Our news",
        html: '<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a> <a href="{{ preferencesUrl }}">Preferences</a></p>',
      },
    });
    expect(res.status).toBe(202);
    const sent = await waitFor(
      async () => {
        const m = (await c.get(`${ctx.ws}/messages/${res.body.id}`)).body;
        return m.status === "sent" ? m : undefined;
      },
      10_000,
      "message sent",
    );
    const link = (name: string) =>
      (
        new RegExp(`href="(http://[^"]*/api/${name}\\?token=[^"]+)"`).exec(
          sent.content.html,
        ) as RegExpExecArray
      )[1].replace(/&amp;/g, "&");
    return {
      contactId: contact.body.id as string,
      messageId: res.body.id as string,
      unsubscribeUrl: link("unsubscribe"),
      preferencesUrl: link("preferences"),
    };
  }

  const deliveriesFor = (contactId: string) =>
    receiver.received
      .filter((r) => r.path === "/opt-outs")
      .map((r) => JSON.parse(r.body).data)
      .filter((data) => data.contactId === contactId);

  it("unsubscribes from the page: confirm page first, then the opt-out, visible in the API and as a webhook", async () => {
    const { contactId, messageId, unsubscribeUrl } = await emailWithLinks("robin@example.com");
    const page = await browser.newPage();
    await page.goto(unsubscribeUrl);
    await page.getByRole("heading", { name: "Unsubscribe" }).waitFor();
    await expect(page.textContent("main")).resolves.toContain("robin@example.com");
    await screenshot(page, "unsubscribe");
    // Loading the page changed nothing.
    const before = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/consent`);
    expect(before.body.email.status).not.toBe("opted_out");

    await page.getByRole("button", { name: "Unsubscribe" }).click();
    await page.getByRole("heading", { name: "You are unsubscribed" }).waitFor();
    await screenshot(page, "unsubscribed");
    await page.close();

    const after = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/consent`);
    expect(after.body.email).toMatchObject({ status: "opted_out", source: "link" });
    const [delivery] = await waitFor(
      () => (deliveriesFor(contactId).length ? deliveriesFor(contactId) : undefined),
      10_000,
      "unsubscribe.email delivery",
    );
    expect(delivery).toMatchObject({ contactId, channel: "email", source: "link", messageId });
  }, 60_000);

  it("saves choices in the preference centre: a topic off and email opted out, visible in the API and as a webhook", async () => {
    await ctx.owner.client.patch(ctx.ws, {
      settings: {
        topics: [
          { key: "news", name: "Product news" },
          { key: "offers", name: "Special offers" },
        ],
      },
    });
    const { contactId, preferencesUrl } = await emailWithLinks("sam@example.com");
    // Email is ticked for a consent given (an unknown one is not ticked).
    const given = await ctx.owner.client.put(`${ctx.ws}/contacts/${contactId}/consent`, {
      channel: "email",
      status: "opted_in",
    });
    expect(given.status).toBe(200);
    const page = await browser.newPage();
    await page.goto(preferencesUrl);
    await page.getByRole("heading", { name: "Your preferences" }).waitFor();
    const offers = page.getByRole("checkbox", { name: "Special offers" });
    const email = page.locator("input[name=channel][value=email]");
    await expect(offers.isChecked()).resolves.toBe(true);
    await expect(email.isChecked()).resolves.toBe(true);
    await screenshot(page, "preferences");

    await offers.uncheck();
    await email.uncheck();
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    await screenshot(page, "preferences-saved");
    await page.close();

    const consent = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/consent`);
    expect(consent.body.email).toMatchObject({ status: "opted_out", source: "preference_centre" });
    // Channels the person did not touch keep their state: an unknown SMS consent is not an opt-out.
    expect(consent.body.sms.status).toBe("unknown");
    const contact = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}`);
    expect(contact.body.attributes.topics).toEqual({ news: true, offers: false });
    const [delivery] = await waitFor(
      () => (deliveriesFor(contactId).length ? deliveriesFor(contactId) : undefined),
      10_000,
      "unsubscribe.email delivery",
    );
    expect(delivery).toMatchObject({ contactId, channel: "email", source: "preference_centre" });
  }, 60_000);

  it("offers the channels the workspace sends on, by name, unknown unticked; an SMS opt-in from an email records the message", async () => {
    const c = ctx.owner.client;
    const sms = await c.post(`${ctx.ws}/providers/sms`, {
      type: "smsapi1",
      config: {
        accountSid: "AC1",
        authToken: "twilio-auth",
        from: "+15550009999",
        baseUrl: receiver.url("/twilio"),
      },
    });
    expect(sms.status).toBe(201);
    const { contactId, messageId, preferencesUrl } = await emailWithLinks("kim@example.com", {
      phone: "+14155550123",
    });
    const page = await browser.newPage();
    await page.goto(preferencesUrl);
    await page.getByRole("heading", { name: "Your preferences" }).waitFor();
    // Email (the log provider sends it) and SMS (a provider): no push, chatapp1 or chatapp2.
    const channels = await page.locator("input[name=channel]").all();
    await expect(Promise.all(channels.map((box) => box.getAttribute("value")))).resolves.toEqual([
      "email",
      "sms",
    ]);
    const email = page.getByRole("checkbox", { name: "Email" });
    const text = page.getByRole("checkbox", { name: "Text messages (SMS)" });
    // Nothing consented yet: nothing ticked.
    await expect(email.isChecked()).resolves.toBe(false);
    await expect(text.isChecked()).resolves.toBe(false);
    await screenshot(page, "preferences-channels");

    await text.check();
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved.").waitFor();
    await page.close();

    const consent = (await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body;
    expect(consent.sms).toMatchObject({ status: "opted_in", source: "preference_centre", messageId });
    expect(consent.email.status).toBe("unknown");
  }, 60_000);
});
