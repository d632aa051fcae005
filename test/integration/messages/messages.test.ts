import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { database } from "../../../lib/database";
import type { Poller } from "../../../lib/worker";
import { up as normaliseHistoryTimes } from "../../../models/migrations/0069-message-history-times";
import * as repo from "../../../services/messages/messages.repo";
import { Sender } from "../../../services/messages/sender";
import { MACHINE_OPEN_MS } from "../../../services/messages/tracking";
import { startApp, type TestApp } from "../../helpers/app";
import { multipartBody, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/** `{ws}/messages`, tracking, short links, unsubscribe and preferences: the one send path through the log provider. */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

const sentTo = (messageId: string) =>
  waitFor(
    async () => {
      const m = (await ctx.owner.client.get(`${ctx.ws}/messages/${messageId}`)).body;
      return m.status === "sent" ? m : undefined;
    },
    10_000,
    `message ${messageId} sent`,
  );

async function contact(body: Record<string, unknown>) {
  const res = await ctx.owner.client.post(`${ctx.ws}/contacts`, body);
  expect(res.status).toBe(201);
  return res.body.id as string;
}

beforeAll(async () => {
  receiver = await startReceiver();
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "webhooks", "templates", "messages"],
    env: { MESSAGE_POLL_MS: "100", WEBHOOK_POLL_MS: "100", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  await receiver?.close();
});

test("a template send is queued (202), sent through the log provider, and message.sent reaches a webhook once", async () => {
  const c = ctx.owner.client;
  const hook = await c.post(`${ctx.ws}/webhooks`, {
    name: "sent",
    url: receiver.url("/sent"),
    events: ["message.sent"],
  });
  expect(hook.status).toBe(201);
  const contactId = await contact({ email: "mia@example.com", firstName: "Mia" });
  const t = await c.post(`${ctx.ws}/templates`, {
    name: "Hello",
    channel: "email",
    content: {
      subject: "Hi {{ contact.firstName }}",
      html: '<h1>Hello {{ contact.firstName }}!</h1><p>Hi {{ contact.firstName }} <a href="https://example.com/a?x=1&amp;y=2">go</a> <a href="{{ unsubscribeUrl }}">unsubscribe</a></p>',
    },
  });
  const res = await c.post(`${ctx.ws}/messages`, { contactId, channel: "email", templateId: t.body.id });
  expect(res.status).toBe(202);
  expect(res.body).toMatchObject({
    status: "queued",
    to: "mia@example.com",
    contactId,
    templateId: t.body.id,
  });

  const sent = await sentTo(res.body.id);
  expect(sent).toMatchObject({ providerType: "log", providerMessageId: `log-${res.body.id}`, locale: "en" });
  expect(sent.content.subject).toBe("Hi Mia");
  expect(sent.content.html).toContain("/api/messages/");
  expect(sent.content.html).toContain("/api/unsubscribe?token=");
  // The text part comes from the rendered HTML (the heading as written, the name filled), its link
  // through the same signed short link as the HTML's.
  const tracked = /href="([^"]*\/track\?u=[^"]+)"/.exec(sent.content.html)![1].replace(/&amp;/g, "&");
  expect(sent.content.text).toMatch(/^Hello Mia!\n\nHi Mia go \[/);
  expect(sent.content.text).toContain(`go [${tracked}]`);
  expect(sent.content.text).not.toContain("https://example.com/a");
  expect(sent.history.map((h: { status: string }) => h.status)).toEqual(["queued", "sending", "sent"]);
  // One form of moment, the statuses in the order they happened.
  const times: string[] = sent.history.map((h: { at: string }) => h.at);
  for (const at of times) expect(at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  expect(times).toEqual([...times].sort());

  const delivered = await waitFor(
    () => {
      const hits = receiver.received.filter((r) => r.path === "/sent");
      return hits.length ? hits : undefined;
    },
    10_000,
    "message.sent delivery",
  );
  const body = JSON.parse(delivered[0].body);
  expect(body).toMatchObject({
    event: "message.sent",
    data: { contactId, channel: "email", messageId: res.body.id, status: "sent", campaignId: null },
  });
  await new Promise((r) => setTimeout(r, 300));
  expect(receiver.received.filter((r) => r.path === "/sent")).toHaveLength(1);

  const links = await c.get(`${ctx.ws}/short-links?templateId=${t.body.id}`);
  expect(links.body.data).toEqual([
    expect.objectContaining({ url: "https://example.com/a?x=1&y=2", clicks: 0, uniqueClicks: 0 }),
  ]);
});

test("checks in order: invalid address, dnc, bounced before, unsubscribed, topic, no consent; 400s and 404s", async () => {
  const c = ctx.owner.client;
  const content = { subject: "s", html: "<p>x</p>" };
  const send = (body: Record<string, unknown>) =>
    c.post(`${ctx.ws}/messages`, { channel: "email", content, ...body });
  expect((await send({ to: "not an address" })).body).toMatchObject({
    status: "suppressed",
    reason: "invalid_address",
  });
  await c.post(`${ctx.ws}/contacts/dnc`, { type: "email", value: "blocked@example.com" });
  expect((await send({ to: "blocked@example.com" })).body.reason).toBe("dnc");
  await c.post(`${ctx.ws}/contacts/dnc`, { type: "email", value: "gone@example.com", reason: "bounce" });
  expect((await send({ to: "gone@example.com" })).body.reason).toBe("bounced_before");
  expect((await send({ to: "gone@example.com", transactional: true })).body.reason).toBe("bounced_before");
  const out = await contact({ email: "out@example.com" });
  await c.put(`${ctx.ws}/contacts/${out}/consent`, { channel: "email", status: "opted_out" });
  expect((await send({ contactId: out })).body.reason).toBe("unsubscribed");
  expect((await send({ contactId: out, transactional: true })).body.status).toBe("queued");
  const topical = await contact({ email: "topic@example.com", attributes: { topics: { news: false } } });
  expect((await send({ contactId: topical, topic: "news" })).body.reason).toBe("unsubscribed");
  const phone = await contact({ phone: "+14155550123" });
  const sms = await c.post(`${ctx.ws}/messages`, {
    channel: "sms",
    contactId: phone,
    content: { body: "hi" },
  });
  expect(sms.body).toMatchObject({ status: "suppressed", reason: "no_consent", to: "+14155550123" });

  expect((await send({})).status).toBe(400);
  expect((await c.post(`${ctx.ws}/messages`, { channel: "email", to: "a@example.com" })).status).toBe(400);
  const missing = await send({ contactId: "nope" });
  expect(missing.status).toBe(404);
  expect(missing.body.details[0].field).toBe("contactId");
  const noEmail = await contact({ phone: "+14155550124" });
  expect((await send({ contactId: noEmail })).status).toBe(400);
});

test("frequency cap counts earlier non-transactional sends", async () => {
  const c = ctx.owner.client;
  await c.patch(ctx.ws, { settings: { frequencyCap: { count: 1, periodHours: 24, channels: ["email"] } } });
  try {
    const id = await contact({ email: "capped@example.com" });
    const content = { subject: "s", html: "<p>x</p>" };
    expect(
      (await c.post(`${ctx.ws}/messages`, { contactId: id, channel: "email", content })).body.status,
    ).toBe("queued");
    expect(
      (await c.post(`${ctx.ws}/messages`, { contactId: id, channel: "email", content })).body.reason,
    ).toBe("frequency_cap");
    expect(
      (await c.post(`${ctx.ws}/messages`, { contactId: id, channel: "email", content, transactional: true }))
        .body.status,
    ).toBe("queued");
  } finally {
    await c.patch(ctx.ws, { settings: { frequencyCap: null } });
  }
});

test("quiet hours in the contact's zone defer the send to the window's end (injected clock)", async () => {
  const c = ctx.owner.client;
  const service = app.broker.getLocalService("messages") as unknown as { now: () => Date };
  const real = service.now;
  service.now = () => new Date("2030-01-15T22:30:00Z"); // 23:30 in Berlin
  await c.patch(ctx.ws, { settings: { quietHours: { start: "21:00", end: "08:00" } } });
  try {
    const id = await contact({ email: "night@example.com", timezone: "Europe/Berlin" });
    const res = await c.post(`${ctx.ws}/messages`, {
      contactId: id,
      channel: "email",
      content: { subject: "s", html: "<p>x</p>" },
    });
    expect(res.body).toMatchObject({ status: "queued", sendAt: "2030-01-16T07:00:00.000Z" });
    const detail = await c.get(`${ctx.ws}/messages/${res.body.id}`);
    expect(detail.body.history[0]).toMatchObject({ status: "queued", reason: "quiet_hours" });
    const urgent = await c.post(`${ctx.ws}/messages`, {
      contactId: id,
      channel: "email",
      content: { subject: "s", html: "<p>x</p>" },
      transactional: true,
    });
    expect(new Date(urgent.body.sendAt).getTime()).toBe(new Date("2030-01-15T22:30:00Z").getTime());
  } finally {
    service.now = real;
    await c.patch(ctx.ws, { settings: { quietHours: null } });
  }
});

test("Idempotency-Key: the same body replays the first answer; another body is 409", async () => {
  const c = ctx.owner.client;
  const body = { to: "idem@example.com", channel: "email", content: { subject: "s", html: "<p>x</p>" } };
  const headers = { "Idempotency-Key": "order-42" };
  const first = await c.post(`${ctx.ws}/messages`, body, { headers });
  expect(first.status).toBe(202);
  const again = await c.post(`${ctx.ws}/messages`, body, { headers });
  expect(again.status).toBe(202);
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  expect(again.body.id).toBe(first.body.id);
  const other = await c.post(`${ctx.ws}/messages`, { ...body, to: "other@example.com" }, { headers });
  expect(other.status).toBe(409);
  expect(other.body.code).toBe("IDEMPOTENCY_CONFLICT");
});

test("a send claimed by a worker that crashed is claimed again after its lease and sent once", async () => {
  const c = ctx.owner.client;
  // The local worker is stopped while the crash is staged (its interval would otherwise claim the send first).
  const { sendQueue } = app.broker.getLocalService("messages") as unknown as { sendQueue: Poller };
  await sendQueue.stop();
  try {
    const res = await c.post(`${ctx.ws}/messages`, {
      to: "crash@example.com",
      channel: "email",
      content: { subject: "s", html: "<p>x</p>" },
      sendAt: new Date(Date.now() + 60_000).toISOString(),
    });
    const sequelize = await database();
    await sequelize.query(`UPDATE messages SET send_at = now() WHERE id = $1`, { bind: [res.body.id] });
    // The crashed worker: it claimed the send with a short lease and never finished.
    const claimed = await repo.claimDue(1000, 50);
    expect(claimed.map((r) => r.id)).toContain(res.body.id);
  } finally {
    sendQueue.start();
  }
  const sent = await waitFor(async () => {
    const rows = await (
      await database()
    ).query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM messages WHERE to_address = 'crash@example.com'`,
      { type: QueryTypes.SELECT },
    );
    return rows[0]?.status === "sent" ? rows[0] : undefined;
  });
  expect(sent.attempts).toBe(2);
});

test("templates out of reach when a send is claimed: it waits for its lease and goes, not failed as if its template were deleted", async () => {
  const c = ctx.owner.client;
  const sequelize = await database();
  const contactId = await contact({ email: "reach@example.com" });
  const template = await c.post(`${ctx.ws}/templates`, {
    name: "Reach",
    channel: "email",
    content: { subject: "s", html: "<p>x</p>" },
  });
  const { sendQueue } = app.broker.getLocalService("messages") as unknown as { sendQueue: Poller };
  await sendQueue.stop();
  const sender = new Sender(app.broker, app.broker.getLogger("reach"));
  const templates = (await import("../../../services/templates/templates.service")).default;
  let id = "";
  try {
    const res = await c.post(`${ctx.ws}/messages`, {
      contactId,
      channel: "email",
      templateId: template.body.id,
      sendAt: new Date(Date.now() + 60_000).toISOString(),
    });
    id = res.body.id;
    await sequelize.query(`UPDATE messages SET send_at = now() WHERE id = $1`, { bind: [id] });
    await app.broker.destroyService(app.broker.getLocalService("templates")!);
    // No node runs templates (Moleculer's not-found or not-available): the pass fails, the claim is kept.
    await expect(sender.pass()).rejects.toMatchObject({
      type: expect.stringMatching(/^SERVICE_NOT_(FOUND|AVAILABLE)$/),
    });
    const [held] = await sequelize.query<{ status: string }>(`SELECT status FROM messages WHERE id = $1`, {
      bind: [id],
      type: QueryTypes.SELECT,
    });
    expect(held.status).toBe("sending");
    // A send asked for meanwhile: the API says templates are out of reach (not "no such template", not "no route").
    const refused = await c.post(`${ctx.ws}/messages`, {
      contactId,
      channel: "email",
      templateId: template.body.id,
    });
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe("SERVICE_UNAVAILABLE");
    // Its lease runs out.
    await sequelize.query(`UPDATE messages SET lease_until = now() WHERE id = $1`, { bind: [id] });
  } finally {
    await sender.providers.close();
    if (!app.broker.getLocalService("templates"))
      app.broker.createService(templates as unknown as Parameters<typeof app.broker.createService>[0]);
    await app.broker.waitForServices(["templates"], 10_000);
    sendQueue.start();
  }
  const sent = await waitFor(async () => {
    const [row] = await sequelize.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM messages WHERE id = $1`,
      { bind: [id], type: QueryTypes.SELECT },
    );
    return row.status === "sent" ? row : undefined;
  });
  expect(sent.attempts).toBe(2);
});

test("a full claim claims the next ahead while it sends; a stopping sender hands that claim back at once", async () => {
  const c = ctx.owner.client;
  const sequelize = await database();
  const due = async () =>
    (
      await sequelize.query<{ id: string; status: string; attempts: number }>(
        `SELECT id, status, attempts FROM messages WHERE status IN ('queued', 'sending') AND send_at <= now()`,
        { type: QueryTypes.SELECT },
      )
    ).length;
  // The service's worker drains what earlier tests queued, then stands aside for a sender of the test's own.
  await waitFor(async () => (await due()) === 0, 10_000, "nothing due");
  const { sendQueue } = app.broker.getLocalService("messages") as unknown as { sendQueue: Poller };
  await sendQueue.stop();
  const sender = new Sender(app.broker, app.broker.getLogger("ahead"));
  try {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await c.post(`${ctx.ws}/messages`, {
        to: `ahead${i}@example.com`,
        channel: "email",
        content: { subject: "s", html: "<p>x</p>" },
        sendAt: new Date(Date.now() + 60_000).toISOString(),
      });
      ids.push(res.body.id);
    }
    await sequelize.query(`UPDATE messages SET send_at = now() WHERE id = ANY ($1)`, { bind: [ids] });
    const states = async () =>
      sequelize.query<{ status: string; attempts: number }>(
        `SELECT status, attempts FROM messages WHERE id = ANY ($1) ORDER BY status`,
        { bind: [ids], type: QueryTypes.SELECT },
      );
    expect(await sender.pass(2)).toMatchObject({ sent: 2, failed: 0, retried: 0 });
    // The other two were claimed while the first two were sent.
    expect(
      await waitFor(async () => (await states()).filter((r) => r.status === "sending").length === 2),
    ).toBe(true);
    await sender.stop();
    expect(await states()).toEqual([
      { status: "queued", attempts: 0 },
      { status: "queued", attempts: 0 },
      { status: "sent", attempts: 1 },
      { status: "sent", attempts: 1 },
    ]);
    expect(await sender.pass(2)).toMatchObject({ sent: 0 });
  } finally {
    await sender.providers.close();
    sendQueue.start();
  }
  await waitFor(
    async () => (await due()) === 0,
    10_000,
    "the handed-back sends sent by the service's worker",
  );
});

test("tracking: the pixel counts a signed open, a click redirects only when signed, tampered links are 400", async () => {
  const c = ctx.owner.client;
  const contactId = await contact({ email: "track@example.com" });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: '<p><a href="https://example.org/page">page</a></p>' },
  });
  const sent = await sentTo(res.body.id);
  const [, pixelPath] = /src="https?:\/\/[^/]+(\/api\/messages\/[^"]+)"/.exec(
    sent.content.html,
  ) as RegExpExecArray;
  const [, clickPath] = /href="https?:\/\/[^/]+(\/api\/messages\/[^"]+u=[^"]+)"/.exec(
    sent.content.html,
  ) as RegExpExecArray;
  // Opens sooner than MACHINE_OPEN_MS after the send count as machines.
  await waitFor(() => Date.now() - Date.parse(sent.sentAt) > MACHINE_OPEN_MS, 5000, "a person's open time");
  const browser = { "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0" };

  // A HEAD (a link checker, a preview) answers as GET and records nothing.
  const headPixel = await fetch(`${app.baseUrl}${pixelPath.replace(/&amp;/g, "&")}`, {
    method: "HEAD",
    headers: browser,
  });
  expect(headPixel.headers.get("content-type")).toBe("image/gif");
  const headClick = await fetch(`${app.baseUrl}${clickPath.replace(/&amp;/g, "&")}`, {
    method: "HEAD",
    headers: browser,
    redirect: "manual",
  });
  expect(headClick.status).toBe(302);
  expect(headClick.headers.get("location")).toBe("https://example.org/page");
  expect((await c.get(`${ctx.ws}/messages/${res.body.id}`)).body).toMatchObject({ opens: 0, clicks: 0 });

  const pixel = await c.get(pixelPath.replace(/&amp;/g, "&"), { headers: browser });
  expect(pixel.status).toBe(200);
  expect(pixel.headers.get("content-type")).toBe("image/gif");
  expect(pixel.headers.get("cache-control")).toBe("no-store");
  const unsigned = await c.get(`/api/messages/${res.body.id}/track?s=bad`, { headers: browser });
  expect(unsigned.status).toBe(200);

  const click = await c.get(clickPath.replace(/&amp;/g, "&"), { headers: browser });
  expect(click.status).toBe(302);
  expect(click.headers.get("location")).toBe("https://example.org/page");
  const tampered = await c.get(
    clickPath.replace(/&amp;/g, "&").replace(/s=[^&]+/, "s=AAAAAAAAAAAAAAAAAAAAAA"),
  );
  expect(tampered.status).toBe(400);
  expect(tampered.body.code).toBe("INVALID_TOKEN");

  const after = (await c.get(`${ctx.ws}/messages/${res.body.id}`)).body;
  expect(after).toMatchObject({ status: "clicked", opens: 1, clicks: 1 });
  const events = (await c.get(`${ctx.ws}/events?contactId=${contactId}`)).body as Array<{
    type: string;
    metadata: Record<string, unknown>;
  }>;
  expect(events.map((e) => e.type).sort()).toEqual(["message.click", "message.open"]);
  expect(events.find((e) => e.type === "message.click")?.metadata).toMatchObject({
    messageId: res.body.id,
    channel: "email",
    machine: false,
    url: "https://example.org/page",
  });

  const scanner = await c.get(pixelPath.replace(/&amp;/g, "&"), {
    headers: { "user-agent": "Barracuda Sentinel (EE)" },
  });
  expect(scanner.status).toBe(200);
  expect((await c.get(`${ctx.ws}/messages/${res.body.id}`)).body.opens).toBe(1);

  // The contact's data export holds its messages and link clicks; erasure removes them.
  const exported = (await c.get(`${ctx.ws}/contacts/${contactId}/gdpr/export`)).body;
  expect(exported.messages.map((m: { id: string }) => m.id)).toEqual([res.body.id]);
  expect(exported.linkClicks).toEqual([
    expect.objectContaining({ messageId: res.body.id, contactId, clicks: 1, code: expect.any(String) }),
  ]);
  expect((await c.delete(`${ctx.ws}/contacts/${contactId}/gdpr/delete`)).status).toBe(200);
  const left = await (
    await database()
  ).query<{ n: number }>(
    `SELECT (SELECT count(*) FROM short_link_clicks WHERE contact_id = $1)::int
          + (SELECT count(*) FROM messages WHERE contact_id = $1)::int AS n`,
    { bind: [contactId], type: QueryTypes.SELECT },
  );
  expect(left[0].n).toBe(0);
});

