import { filedAfter, inboundFiled, postTwilioSms } from "../../helpers/inbound";
import { mkdtempSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { SYSTEM } from "../../../lib/access";
import { startApp, type TestApp } from "../../helpers/app";
import {
  multipartBody,
  ownerWithWorkspace,
  signUp,
  type HttpClient,
  type SignedInUser,
} from "../../helpers/http";
import { DateTime } from "luxon";
import { mailgunSignature, vonageBearer } from "../../helpers/provider-signatures";
import { waitFor } from "../../helpers/wait";
import { newContact } from "../providers/fixtures";
import { takeTurns } from "../../../services/inbox/rules.repo";
import { waitingThreads } from "../../../services/inbox/threads.repo";
import { asWorkspaceId } from "../../../lib/tenancy";
import { startReceiver, type Received } from "../../helpers/receiver";

/**
 * The shared inbox through the gateway (contract-messaging 11): inbound SMS
 * (smsapi1's signed webhook) and email (emailapi2's inbound route form)
 * become threads; an assignment rule and an auto-reply fire once; members
 * reply through a local fake of the provider; `deliver` sends a failed reply
 * again; snooze, filters, unread counts; rules, auto-replies and canned
 * responses with their refusals.
 */

const PUBLIC_URL = "https://cms.example.test";
/** Its own data folder: mails' attachments are kept in its asset storage, which the tests look into. */
const dataDir = mkdtempSync(path.join(os.tmpdir(), "inbox-test-"));
const TWILIO_FROM = "+15550009999";
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let agent: SignedInUser;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let twilioId: string;
let mailgunId: string;
let twilioFails = false;
let mgCounter = 0;

const fakeApi = (req: Received) => {
  if (req.path.startsWith("/vonage"))
    return {
      status: 200,
      body: JSON.stringify({
        "message-count": "1",
        messages: [{ status: "0", "message-id": `V-${fake.received.length}` }],
      }),
    };
  if (req.path.startsWith("/sendgrid"))
    return { status: 202, body: "", headers: { "x-message-id": `sg-${fake.received.length}` } };
  if (req.path.startsWith("/mailgun"))
    return {
      status: 200,
      body: JSON.stringify({ id: `<mg-${++mgCounter}@mg.acme.test>`, message: "Queued" }),
    };
  if (twilioFails) return { status: 503, body: JSON.stringify({ message: "Service unavailable" }) };
  return { status: 201, body: JSON.stringify({ sid: `SM-out-${fake.received.length}`, num_segments: "1" }) };
};

beforeAll(async () => {
  fake = await startReceiver(fakeApi);
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "segments",
      "templates",
      "messages",
      "providers",
      "crm",
      "inbox",
    ],
    env: { PUBLIC_URL, MESSAGE_POLL_MS: "50", INBOX_POLL_MS: "100", DATA_DIR: dataDir },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  agent = await signUp(app.baseUrl, "Agent Smith");
  const c = ctx.owner.client;
  expect((await c.post(`${ctx.ws}/members`, { email: agent.email, role: "MEMBER" })).status).toBe(201);
  await c.patch(ctx.ws, { settings: { sender: { fromEmail: "support@acme.test" } } });
  twilioId = (
    await c.post(`${ctx.ws}/providers/sms`, {
      type: "smsapi1",
      config: {
        accountSid: "AC1",
        authToken: "twilio-auth",
        from: TWILIO_FROM,
        baseUrl: fake.url("/twilio"),
      },
    })
  ).body.id;
  mailgunId = (
    await c.post(`${ctx.ws}/providers/email`, {
      type: "emailapi2",
      config: {
        apiKey: "mg-key",
        domain: "mg.acme.test",
        webhookSigningKey: "mg-signing",
        baseUrl: fake.url("/mailgun"),
      },
    })
  ).body.id;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
  await rm(dataDir, { recursive: true, force: true });
});

function inboundSms(from: string, sid: string, body: string, signWith = "twilio-auth") {
  const form = { MessageSid: sid, From: from, To: TWILIO_FROM, Body: body };
  return filedAfter(
    app,
    postTwilioSms(app, { publicUrl: PUBLIC_URL, providerId: twilioId, authToken: signWith }, form),
  );
}