/** A sent email with one link: its pixel and click paths, sent a minute ago (no prefetch timing in play). */
async function trackedEmail(email: string) {
  const c = ctx.owner.client;
  const contactId = await contact({ email });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: '<p><a href="https://example.org/offer">offer</a></p>' },
  });
  const sent = await sentTo(res.body.id);
  await (
    await database()
  ).query(`UPDATE messages SET sent_at = now() - interval '1 minute' WHERE id = $1`, { bind: [res.body.id] });
  const path = (re: RegExp) => (re.exec(sent.content.html) as RegExpExecArray)[1].replace(/&amp;/g, "&");
  return {
    contactId,
    messageId: res.body.id as string,
    pixelPath: path(/src="https?:\/\/[^/]+(\/api\/messages\/[^"]+)"/),
    clickPath: path(/href="https?:\/\/[^/]+(\/api\/messages\/[^"]+u=[^"]+)"/),
  };
}

test("tracking: Gmail's and Yahoo's image proxies open for the reader and count; Apple's privacy proxy does not", async () => {
  const c = ctx.owner.client;
  const gmail = await trackedEmail("gmail-reader@example.com");
  const viaGmail =
    "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)";
  expect((await c.get(gmail.pixelPath, { headers: { "user-agent": viaGmail } })).status).toBe(200);
  const opened = (await c.get(`${ctx.ws}/messages/${gmail.messageId}`)).body;
  expect(opened).toMatchObject({ status: "opened", opens: 1, openedAt: expect.any(String) });

  const yahoo = await trackedEmail("yahoo-reader@example.com");
  const viaYahoo = "YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html";
  await c.get(yahoo.pixelPath, { headers: { "user-agent": viaYahoo } });
  expect((await c.get(`${ctx.ws}/messages/${yahoo.messageId}`)).body).toMatchObject({ opens: 1 });

  // Apple Mail Privacy Protection fetches from Apple's network (17.0.0.0/8) with an ordinary agent: a machine.
  const apple = await trackedEmail("apple-reader@example.com");
  const safari = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)";
  await c.get(apple.pixelPath, { headers: { "user-agent": safari, "x-forwarded-for": "17.58.101.20" } });
  expect((await c.get(`${ctx.ws}/messages/${apple.messageId}`)).body).toMatchObject({
    status: "sent",
    opens: 0,
    openedAt: null,
  });
  const events = (await c.get(`${ctx.ws}/events?contactId=${apple.contactId}`)).body as Array<{
    type: string;
    metadata: Record<string, unknown>;
  }>;
  expect(events).toEqual([
    expect.objectContaining({ type: "message.open", metadata: expect.objectContaining({ machine: true }) }),
  ]);
  // The same agent from elsewhere is the reader.
  await c.get(apple.pixelPath, { headers: { "user-agent": safari, "x-forwarded-for": "203.0.113.9" } });
  expect((await c.get(`${ctx.ws}/messages/${apple.messageId}`)).body).toMatchObject({ opens: 1 });
});

test("tracking: a link scanner clicking first leaves the person's first click its unique click", async () => {
  const c = ctx.owner.client;
  const { messageId, clickPath } = await trackedEmail("corporate@example.com");
  const scanner = await c.get(clickPath, { headers: { "user-agent": "Mimecast URL Protect" } });
  expect(scanner.status).toBe(302);
  const person = { "user-agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Firefox/128.0" };
  expect((await c.get(clickPath, { headers: person })).status).toBe(302);
  expect((await c.get(clickPath, { headers: person })).status).toBe(302);

  const code = /u=([^&]+)/.exec(clickPath)![1];
  const links = (await c.get(`${ctx.ws}/short-links`)).body.data as Array<Record<string, unknown>>;
  expect(links.find((l) => l.code === code)).toMatchObject({ clicks: 2, uniqueClicks: 1 });
  expect((await c.get(`${ctx.ws}/messages/${messageId}`)).body).toMatchObject({
    status: "clicked",
    clicks: 2,
  });
});

test("unsubscribe: GET shows a page and changes nothing, one-click POST opts out once with the message id", async () => {
  const c = ctx.owner.client;
  const hook = await c.post(`${ctx.ws}/webhooks`, {
    name: "unsub",
    url: receiver.url("/unsub"),
    events: ["unsubscribe.email"],
  });
  expect(hook.status).toBe(201);
  const contactId = await contact({ email: "leave@example.com", firstName: "Lee" });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: '<a href="{{ unsubscribeUrl }}">u</a>' },
  });
  const sent = await sentTo(res.body.id);
  const [, token] = /unsubscribe\?token=([^"&]+)/.exec(sent.content.html) as RegExpExecArray;

  const page = await c.get(`/api/unsubscribe?token=${token}`);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toContain("text/html");
  expect(page.text).toContain("leave@example.com");
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.email.status).not.toBe("opted_out");

  const oneClick = await c.request("POST", `/api/unsubscribe?token=${token}`, {
    form: { "List-Unsubscribe": "One-Click" },
  });
  expect(oneClick.body).toEqual({ success: true, channel: "email" });
  expect(oneClick.body).toEqual({ success: true, channel: "email" });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.email).toMatchObject({
    status: "opted_out",
    source: "one_click",
  });
  expect(
    (
      await c.request("POST", `/api/unsubscribe?token=${token}`, {
        form: { "List-Unsubscribe": "One-Click" },
      })
    ).status,
  ).toBe(200);

  const delivered = await waitFor(
    () => {
      const hits = receiver.received.filter((r) => r.path === "/unsub");
      return hits.length ? hits : undefined;
    },
    10_000,
    "unsubscribe.email delivery",
  );
  expect(JSON.parse(delivered[0].body).data).toMatchObject({
    contactId,
    channel: "email",
    source: "one_click",
    messageId: res.body.id,
  });
  await new Promise((r) => setTimeout(r, 300));
  expect(receiver.received.filter((r) => r.path === "/unsub")).toHaveLength(1);

  const bad = await c.get(`/api/unsubscribe?token=${token.slice(0, -3)}abc`);
  expect(bad.status).toBe(400);
  const badJson = await c.request("POST", `/api/unsubscribe?token=nope`, {
    headers: { accept: "application/json" },
    form: {},
  });
  expect(badJson.body.code).toBe("INVALID_TOKEN");
});