/** A mail forwarded by an emailapi2 (Mailgun) inbound route, as a form or multipart. */
function inboundMail(fields: Record<string, string>, opts: { key?: string; multipart?: boolean } = {}) {
  const form = { ...fields, ...mailgunSignature(opts.key ?? "mg-signing") };
  const path = `/api/providers/email/webhooks?providerId=${mailgunId}`;
  if (!opts.multipart)
    return filedAfter(
      app,
      app.http().request("POST", path, {
        raw: new URLSearchParams(form).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
    );
  const boundary = "----mailgun-route-boundary";
  const raw = `${Object.entries(form)
    .map(
      ([name, value]) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
    )
    .join("")}--${boundary}--\r\n`;
  return filedAfter(
    app,
    app.http().request("POST", path, {
      raw,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    }),
  );
}

const smsTo = (phone: string) =>
  fake.received.filter(
    (r) => r.path.startsWith("/twilio") && new URLSearchParams(r.body).get("To") === phone,
  );
const threadOf = async (contactId: string, channel: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/inbox?contactId=${contactId}&channel=${channel}`)).body.data;

test("rules, auto-replies and canned responses: CRUD as bare arrays, with their refusals", async () => {
  const c = ctx.owner.client;
  const stranger = await signUp(app.baseUrl, "Stranger");

  const rr = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Everyone",
    type: "round_robin",
    priority: 50,
    config: { memberIds: [ctx.owner.id, agent.id], maxOpen: 5 },
  });
  expect(rr.status).toBe(201);
  expect(rr.body).toMatchObject({ type: "round_robin", priority: 50, active: true });
  const bad = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Bad",
    type: "round_robin",
    config: { memberIds: [agent.id, stranger.id] },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("config.memberIds[1]");
  const shape = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Bad",
    type: "condition",
    config: { keywords: ["x"] },
  });
  expect(shape.status).toBe(400);
  expect(shape.body.details[0].field).toBe("config.assigneeId");
  const hours = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Bad",
    type: "condition",
    config: { assigneeId: agent.id, businessHours: { days: [1], start: "09:00" } },
  });
  expect(hours.status).toBe(400);
  expect(hours.body.details[0].field).toBe("config.businessHours.days");
  const badFilter = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Bad",
    type: "condition",
    config: {
      assigneeId: agent.id,
      filter: { match: "all", conditions: [{ field: "nope", operator: "eq", value: 1 }] },
    },
  });
  expect(badFilter.status).toBe(400);
  const vip = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "VIPs",
    type: "condition",
    priority: 70,
    config: {
      assigneeId: agent.id,
      filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "vip" }] },
    },
  });
  expect(vip.status).toBe(201);
  expect((await c.delete(`${ctx.ws}/inbox/assignment-rules/${vip.body.id}`)).status).toBe(200);
  const patched = await c.patch(`${ctx.ws}/inbox/assignment-rules/${rr.body.id}`, {
    active: false,
    priority: 60,
  });
  expect(patched.body).toMatchObject({ active: false, priority: 60 });
  const list = await c.get(`${ctx.ws}/inbox/assignment-rules`);
  expect(Array.isArray(list.body)).toBe(true);
  expect(list.body.map((r: { id: string }) => r.id)).toContain(rr.body.id);
  expect((await c.delete(`${ctx.ws}/inbox/assignment-rules/${rr.body.id}`)).body).toEqual({ success: true });
  expect((await c.delete(`${ctx.ws}/inbox/assignment-rules/${rr.body.id}`)).status).toBe(404);

  const auto = await c.post(`${ctx.ws}/inbox/auto-replies`, {
    name: "Nights",
    channel: "email",
    keywords: ["price"],
    businessHours: { days: [1, 2, 3, 4, 5], start: "09:00", end: "17:00", holidays: ["2026-12-25"] },
    body: "We are closed.",
  });
  expect(auto.status).toBe(201);
  expect((await c.patch(`${ctx.ws}/inbox/auto-replies/${auto.body.id}`, { active: false })).body.active).toBe(
    false,
  );
  expect(
    (
      await c.post(`${ctx.ws}/inbox/auto-replies`, {
        name: "x",
        body: "y",
        businessHours: { start: "09:00" },
      })
    ).status,
  ).toBe(400);
  expect((await c.get(`${ctx.ws}/inbox/auto-replies`)).body).toHaveLength(1);
  expect((await c.delete(`${ctx.ws}/inbox/auto-replies/${auto.body.id}`)).status).toBe(200);

  const canned = await c.post(`${ctx.ws}/inbox/canned-responses`, {
    name: "Greeting",
    shortcode: "hello",
    body: "Hi {{ contact.firstName }}, {{ member.name }} here.",
  });
  expect(canned.status).toBe(201);
  expect(
    (await c.post(`${ctx.ws}/inbox/canned-responses`, { name: "Dup", shortcode: "hello", body: "x" })).status,
  ).toBe(409);
  const badCode = await c.post(`${ctx.ws}/inbox/canned-responses`, {
    name: "x",
    shortcode: "Bad!",
    body: "x",
  });
  expect(badCode.status).toBe(400);
  expect(badCode.body.details[0].field).toBe("shortcode");
  const badLiquid = await c.post(`${ctx.ws}/inbox/canned-responses`, {
    name: "x",
    shortcode: "x",
    body: "{{ oops",
  });
  expect(badLiquid.body).toMatchObject({ code: "TEMPLATE_ERROR", details: [{ field: "body" }] });
  const other = await c.post(`${ctx.ws}/inbox/canned-responses`, {
    name: "Other",
    shortcode: "other",
    body: "x",
  });
  expect(
    (await c.patch(`${ctx.ws}/inbox/canned-responses/${other.body.id}`, { shortcode: "hello" })).status,
  ).toBe(409);
  expect((await c.delete(`${ctx.ws}/inbox/canned-responses/${other.body.id}`)).status).toBe(200);
  expect(
    (await c.get(`${ctx.ws}/inbox/canned-responses`)).body.map((r: { shortcode: string }) => r.shortcode),
  ).toEqual(["hello"]);
  // A viewer reads but may not write.
  const viewer = await signUp(app.baseUrl, "Viewer");
  await c.post(`${ctx.ws}/members`, { email: viewer.email, role: "VIEWER" });
  expect((await viewer.client.get(`${ctx.ws}/inbox/canned-responses`)).status).toBe(200);
  expect(
    (await viewer.client.post(`${ctx.ws}/inbox/canned-responses`, { name: "v", shortcode: "v", body: "v" }))
      .status,
  ).toBe(403);
});

test("inbound SMS: a thread, assigned once, one auto-reply a day, replies delivered, a failed one delivered again", async () => {
  const c = ctx.owner.client;
  const rule = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "SMS team",
    type: "round_robin",
    priority: 1,
    config: { memberIds: [agent.id] },
  });
  const auto = await c.post(`${ctx.ws}/inbox/auto-replies`, {
    name: "Ack",
    channel: "sms",
    body: "Thanks, we will answer soon.",
  });
  expect(auto.status).toBe(201);
  const phone = "+14155550111";

  expect((await inboundSms(phone, "SMa1", "Hello, I need help", "wrong")).status).toBe(401);
  expect((await inboundSms(phone, "SMa1", "Hello, I need help")).status).toBe(200);
  const contactId = (await c.get(`${ctx.ws}/contacts?search=${encodeURIComponent(phone)}`)).body.data[0].id;
  const [thread] = await threadOf(contactId, "sms");
  expect(thread).toMatchObject({
    channel: "sms",
    status: "open",
    assigneeId: agent.id,
    unread: 1,
    contact: { id: contactId, phone },
  });
  const ack = await waitFor(() => smsTo(phone)[0], 10_000, "the auto-reply");
  expect(new URLSearchParams(ack.body).get("Body")).toBe("Thanks, we will answer soon.");

  // More from the contact: the same thread, no second auto-reply today; a retried webhook stores nothing twice.
  await inboundSms(phone, "SMa2", "Are you there?");
  await inboundSms(phone, "SMa2", "Are you there?");
  const detail = (await agent.client.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(
    detail.messages.map((m: { direction: string; body: string; authorId: string | null; status: string }) => [
      m.direction,
      m.body,
      m.authorId,
      m.status,
    ]),
  ).toEqual([
    ["inbound", "Hello, I need help", null, "received"],
    ["outbound", "Thanks, we will answer soon.", null, "sent"],
    ["inbound", "Are you there?", null, "received"],
  ]);
  expect(detail.unread).toBe(0); // the member has read it
  expect(smsTo(phone)).toHaveLength(1);
  expect((await threadOf(contactId, "sms")).length).toBe(1);

  // The activity carries the thread; the assignee was notified of the thread and the later message.
  const events = await c.get(`${ctx.ws}/events?contactId=${contactId}&type=sms.message_received`);
  expect(events.body.map((e: { metadata: { threadId: string } }) => e.metadata.threadId)).toEqual([
    thread.id,
    thread.id,
  ]);
  const notes = (await agent.client.get(`${ctx.ws}/notifications`)).body.data.map(
    (n: { type: string }) => n.type,
  );
  expect(notes.sort()).toEqual(["inbox.assigned", "inbox.message"]);

  // The agent answers: sent through the provider it came in by; the thread waits on the contact.
  const reply = await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, { body: "Sure, {how} can I help?" });
  expect(reply.status).toBe(201);
  expect(reply.body).toMatchObject({
    direction: "outbound",
    authorId: agent.id,
    status: "sent",
    error: null,
  });
  expect(new URLSearchParams(smsTo(phone)[1].body).get("Body")).toBe("Sure, {how} can I help?");
  expect((await c.get(`${ctx.ws}/inbox/${thread.id}`)).body.status).toBe("pending");
  const sent = await c.get(`${ctx.ws}/messages/${reply.body.messageId}`);
  expect(sent.body).toMatchObject({ transactional: true, providerId: twilioId, status: "sent" });

  // A canned response renders for this contact and member.
  await c.patch(`${ctx.ws}/contacts/${contactId}`, { firstName: "Dana" });
  const canned = (await c.get(`${ctx.ws}/inbox/canned-responses`)).body.find(
    (r: { shortcode: string }) => r.shortcode === "hello",
  );
  const cannedReply = await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, {
    cannedResponseId: canned.id,
  });
  expect(cannedReply.body.body).toBe("Hi Dana, Agent Smith here.");
  expect((await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, {})).status).toBe(400);
  expect(
    (await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, { body: "x", cannedResponseId: canned.id }))
      .status,
  ).toBe(400);

  // The provider fails: the reply shows it at once; `deliver` sends it again once it is back.
  twilioFails = true;
  const failed = await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, { body: "Second try" });
  expect(failed.body).toMatchObject({ status: "failed" });
  expect(failed.body.error).toMatch(/503|unavailable/i);
  twilioFails = false;
  const again = await agent.client.post(`${ctx.ws}/inbox/${thread.id}/replies/${failed.body.id}/deliver`);
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({ id: failed.body.id, status: "sent", error: null });
  const twice = await agent.client.post(`${ctx.ws}/inbox/${thread.id}/replies/${failed.body.id}/deliver`);
  expect(twice.status).toBe(409);
  expect(twice.body.code).toBe("INVALID_STATE");
  expect((await agent.client.post(`${ctx.ws}/inbox/${thread.id}/replies/nope/deliver`)).status).toBe(404);

  // Filters and the unread summary.
  await inboundSms(phone, "SMa3", "One more question about billing");
  const mine = await agent.client.get(`${ctx.ws}/inbox?assigneeId=me`);
  expect(mine.body.data.map((t: { id: string }) => t.id)).toEqual([thread.id]);
  expect(mine.body.unread.mine).toEqual({ threads: 1, messages: 1 });
  expect((await c.get(`${ctx.ws}/inbox?assigneeId=me`)).body.data).toEqual([]);
  expect((await c.get(`${ctx.ws}/inbox?search=billing`)).body.data.map((t: { id: string }) => t.id)).toEqual([
    thread.id,
  ]);
  expect((await c.get(`${ctx.ws}/inbox?search=nothing-like-this`)).body.data).toEqual([]);
  expect((await c.get(`${ctx.ws}/inbox?status=closed&channel=sms`)).body.data).toEqual([]);
  expect((await c.get(`${ctx.ws}/inbox?status=bogus`)).status).toBe(400);

  // Snooze: needs a time; reopens on a new message, and by itself when the time comes.
  expect((await c.patch(`${ctx.ws}/inbox/${thread.id}`, { status: "snoozed" })).status).toBe(400);
  const later = new Date(Date.now() + 3_600_000).toISOString();
  expect(
    (await c.patch(`${ctx.ws}/inbox/${thread.id}`, { status: "snoozed", snoozedUntil: later })).body,
  ).toMatchObject({
    status: "snoozed",
  });
  expect((await c.patch(`${ctx.ws}/inbox/${thread.id}`, { snoozedUntil: null })).status).toBe(400);
  await inboundSms(phone, "SMa4", "hello again");
  expect((await c.get(`${ctx.ws}/inbox/${thread.id}`)).body).toMatchObject({
    status: "open",
    snoozedUntil: null,
  });
  const soon = new Date(Date.now() + 300).toISOString();
  await c.patch(`${ctx.ws}/inbox/${thread.id}`, { status: "snoozed", snoozedUntil: soon, tags: ["vip"] });
  await waitFor(
    async () => (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body.status === "open",
    10_000,
    "the snoozed thread to wake",
  );

  // Re-assigned by hand: the new assignee hears of it; a stranger cannot be assigned.
  expect((await c.patch(`${ctx.ws}/inbox/${thread.id}`, { assigneeId: "user-x" })).status).toBe(400);
  const handed = await agent.client.patch(`${ctx.ws}/inbox/${thread.id}`, { assigneeId: ctx.owner.id });
  expect(handed.body).toMatchObject({ assigneeId: ctx.owner.id, tags: ["vip"] });
  const ownerNotes = (await c.get(`${ctx.ws}/notifications`)).body.data;
  expect(
    ownerNotes.some((n: { type: string; data: { threadId: string } }) => n.type === "inbox.assigned"),
  ).toBe(true);

  // Closed: the next message opens a new thread, assigned by the rule.
  await c.patch(`${ctx.ws}/inbox/${thread.id}`, { status: "closed" });
  await inboundSms(phone, "SMa5", "new topic");
  const threads = await threadOf(contactId, "sms");
  expect(threads.map((t: { status: string }) => t.status)).toEqual(["open", "closed"]);
  expect(threads[0].assigneeId).toBe(agent.id);
  // Reopening the old one while the new one is open would make two: refused.
  expect((await c.patch(`${ctx.ws}/inbox/${thread.id}`, { status: "open" })).status).toBe(409);
  // A STOP is the channel command's, not the inbox's.
  await inboundSms(phone, "SMa6", "STOP");
  expect(
    (await c.get(`${ctx.ws}/inbox/${threads[0].id}`)).body.messages.some(
      (m: { body: string }) => m.body === "STOP",
    ),
  ).toBe(false);
  await c.delete(`${ctx.ws}/inbox/assignment-rules/${rule.body.id}`);
  await c.delete(`${ctx.ws}/inbox/auto-replies/${auto.body.id}`);
});

test("members start conversations; another workspace's thread is not found", async () => {
  const c = ctx.owner.client;
  const contactId = await newContact(c, ctx.ws, { email: "start@example.com", phone: "+14155550122" });
  const created = await c.post(`${ctx.ws}/inbox`, {
    contactId,
    channel: "email",
    subject: "Your order",
    body: "Hello, your order shipped.",
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    channel: "email",
    status: "pending",
    subject: "Your order",
    contactId,
  });
  const mail = fake.received.filter((r) => r.path.startsWith("/mailgun")).at(-1)!;
  expect(new URLSearchParams(mail.body).get("subject")).toBe("Re: Your order");
  // The contact's open conversation on the channel is reused.
  const again = await c.post(`${ctx.ws}/inbox`, { contactId, channel: "email", body: "And the invoice." });
  expect(again.body.id).toBe(created.body.id);
  const pastEnd = await c.get(`${ctx.ws}/inbox?page=99&limit=1&channel=email`);
  expect(pastEnd.body.data).toEqual([]);
  expect(pastEnd.body.pagination).toMatchObject({ page: 99, limit: 1, total: 1 });
  expect((await c.post(`${ctx.ws}/inbox`, { contactId: "nope", channel: "email", body: "x" })).status).toBe(
    404,
  );
  expect((await c.post(`${ctx.ws}/inbox`, { contactId, channel: "push", body: "x" })).status).toBe(400);

  const other = await ownerWithWorkspace(app.baseUrl);
  expect((await other.owner.client.get(`${other.ws}/inbox/${created.body.id}`)).status).toBe(404);
  expect(
    (await other.owner.client.patch(`${other.ws}/inbox/${created.body.id}`, { tags: ["x"] })).status,
  ).toBe(404);
  expect((await other.owner.client.get(`${other.ws}/inbox`)).body.data).toEqual([]);
});

test("inbound email (emailapi2 route): a reply to a campaign message threads with it; replies carry In-Reply-To; a mail answering ours joins", async () => {
  const c = ctx.owner.client;
  const email = "reader@example.com";
  const contactId = await newContact(c, ctx.ws, { email });
  const news = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "News", html: "<p>News</p>" },
    providerId: mailgunId,
  });
  const sent = await waitFor(
    async () => {
      const m = (await c.get(`${ctx.ws}/messages/${news.body.id}`)).body;
      return m.status === "sent" ? m : undefined;
    },
    10_000,
    "the campaign mail",
  );
  const mail = {
    sender: email,
    recipient: "support@mg.acme.test",
    subject: "Re: News",
    "body-plain": "Tell me more\n\n> News",
    "stripped-text": "Tell me more",
    "Message-Id": "<in-1@mail.example.com>",
    "In-Reply-To": `<${sent.providerMessageId}>`,
    References: `<${sent.providerMessageId}>`,
  };
  expect((await inboundMail(mail, { key: "wrong" })).status).toBe(401);
  expect((await inboundMail(mail)).status).toBe(200);
  const [thread] = await threadOf(contactId, "email");
  expect(thread).toMatchObject({ subject: "Re: News", originMessageId: news.body.id, status: "open" });
  const events = await c.get(`${ctx.ws}/events?contactId=${contactId}&type=email.message_received`);
  expect(events.body[0].metadata).toMatchObject({
    threadId: thread.id,
    subject: "Re: News",
    text: "Tell me more",
  });

  const reply = await c.post(`${ctx.ws}/inbox/${thread.id}`, { body: "Here is more." });
  expect(reply.body.status).toBe("sent");
  const out = new URLSearchParams(fake.received.filter((r) => r.path.startsWith("/mailgun")).at(-1)!.body);
  expect(out.get("subject")).toBe("Re: News");
  expect(out.get("h:In-Reply-To")).toBe("<in-1@mail.example.com>");
  expect(out.get("h:References")).toBe(`<${sent.providerMessageId}> <in-1@mail.example.com>`);

  // A colleague of the contact answers our reply from another address (multipart, as routes post it): same thread.
  const colleague = {
    ...mail,
    sender: "colleague@example.com",
    "stripped-text": "Me too",
    "Message-Id": "<in-2@mail.example.com>",
    "In-Reply-To": `<${reply.body.providerMessageId}>`,
    References: `<in-1@mail.example.com> <${reply.body.providerMessageId}>`,
  };
  expect((await inboundMail(colleague, { multipart: true })).status).toBe(200);
  const detail = (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(detail.messages.map((m: { body: string }) => m.body)).toEqual([
    "Tell me more",
    "Here is more.",
    "Me too",
  ]);
  expect(detail.status).toBe("open");
});

/** A Mailgun route's multipart forward of a mail with files (`attachment-1`, ...), signed with `key`. */
function mailWithFiles(
  fields: Record<string, string>,
  files: Array<[string, Buffer, string]>,
  key = "mg-signing",
) {
  const form = new FormData();
  for (const [name, value] of Object.entries({ ...fields, ...mailgunSignature(key) }))
    form.append(name, value);
  files.forEach(([fileName, bytes, type], i) =>
    form.append(`attachment-${i + 1}`, new Blob([bytes], { type }), fileName),
  );
  return multipartBody(form).then((body) =>
    filedAfter(
      app,
      app.http().request("POST", `/api/providers/email/webhooks?providerId=${mailgunId}`, body),
    ),
  );
}

/** A file's bytes as the client's session fetches them (the test client reads answers as text). */
const download = (client: HttpClient, urlPath: string) =>
  fetch(`${app.baseUrl}${urlPath}`, {
    headers: {
      cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      ...(client.bearer ? { authorization: `Bearer ${client.bearer}` } : {}),
    },
  });

/** The files of a workspace in the local asset storage (attachments are kept there). */
const storedFiles = (ws: string) => readdir(path.join(dataDir, "assets", ws)).catch(() => [] as string[]);
const incomingFiles = () => readdir(path.join(dataDir, "assets", ".incoming")).catch(() => [] as string[]);

test("inbound email with attachments: kept and downloadable from the thread, an oversized one listed as dropped, a bad signature refused", async () => {
  const c = ctx.owner.client;
  const email = "files@example.com";
  const contactId = await newContact(c, ctx.ws, { email });
  const png = Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"), Buffer.alloc(64, 1)]);
  const notes = Buffer.from("Order 42: two chairs\n");
  const huge = Buffer.alloc(10 * 1024 * 1024 + 1, 7);
  const mail = {
    sender: email,
    recipient: "support@mg.acme.test",
    subject: "Photos",
    "body-plain": "Here are the photos",
    "Message-Id": "<files-1@mail.example.com>",
    "attachment-count": "3",
  };
  const files: Array<[string, Buffer, string]> = [
    ["chair.png", png, "image/png"],
    ["notes.txt", notes, "text/plain"],
    ["video.mov", huge, "video/quicktime"],
  ];
  const before = await storedFiles(ctx.workspaceId);

  // The stream route checks its query as the validator checks any route's params.
  const unstorable = await app.http().request("POST", "/api/providers/email/webhooks?providerId=%00", {
    raw: "{}",
    headers: { "content-type": "application/json" },
  });
  expect(unstorable.status).toBe(400);

  const forged = await mailWithFiles(mail, files, "wrong");
  expect(forged.status).toBe(401);
  expect(await storedFiles(ctx.workspaceId)).toEqual(before);

  expect((await mailWithFiles(mail, files)).status).toBe(200);
  const [thread] = await threadOf(contactId, "email");
  const detail = (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(detail.messages).toHaveLength(1);
  const [message] = detail.messages;
  expect(message.body).toBe("Here are the photos");
  expect(message.attachments).toEqual([
    expect.objectContaining({
      fileName: "chair.png",
      contentType: "image/png",
      size: png.length,
      dropped: null,
    }),
    expect.objectContaining({
      fileName: "notes.txt",
      contentType: "text/plain; charset=utf-8",
      size: notes.length,
      dropped: null,
    }),
    {
      id: null,
      fileName: "video.mov",
      contentType: "video/quicktime",
      size: huge.length,
      url: null,
      dropped: "too_large",
    },
  ]);
  for (const [i, bytes] of [png, notes].entries()) {
    const url = new URL(message.attachments[i].url);
    expect(url.origin).toBe(PUBLIC_URL);
    const file = await download(c, url.pathname);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer())).toEqual(bytes);
    expect(file.headers.get("content-type")).toBe(message.attachments[i].contentType);
    expect(file.headers.get("x-content-type-options")).toBe("nosniff");
  }
  expect(await storedFiles(ctx.workspaceId)).toHaveLength(before.length + 2);

  // The provider retries the same mail: filed once, its files not kept twice.
  expect((await mailWithFiles(mail, files)).status).toBe(200);
  expect((await c.get(`${ctx.ws}/inbox/${thread.id}`)).body.messages).toHaveLength(1);
  expect(await storedFiles(ctx.workspaceId)).toHaveLength(before.length + 2);
  expect(await incomingFiles()).toEqual([]);

  // Another workspace's member cannot fetch them.
  const other = await ownerWithWorkspace(app.baseUrl);
  const path404 = new URL(message.attachments[0].url).pathname.replace(ctx.ws, other.ws);
  expect((await other.owner.client.request("GET", path404)).status).toBe(404);
});

test("an inbound mail with more than 10 files keeps the first 10 and lists the rest as dropped", async () => {
  const c = ctx.owner.client;
  const email = "many-files@example.com";
  const contactId = await newContact(c, ctx.ws, { email });
  const files = Array.from({ length: 12 }, (_, i): [string, Buffer, string] => [
    `page-${i + 1}.txt`,
    Buffer.from(`page ${i + 1}`),
    "text/plain",
  ]);
  const mail = {
    sender: email,
    recipient: "support@mg.acme.test",
    subject: "Pages",
    "body-plain": "All pages",
  };
  expect((await mailWithFiles({ ...mail, "Message-Id": "<many-1@mail.example.com>" }, files)).status).toBe(
    200,
  );
  const [thread] = await threadOf(contactId, "email");
  const [message] = (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body.messages;
  expect(message.attachments.map((a: { dropped: string | null }) => a.dropped)).toEqual([
    ...Array(10).fill(null),
    "too_many",
    "too_many",
  ]);
  expect(message.attachments[11]).toMatchObject({ fileName: "page-12.txt", size: 7, url: null });
});

/** Rows waiting in the attachment removal queue (migration 0101) for a workspace. */
async function queuedRemovals(workspaceId: string): Promise<number> {
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query(
      "SELECT count(*)::int AS n FROM inbox_attachment_removals WHERE workspace_id = $1",
      [workspaceId],
    );
    return rows[0].n;
  } finally {
    await db.end();
  }
}

/** The queue's rows of this workspace as a transaction sees them. */
const queuedIn = async (db: Client) =>
  (
    await db.query(
      "SELECT storage, storage_key FROM inbox_attachment_removals WHERE workspace_id = $1 ORDER BY id",
      [ctx.workspaceId],
    )
  ).rows;

/** A contact with a mail whose files are kept: the contact's id and the files' names in storage. */
async function contactWithStoredFiles(email: string, tag: string) {
  const contactId = await newContact(ctx.owner.client, ctx.ws, { email });
  const mail = {
    sender: email,
    recipient: "support@mg.acme.test",
    subject: "Invoices",
    "body-plain": "Attached",
    "Message-Id": `<${tag}@mail.example.com>`,
  };
  const files: Array<[string, Buffer, string]> = [
    ["invoice-1.txt", Buffer.from(`invoice 1 ${tag}`), "text/plain"],
    ["invoice-2.txt", Buffer.from(`invoice 2 ${tag}`), "text/plain"],
  ];
  expect((await mailWithFiles(mail, files)).status).toBe(200);
  const [thread] = await threadOf(contactId, "email");
  const [message] = (await ctx.owner.client.get(`${ctx.ws}/inbox/${thread.id}`)).body.messages;
  const fileNames: string[] = message.attachments.map((a: { id: string }) => a.id);
  expect(await storedFiles(ctx.workspaceId)).toEqual(expect.arrayContaining(fileNames));
  return { contactId, fileNames };
}

/** The files gone from the assets' storage and the workspace's queue drained, after a pass of the step. */
async function expectFilesSwept(fileNames: string[]) {
  await app.broker.call("inbox.sweepAttachmentRemovals", {}, { meta: { principal: SYSTEM } });
  await waitFor(
    async () =>
      !(await storedFiles(ctx.workspaceId)).some((f) => fileNames.includes(f)) &&
      (await queuedRemovals(ctx.workspaceId)) === 0,
    10_000,
    "the deleted message's files to be removed and the queue drained",
  );
}

test("a mail filed again keeps its files; the provider's second delivery of it has its own files removed", async () => {
  const email = "twice-files@example.com";
  const { contactId, fileNames } = await contactWithStoredFiles(email, "twice-files-1");
  const stored = async () => (await storedFiles(ctx.workspaceId)).filter((f) => !fileNames.includes(f));
  const others = await stored();
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    // The filing tried again (its answer lost after the inbox stored the mail): the same row, the same files.
    const again = await db.query(
      `UPDATE inbound_queue SET filed_at = NULL, claimed_until = NULL, due_at = now()
        WHERE workspace_id = $1 AND inbound->>'from' = $2 RETURNING id`,
      [ctx.workspaceId, email],
    );
    expect(again.rowCount).toBe(1);
    await inboundFiled(app);
    expect(await storedFiles(ctx.workspaceId)).toEqual(expect.arrayContaining(fileNames));
    // The provider delivers it again once its queue row has gone: files of its own, removed as a duplicate's.
    await db.query(`DELETE FROM inbound_queue WHERE id = $1`, [again.rows[0].id]);
  } finally {
    await db.end();
  }
  const mail = {
    sender: email,
    recipient: "support@mg.acme.test",
    subject: "Invoices",
    "body-plain": "Attached",
    "Message-Id": "<twice-files-1@mail.example.com>",
  };
  expect((await mailWithFiles(mail, [["invoice-1.txt", Buffer.from("again"), "text/plain"]])).status).toBe(
    200,
  );
  expect(await stored()).toEqual(others);
  expect(await storedFiles(ctx.workspaceId)).toEqual(expect.arrayContaining(fileNames));
  const [thread] = await threadOf(contactId, "email");
  const { messages } = (await ctx.owner.client.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(messages).toHaveLength(1);
  const file = await download(ctx.owner.client, new URL(messages[0].attachments[0].url).pathname);
  expect(file.status).toBe(200);
});

test("deleting a contact removes its mails' attachment files from storage; a message without files queues none", async () => {
  const c = ctx.owner.client;
  const { contactId, fileNames } = await contactWithStoredFiles("deleted-files@example.com", "del-files-1");
  const plainContact = await newContact(c, ctx.ws, { email: "no-files@example.com" });
  const plain = {
    sender: "no-files@example.com",
    recipient: "support@mg.acme.test",
    subject: "No files",
    "body-plain": "Nothing attached",
    "Message-Id": "<del-files-2@mail.example.com>",
  };
  expect((await inboundMail(plain)).status).toBe(200);
  const [plainThread] = await threadOf(plainContact, "email");

  // The trigger, seen inside the deleting transaction (the step's timer cannot take rows not yet committed).
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    await db.query("BEGIN");
    await db.query("DELETE FROM inbox_messages WHERE thread_id = $1", [plainThread.id]);
    expect(await queuedIn(db)).toEqual([]);
    await db.query("DELETE FROM contacts WHERE id = $1", [contactId]);
    expect(await queuedIn(db)).toEqual(
      fileNames.map((f) => ({ storage: "local", storage_key: `${ctx.workspaceId}/${f}` })),
    );
  } finally {
    await db.query("ROLLBACK");
    await db.end();
  }

  // A file already gone from storage does not hold up the others' removal.
  await rm(path.join(dataDir, "assets", ctx.workspaceId, fileNames[0]));
  expect((await c.request("DELETE", `${ctx.ws}/contacts/${contactId}`)).status).toBe(200);
  await expectFilesSwept(fileNames);
});

test("a GDPR erasure removes the contact's mails' attachment files from storage", async () => {
  const { contactId, fileNames } = await contactWithStoredFiles("erased-files@example.com", "gdpr-files-1");
  expect(
    (await ctx.owner.client.request("DELETE", `${ctx.ws}/contacts/${contactId}/gdpr/delete`)).status,
  ).toBe(200);
  await expectFilesSwept(fileNames);
});

test("a reply to a mail sent through emailapi1 threads with it by the Message-ID we gave the mail, not SendGrid's id", async () => {
  const c = ctx.owner.client;
  const sendgrid = await c.post(`${ctx.ws}/providers/email`, {
    type: "emailapi1",
    isDefault: false,
    config: { apiKey: "SG.inbox-key", baseUrl: fake.url("/sendgrid") },
  });
  expect(sendgrid.status).toBe(201);
  const email = "sg-reader@example.com";
  const contactId = await newContact(c, ctx.ws, { email });
  const news = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Offer", html: "<p>Offer</p>" },
    providerId: sendgrid.body.id,
  });
  const sent = await waitFor(
    async () => {
      const m = (await c.get(`${ctx.ws}/messages/${news.body.id}`)).body;
      return m.status === "sent" ? m : undefined;
    },
    10_000,
    "the SendGrid mail",
  );
  expect(sent.providerMessageId).toMatch(/^sg-\d+$/);
  const request = fake.received.filter((r) => r.path.startsWith("/sendgrid")).at(-1)!;
  const messageId = JSON.parse(request.body).headers["Message-ID"];
  expect(messageId).toBe(`<${news.body.id}@acme.test>`);

  const answer = {
    sender: email,
    recipient: "support@mg.acme.test",
    subject: "Re: Offer",
    "body-plain": "Count me in",
    "stripped-text": "Count me in",
    "Message-Id": "<sg-in-1@mail.example.com>",
    "In-Reply-To": messageId,
    References: messageId,
  };
  expect((await inboundMail(answer)).status).toBe(200);
  const [thread] = await threadOf(contactId, "email");
  expect(thread).toMatchObject({ subject: "Re: Offer", originMessageId: news.body.id });
});

test("capacity: past maxOpen threads wait and go out oldest first as room frees; an unanswered thread moves on", async () => {
  const c = ctx.owner.client;
  // The agent starts with no conversation open (earlier tests left some).
  for (const t of (await c.get(`${ctx.ws}/inbox?assigneeId=${agent.id}`)).body.data)
    if (t.status !== "closed") await c.patch(`${ctx.ws}/inbox/${t.id}`, { status: "closed" });
  const rule = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Capped",
    type: "round_robin",
    priority: 5,
    config: { memberIds: [agent.id], maxOpen: 1 },
  });
  const phones = ["+14155550201", "+14155550202", "+14155550203"];
  for (const [i, phone] of phones.entries()) await inboundSms(phone, `SMcap${i}`, "hello");
  const contactOf = async (phone: string) =>
    (await c.get(`${ctx.ws}/contacts?search=${encodeURIComponent(phone)}`)).body.data[0].id;
  const threads = await Promise.all(phones.map(async (p) => (await threadOf(await contactOf(p), "sms"))[0]));
  expect(threads.map((t) => t.assigneeId)).toEqual([agent.id, null, null]);
  // The agent closes the first: the oldest waiting one is theirs next, then the last.
  await agent.client.patch(`${ctx.ws}/inbox/${threads[0].id}`, { status: "closed" });
  await waitFor(
    async () => (await c.get(`${ctx.ws}/inbox/${threads[1].id}`)).body.assigneeId === agent.id,
    10_000,
    "the oldest waiting thread to be handed out",
  );
  expect((await c.get(`${ctx.ws}/inbox/${threads[2].id}`)).body.assigneeId).toBeNull();
  await agent.client.patch(`${ctx.ws}/inbox/${threads[1].id}`, { status: "closed" });
  await waitFor(
    async () => (await c.get(`${ctx.ws}/inbox/${threads[2].id}`)).body.assigneeId === agent.id,
    10_000,
    "the next waiting thread",
  );
  await c.delete(`${ctx.ws}/inbox/assignment-rules/${rule.body.id}`);

  // Unanswered for `reassignAfterMinutes` since it was assigned: the next member in turn takes it, once.
  const moving = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Moving",
    type: "round_robin",
    config: { memberIds: [agent.id, ctx.owner.id], reassignAfterMinutes: 5 },
  });
  await inboundSms("+14155550204", "SMmove", "anyone?");
  const [waiting] = await threadOf(await contactOf("+14155550204"), "sms");
  expect(waiting.assigneeId).toBe(agent.id);
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    await db.query(
      `UPDATE inbox_threads SET awaiting_since = now() - interval '6 minutes', assigned_at = now() - interval '6 minutes'
        WHERE id = $1`,
      [waiting.id],
    );
  } finally {
    await db.end();
  }
  await waitFor(
    async () => (await c.get(`${ctx.ws}/inbox/${waiting.id}`)).body.assigneeId === ctx.owner.id,
    10_000,
    "the unanswered thread to move on",
  );
  const moved = (await c.get(`${ctx.ws}/notifications?type=inbox.assigned`)).body.data.filter(
    (n: { data: { threadId: string } }) => n.data.threadId === waiting.id,
  );
  expect(moved).toHaveLength(1);
  // Answered threads stay where they are.
  await c.post(`${ctx.ws}/inbox/${waiting.id}`, { body: "Here." });
  expect((await c.get(`${ctx.ws}/inbox/${waiting.id}`)).body).toMatchObject({
    assigneeId: ctx.owner.id,
    status: "pending",
  });
  await c.delete(`${ctx.ws}/inbox/assignment-rules/${moving.body.id}`);
});

test("merging contacts moves their conversations, leaving one open per channel", async () => {
  const c = ctx.owner.client;
  await inboundSms("+14155550301", "SMm1", "from the first number");
  await inboundSms("+14155550302", "SMm2", "from the second number");
  const idOf = async (phone: string) =>
    (await c.get(`${ctx.ws}/contacts?search=${encodeURIComponent(phone)}`)).body.data[0].id;
  const [primary, duplicate] = [await idOf("+14155550301"), await idOf("+14155550302")];
  const [kept] = await threadOf(primary, "sms");
  const [moved] = await threadOf(duplicate, "sms");
  const merged = await c.post(`${ctx.ws}/contacts/merge`, { primaryId: primary, duplicateIds: [duplicate] });
  expect(merged.status).toBe(200);
  const threads = await threadOf(primary, "sms");
  expect(threads.map((t: { id: string; status: string }) => [t.id, t.status]).sort()).toEqual(
    [
      [kept.id, "open"],
      [moved.id, "closed"],
    ].sort(),
  );
  expect((await c.get(`${ctx.ws}/inbox/${moved.id}`)).body.messages[0].body).toBe("from the second number");
});

test("smsapi2 inbound: a keyword condition wins by priority over a round robin; auto-replies fire outside their hours (a holiday), not within", async () => {
  const c = ctx.owner.client;
  const zone = "Pacific/Auckland";
  await c.patch(ctx.ws, { settings: { timezone: zone } });
  const vonage = await c.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi2",
    config: {
      apiKey: "vk",
      apiSecret: "vs",
      signatureSecret: "vonage-sig",
      from: "Acme",
      baseUrl: fake.url("/vonage"),
    },
  });
  const rules = [
    await c.post(`${ctx.ws}/inbox/assignment-rules`, {
      name: "Refunds",
      type: "condition",
      priority: 1,
      config: { channel: "sms", keywords: ["refund"], assigneeId: ctx.owner.id },
    }),
    await c.post(`${ctx.ws}/inbox/assignment-rules`, {
      name: "VIPs",
      type: "condition",
      priority: 0,
      config: {
        assigneeId: ctx.owner.id,
        filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "vip" }] },
      },
    }),
    await c.post(`${ctx.ws}/inbox/assignment-rules`, {
      name: "Rest",
      type: "round_robin",
      priority: 2,
      config: { memberIds: [agent.id] },
    }),
  ];
  const always = { days: [1, 2, 3, 4, 5, 6, 7], start: "00:00", end: "00:00" };
  const today = DateTime.now().setZone(zone).toISODate()!;
  const autos = [
    await c.post(`${ctx.ws}/inbox/auto-replies`, { name: "Open", businessHours: always, body: "never sent" }),
    await c.post(`${ctx.ws}/inbox/auto-replies`, {
      name: "Holiday",
      channel: "sms",
      businessHours: { ...always, holidays: [today] },
      body: "Closed for the holiday.",
    }),
  ];
  const path = `/api/providers/sms/webhooks?providerId=${vonage.body.id}`;
  const inbound = (uuid: string, from: string, text: string) => {
    const body = JSON.stringify({
      message_uuid: uuid,
      from,
      to: "15550002222",
      channel: "sms",
      message_type: "text",
      text,
    });
    return filedAfter(
      app,
      app.http().request("POST", path, {
        raw: body,
        headers: { "content-type": "application/json", authorization: vonageBearer("vonage-sig", body) },
      }),
    );
  };
  expect((await inbound("v-in-1", "14155550401", "I want a REFUND please")).status).toBe(200);
  expect((await inbound("v-in-2", "14155550402", "hello")).status).toBe(200);
  await newContact(c, ctx.ws, { phone: "+14155550403", tags: ["vip"] });
  expect((await inbound("v-in-3", "14155550403", "hello")).status).toBe(200);
  const threadFor = async (phone: string) => {
    const contactId = (await c.get(`${ctx.ws}/contacts?search=${encodeURIComponent(phone)}`)).body.data[0].id;
    return (await threadOf(contactId, "sms"))[0];
  };
  expect((await threadFor("+14155550401")).assigneeId).toBe(ctx.owner.id);
  expect((await threadFor("+14155550402")).assigneeId).toBe(agent.id);
  expect((await threadFor("+14155550403")).assigneeId).toBe(ctx.owner.id);
  const texts = fake.received
    .filter((r) => r.path.startsWith("/vonage"))
    .map((r) => [new URLSearchParams(r.body).get("to"), new URLSearchParams(r.body).get("text")]);
  expect(texts).toEqual([
    ["14155550401", "Closed for the holiday."],
    ["14155550402", "Closed for the holiday."],
    ["14155550403", "Closed for the holiday."],
  ]);
  for (const rule of rules) await c.delete(`${ctx.ws}/inbox/assignment-rules/${rule.body.id}`);
  for (const auto of autos) await c.delete(`${ctx.ws}/inbox/auto-replies/${auto.body.id}`);
});

/** A new workspace of two members, its owner and an agent, for a round robin between them. */
async function twoMemberWorkspace(agentName: string) {
  const own = await ownerWithWorkspace(app.baseUrl);
  const agent = await signUp(app.baseUrl, agentName);
  const c = own.owner.client;
  expect((await c.post(`${own.ws}/members`, { email: agent.email, role: "MEMBER" })).status).toBe(201);
  return { own, c, members: [own.owner.id, agent.id] };
}

test("a round robin under concurrent new threads: each turn given once, maxOpen held", async () => {
  const { own, c, members } = await twoMemberWorkspace("Agent Jones");
  const burst = async (tag: string, n: number) => {
    const contactIds = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        newContact(c, own.ws, { phone: `+1415555${tag}${String(i).padStart(2, "0")}` }),
      ),
    );
    const answers = (await Promise.all(
      contactIds.map((contactId, i) =>
        app.broker.call(
          "inbox.receive",
          {
            channel: "sms",
            contactId,
            providerId: "prov-burst",
            from: "+1",
            to: "+2",
            text: "hi",
            providerMessageId: `${tag}-${i}`,
          },
          { meta: { principal: SYSTEM, workspaceId: own.workspaceId } },
        ),
      ),
    )) as Array<{ threadId: string }>;
    const threads = await Promise.all(
      answers.map(
        async (a) => (await c.get(`${own.ws}/inbox/${a.threadId}`)).body as { assigneeId: string | null },
      ),
    );
    return members
      .map((m) => threads.filter((t) => t.assigneeId === m).length)
      .concat(threads.filter((t) => t.assigneeId === null).length);
  };
  const capped = await c.post(`${own.ws}/inbox/assignment-rules`, {
    name: "Capped",
    type: "round_robin",
    config: { memberIds: members, maxOpen: 3 },
  });
  // Ten at once, room for three each: three each, four wait.
  expect(await burst("06", 10)).toEqual([3, 3, 4]);
  await c.delete(`${own.ws}/inbox/assignment-rules/${capped.body.id}`);
  await c.post(`${own.ws}/inbox/assignment-rules`, {
    name: "Open",
    type: "round_robin",
    config: { memberIds: members },
  });
  // Without a cap every turn is given once: ten threads, five each.
  expect(await burst("07", 10)).toEqual([5, 5, 0]);
});

test("a round robin's turns in batch form: two overlapping batches at once give each thread once and each turn once, maxOpen held", async () => {
  const { own, c, members } = await twoMemberWorkspace("Agent Brown");
  const ws = asWorkspaceId(own.workspaceId);
  // Inactive: the threads stay unassigned until the test takes the turns itself.
  const rule = await c.post(`${own.ws}/inbox/assignment-rules`, {
    name: "Batch",
    type: "round_robin",
    active: false,
    config: { memberIds: members },
  });
  expect(rule.status).toBe(201);
  const newThreads = async (tag: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const contactId = await newContact(c, own.ws, { phone: `+1415556${tag}${String(i).padStart(2, "0")}` });
      const filed = (await app.broker.call(
        "inbox.receive",
        { channel: "sms", contactId, providerId: "prov-turns", from: "+1", to: "+2", text: "hi" },
        { meta: { principal: SYSTEM, workspaceId: own.workspaceId } },
      )) as { threadId: string };
      ids.push(filed.threadId);
    }
    return ids;
  };
  const assigneesOf = async (ids: string[]) =>
    Promise.all(
      ids.map(
        async (id) =>
          ((await c.get(`${own.ws}/inbox/${id}`)).body as { assigneeId: string | null }).assigneeId,
      ),
    );
  const split = (assignees: Array<string | null>) =>
    members
      .map((m) => assignees.filter((a) => a === m).length)
      .concat(assignees.filter((a) => a === null).length);

  const first = await newThreads("10", 12);
  // Two replicas' batches at once (two connections), sharing four threads; the first names one twice.
  const [one, two] = await Promise.all([
    takeTurns(ws, rule.body.id, [...first.slice(0, 8), first[0]], members, null),
    takeTurns(ws, rule.body.id, first.slice(4).reverse(), members, null),
  ]);
  const given = [...one, ...two].map((t) => t.id);
  expect(given.sort()).toEqual([...first].sort());
  expect(split(await assigneesOf(first))).toEqual([6, 6, 0]);

  // Six open each; room for eight: four more go, two wait for the rule (its id kept on them).
  const second = await newThreads("11", 6);
  const [three, four] = await Promise.all([
    takeTurns(ws, rule.body.id, second.slice(0, 4), members, 8),
    takeTurns(ws, rule.body.id, second.slice(2), members, 8),
  ]);
  expect(three.length + four.length).toBe(4);
  expect(split(await assigneesOf([...first, ...second]))).toEqual([8, 8, 2]);
  const waiting = await waitingThreads(ws, rule.body.id, 10);
  expect(waiting).toHaveLength(2);
  expect(second).toEqual(expect.arrayContaining(waiting.map((t) => t.id)));
});

test("messages.sendNowBatch: sends made at once go as one batch, each answered in order, a refused one its own", async () => {
  const c = ctx.owner.client;
  const phones = ["+14155550181", "+14155550182"];
  const [first, second] = await Promise.all(phones.map((phone) => newContact(c, ctx.ws, { phone })));
  const noPhone = await newContact(c, ctx.ws, { email: "no-phone@acme.test" });
  const send = (contactId: string, body: string) => ({
    contactId,
    channel: "sms",
    content: { body },
    transactional: true,
  });
  const answers = await app.broker.call<Array<Record<string, unknown>>, unknown>(
    "messages.sendNowBatch",
    { sends: [send(first, "One"), send(noPhone, "Nowhere"), send(second, "Two")] },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );
  expect(answers).toEqual([
    { message: expect.objectContaining({ status: "sent", providerId: twilioId }) },
    { error: { code: 400, type: "VALIDATION_ERROR", message: expect.stringContaining("sms address") } },
    { message: expect.objectContaining({ status: "sent", providerId: twilioId }) },
  ]);
  expect(phones.map((phone) => smsTo(phone).map((r) => new URLSearchParams(r.body).get("Body")))).toEqual([
    ["One"],
    ["Two"],
  ]);
});