test("unsubscribe: RFC 8058 one-click as multipart/form-data is one_click; a file in it is refused", async () => {
  const c = ctx.owner.client;
  const contactId = await contact({ email: "multipart@example.com" });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: '<a href="{{ unsubscribeUrl }}">u</a>' },
  });
  const sent = await sentTo(res.body.id);
  const [, token] = /unsubscribe\?token=([^"&]+)/.exec(sent.content.html) as RegExpExecArray;
  const form = new FormData();
  form.append("List-Unsubscribe", "One-Click");
  const oneClick = await c.request("POST", `/api/unsubscribe?token=${token}`, await multipartBody(form));
  expect(oneClick.status).toBe(200);
  expect(oneClick.body).toEqual({ success: true, channel: "email" });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.email).toMatchObject({
    status: "opted_out",
    source: "one_click",
    messageId: res.body.id,
  });
  const withFile = new FormData();
  withFile.append("file", new Blob(["x"]), "x.txt");
  expect(
    (await c.request("POST", `/api/unsubscribe?token=${token}`, await multipartBody(withFile))).status,
  ).toBe(400);
});

test("public pages: a bad link answers JSON unless HTML is preferred", async () => {
  const c = ctx.owner.client;
  const json = await c.get("/api/unsubscribe?token=bad", { headers: { accept: "application/json" } });
  expect(json.status).toBe(400);
  expect(json.headers.get("content-type")).toContain("application/json");
  expect(json.body.code).toBe("INVALID_TOKEN");
  const bare = await c.get("/api/preferences/confirm?token=bad");
  expect(bare.headers.get("content-type")).toContain("application/json");
  expect(bare.body.code).toBe("INVALID_TOKEN");
  const browser = await c.get("/api/unsubscribe?token=bad", {
    headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" },
  });
  expect(browser.status).toBe(400);
  expect(browser.headers.get("content-type")).toContain("text/html");
  expect(browser.text).toContain("This link no longer works");
});

test("preferences: JSON with channels and topics; PUT applies with source preference_centre; HTML for a browser", async () => {
  const c = ctx.owner.client;
  await c.patch(ctx.ws, {
    settings: {
      topics: [
        { key: "news", name: "News" },
        { key: "offers", name: "Offers" },
      ],
    },
  });
  const contactId = await contact({ email: "prefs@example.com", firstName: "Pat" });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: '<a href="{{ preferencesUrl }}">p</a>' },
  });
  const sent = await sentTo(res.body.id);
  const [, token] = /preferences\?token=([^"&]+)/.exec(sent.content.html) as RegExpExecArray;
  const json = await c.get(`/api/preferences?token=${token}`, { headers: { accept: "application/json" } });
  expect(json.body).toMatchObject({
    contact: { email: "prefs@example.com", firstName: "Pat" },
    topics: [
      { key: "news", subscribed: true },
      { key: "offers", subscribed: true },
    ],
  });
  // The workspace has no provider but the log one: email is the one channel it can send on.
  expect(json.body.channels).toEqual({ email: "unknown" });
  const put = await c.put(`/api/preferences?token=${token}`, {
    channels: { email: "opted_out", chatapp1: "opted_in" },
    topics: { offers: false, unknown: false },
  });
  expect(put.status).toBe(200);
  expect(put.body.channels).toEqual({ email: "opted_out" });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body).toMatchObject({
    email: { status: "opted_out", source: "preference_centre", messageId: res.body.id },
    chatapp1: { status: "unknown" },
  });
  expect(put.body.topics).toEqual([
    { key: "news", name: "News", subscribed: true },
    { key: "offers", name: "Offers", subscribed: false },
  ]);
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.email.source).toBe(
    "preference_centre",
  );
  const page = await c.get(`/api/preferences?token=${token}`, { headers: { accept: "text/html" } });
  expect(page.headers.get("content-type")).toContain("text/html");
  expect(page.text).toContain("Offers");
});

test("lists filter by status, channel and contact, newest first; the contact's timeline shows messages camelCased", async () => {
  const c = ctx.owner.client;
  const suppressed = await c.get(`${ctx.ws}/messages?status=suppressed&channel=email`);
  expect(suppressed.body.data.length).toBeGreaterThan(0);
  expect(suppressed.body.data.every((m: { status: string }) => m.status === "suppressed")).toBe(true);
  const contactId = await contact({ email: "timeline@example.com" });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: "<p>x</p>" },
  });
  await sentTo(res.body.id);
  expect(
    (await c.get(`${ctx.ws}/messages?contactId=${contactId}`)).body.data.map((m: { id: string }) => m.id),
  ).toEqual([res.body.id]);
  const timeline = await c.get(`${ctx.ws}/contacts/${contactId}/timeline`);
  const item = timeline.body.data.find((i: { kind: string }) => i.kind === "message");
  expect(item.data).toMatchObject({
    messageId: res.body.id,
    channel: "email",
    status: "sent",
    to: "timeline@example.com",
    sentAt: expect.stringMatching(/\.\d{3}Z$/),
  });
  expect(item.data).not.toHaveProperty("to_address");
});

test("enqueue (broadcasts, journeys): a template to many contacts, each checked, unknown and address-less ones skipped", async () => {
  const c = ctx.owner.client;
  const t = await c.post(`${ctx.ws}/templates`, {
    name: "Batch",
    channel: "email",
    content: { subject: "Hi {{ contact.firstName }} {{ promo }}", html: "<p>{{ promo }}</p>" },
  });
  const ok = await contact({ email: "batch-ok@example.com", firstName: "Ok" });
  const out = await contact({ email: "batch-out@example.com" });
  await c.put(`${ctx.ws}/contacts/${out}/consent`, { channel: "email", status: "opted_out" });
  const phoneOnly = await contact({ phone: "+15555550123" });
  const result = await app.broker.call(
    "messages.enqueue",
    {
      channel: "email",
      templateId: t.body.id,
      contactIds: [ok, out, phoneOnly, "no-such-contact", ok],
      variables: { promo: "SAVE" },
    },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  expect(result).toMatchObject({
    queued: 1,
    suppressed: 1,
    skipped: [
      { contactId: phoneOnly, reason: "no_address" },
      { contactId: "no-such-contact", reason: "not_found" },
    ],
  });
  const [queuedId, suppressedId] = (result as { messageIds: string[] }).messageIds;
  expect((await c.get(`${ctx.ws}/messages/${suppressedId}`)).body).toMatchObject({
    status: "suppressed",
    reason: "unsubscribed",
    contactId: out,
  });
  const sent = await sentTo(queuedId);
  expect(sent.content.subject).toBe("Hi Ok SAVE");

  const wrongChannel = app.broker.call(
    "messages.enqueue",
    { channel: "sms", templateId: t.body.id, contactIds: [ok] },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  await expect(wrongChannel).rejects.toMatchObject({ code: 400 });
});

test("history written before times were formatted in SQL is rewritten by its migration, in its order", async () => {
  const c = ctx.owner.client;
  const contactId = await contact({ email: "history@example.com" });
  const res = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "s", html: "<p>x</p>" },
  });
  await sentTo(res.body.id);
  const sequelize = await database();
  const old = [
    { status: "queued", at: "2026-01-01T10:00:00.120Z", reason: null },
    { status: "sending", at: "2026-01-01T10:00:00.120345+00:00", reason: null },
    { status: "sent", at: "2026-01-01T12:00:01.5+02:00", reason: null },
  ];
  await sequelize.query("UPDATE messages SET history = $1::jsonb WHERE id = $2", {
    bind: [JSON.stringify(old), res.body.id],
  });
  await normaliseHistoryTimes(sequelize);
  const detail = await c.get(`${ctx.ws}/messages/${res.body.id}`);
  expect(detail.body.history).toEqual([
    { status: "queued", at: "2026-01-01T10:00:00.120Z", reason: null },
    { status: "sending", at: "2026-01-01T10:00:00.120Z", reason: null },
    { status: "sent", at: "2026-01-01T10:00:01.500Z", reason: null },
  ]);
});
