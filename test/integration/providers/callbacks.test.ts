import { filedAfter, postTwilioSms } from "../../helpers/inbound";
import { Client } from "pg";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import {
  mailgunSignature,
  sendgridHeaders,
  sendgridKeys,
  vonageBearer,
} from "../../helpers/provider-signatures";
import { waitFor } from "../../helpers/wait";
import { newContact } from "./fixtures";
import { startReceiver, type Received } from "../../helpers/receiver";

/**
 * `POST /api/providers/{email,sms}/webhooks?providerId=`: each provider's
 * signature (good, bad, missing), delivery, hard and soft bounces,
 * complaints, inbound texts with STOP/START/HELP, a callback that outruns
 * its send, and one that arrives twice.
 */

const PUBLIC_URL = "https://cms.example.test";
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let hooks: Awaited<ReturnType<typeof startReceiver>>;
const sendgrid = sendgridKeys();
let sendgridId: string;
let twilioId: string;
let sgCounter = 0;

/**
 * The fake APIs' usual answers: SendGrid accepts with an X-Message-Id, Twilio with a sid; under
 * /twilio-opted-out Twilio refuses as it does a number that texted STOP to it (error 21610).
 */
const standardFake = (req: Received) => {
  if (req.path.startsWith("/sendgrid"))
    return { status: 202, body: "", headers: { "x-message-id": `sg-${++sgCounter}` } };
  if (req.path.startsWith("/twilio-opted-out"))
    return {
      status: 400,
      body: JSON.stringify({
        code: 21610,
        message: "Attempt to send to unsubscribed recipient",
        more_info: "https://www.twilio.com/docs/errors/21610",
        status: 400,
      }),
    };
  return { status: 201, body: JSON.stringify({ sid: `SM-${fake.received.length}`, num_segments: "1" }) };
};

beforeAll(async () => {
  fake = await startReceiver(standardFake);

  hooks = await startReceiver();
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
      PUBLIC_URL,
      MESSAGE_POLL_MS: "50",
      WEBHOOK_POLL_MS: "100",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  const c = ctx.owner.client;
  await c.patch(ctx.ws, { settings: { sender: { fromEmail: "news@acme.test" } } });
  await c.post(`${ctx.ws}/webhooks`, {
    name: "opt-outs",
    url: hooks.url("/opt-outs"),
    events: ["unsubscribe.email", "unsubscribe.sms"],
  });
  sendgridId = (
    await c.post(`${ctx.ws}/providers/email`, {
      type: "emailapi1",
      config: { apiKey: "SG.key-1", webhookPublicKey: sendgrid.publicKey, baseUrl: fake.url("/sendgrid") },
    })
  ).body.id;
  twilioId = (
    await c.post(`${ctx.ws}/providers/sms`, {
      type: "smsapi1",
      config: {
        accountSid: "AC9",
        authToken: "twilio-auth",
        from: "+15550009999",
        baseUrl: fake.url("/twilio"),
      },
    })
  ).body.id;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
  await hooks?.close();
});

const contact = (body: Record<string, unknown>, smsConsent = false) =>
  newContact(ctx.owner.client, ctx.ws, body, smsConsent);

const message = async (id: string) => (await ctx.owner.client.get(`${ctx.ws}/messages/${id}`)).body;
const settled = (id: string, status: string) =>
  waitFor(
    async () => ((await message(id)).status === status ? message(id) : undefined),
    10_000,
    `message ${status}`,
  );

async function sentEmail(to: string) {
  const contactId = await contact({ email: to });
  const queued = await ctx.owner.client.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Hello", html: "<p>Hello</p>" },
  });
  return { contactId, sent: await settled(queued.body.id, "sent") };
}

function postSendgrid(events: unknown[], providerId = sendgridId, sign = true) {
  const body = JSON.stringify(events);
  return app.http().request("POST", `/api/providers/email/webhooks?providerId=${providerId}`, {
    raw: body,
    headers: {
      "content-type": "application/json",
      ...(sign ? sendgridHeaders(sendgrid.privateKey, body) : {}),
    },
  });
}

function postTwilio(form: Record<string, string>, signWith = "twilio-auth", providerId = twilioId) {
  return filedAfter(
    app,
    postTwilioSms(app, { publicUrl: PUBLIC_URL, providerId, authToken: signWith }, form),
  );
}

test("emailapi1: signatures checked; delivered moves the message; a callback twice applies once", async () => {
  const { sent } = await sentEmail("gia@example.com");
  const delivered = [
    { event: "delivered", sg_message_id: `${sent.providerMessageId}.filter1`, sg_event_id: "ev-d1" },
  ];

  const unsigned = await postSendgrid(delivered, sendgridId, false);
  expect([unsigned.status, unsigned.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
  const body = JSON.stringify(delivered);
  const forged = await app.http().request("POST", `/api/providers/email/webhooks?providerId=${sendgridId}`, {
    raw: body,
    headers: { "content-type": "application/json", ...sendgridHeaders(sendgridKeys().privateKey, body) },
  });
  expect([forged.status, forged.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
  expect((await postSendgrid(delivered, "no-such-provider")).status).toBe(404);
  expect((await postSendgrid(delivered, twilioId)).status).toBe(404);
  expect((await message(sent.id)).status).toBe("sent");

  const ok = await postSendgrid(delivered);
  expect([ok.status, ok.body]).toEqual([200, { received: true }]);
  const again = await postSendgrid(delivered);
  expect(again.status).toBe(200);
  const after = await message(sent.id);
  expect(after).toMatchObject({ status: "delivered", deliveredAt: expect.any(String) });
  expect(after.history.filter((h: { status: string }) => h.status === "delivered")).toHaveLength(1);
});

test("emailapi1: a hard bounce lists the address as do-not-contact (reason bounce) and leaves consent; a soft one only marks the message", async () => {
  const c = ctx.owner.client;
  const hard = await sentEmail("dead@example.com");
  await postSendgrid([
    {
      event: "bounce",
      type: "bounce",
      sg_message_id: hard.sent.providerMessageId,
      sg_event_id: "ev-b1",
      reason: "550 5.1.1 no such user",
    },
  ]);
  expect(await message(hard.sent.id)).toMatchObject({
    status: "bounced",
    reason: "hard_bounce",
    error: "550 5.1.1 no such user",
  });
  const dnc = await c.get(`${ctx.ws}/contacts/dnc?type=email`);
  expect(dnc.body.data).toEqual([expect.objectContaining({ value: "dead@example.com", reason: "bounce" })]);
  expect((await c.get(`${ctx.ws}/contacts/${hard.contactId}/consent`)).body.email?.status).not.toBe(
    "opted_out",
  );
  const retry = await c.post(`${ctx.ws}/messages`, {
    contactId: hard.contactId,
    channel: "email",
    content: { subject: "x", html: "x" },
  });
  expect(retry.body).toMatchObject({ status: "suppressed", reason: "bounced_before" });

  const soft = await sentEmail("full@example.com");
  await postSendgrid([
    {
      event: "bounce",
      type: "blocked",
      sg_message_id: soft.sent.providerMessageId,
      sg_event_id: "ev-b2",
      reason: "452 mailbox full",
    },
  ]);
  expect(await message(soft.sent.id)).toMatchObject({ status: "bounced", reason: "soft_bounce" });
  expect((await c.get(`${ctx.ws}/contacts/dnc?type=email`)).body.data).toHaveLength(1);
});

test("emailapi1: a complaint opts the email out (source complaint) and tells webhooks with the message", async () => {
  const { contactId, sent } = await sentEmail("angry@example.com");
  await postSendgrid([{ event: "spamreport", sg_message_id: sent.providerMessageId, sg_event_id: "ev-c1" }]);
  expect((await message(sent.id)).status).toBe("complained");
  const consent = (await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/consent`)).body;
  expect(consent.email).toMatchObject({ status: "opted_out", source: "complaint" });
  const delivery = await waitFor(
    () => hooks.received.find((r) => JSON.parse(r.body).data?.contactId === contactId),
    10_000,
    "unsubscribe.email webhook",
  );
  expect(JSON.parse(delivery.body)).toMatchObject({
    event: "unsubscribe.email",
    data: { contactId, channel: "email", source: "complaint", messageId: sent.id },
  });
});

test("a callback that outruns its send is kept and applied once the send is recorded", async () => {
  fake.setBehaviour((req) =>
    req.path.startsWith("/sendgrid")
      ? { status: 202, body: "", headers: { "x-message-id": "sg-early" }, afterMs: 1000 }
      : { status: 404 },
  );
  try {
    const contactId = await contact({ email: "early@example.com" });
    const queued = await ctx.owner.client.post(`${ctx.ws}/messages`, {
      contactId,
      channel: "email",
      content: { subject: "Early", html: "<p>Early</p>" },
    });
    await waitFor(
      () => fake.received.find((r) => r.body.includes("early@example.com")),
      10_000,
      "send in flight",
    );
    const early = await postSendgrid([
      { event: "delivered", sg_message_id: "sg-early.f", sg_event_id: "ev-e1" },
    ]);
    expect(early.status).toBe(200);
    expect((await message(queued.body.id)).status).toBe("sending");
    const done = await settled(queued.body.id, "delivered");
    expect(done.history.map((h: { status: string }) => h.status)).toEqual([
      "queued",
      "sending",
      "sent",
      "delivered",
    ]);
  } finally {
    fake.setBehaviour(standardFake);
  }
});

test("emailapi2: Mailgun's signed body; a permanent failure is a hard bounce", async () => {
  const c = ctx.owner.client;
  const mailgun = await c.post(`${ctx.ws}/providers/email`, {
    type: "emailapi2",
    config: {
      apiKey: "mg-key",
      domain: "mg.acme.test",
      webhookSigningKey: "mg-signing",
      baseUrl: fake.url("/mailgun"),
    },
  });
  fake.setBehaviour((req) =>
    req.path.startsWith("/mailgun")
      ? { status: 200, body: '{"id":"<mg-1@mg.acme.test>","message":"Queued"}' }
      : { status: 201, body: JSON.stringify({ sid: `SM-${fake.received.length}`, num_segments: "1" }) },
  );
  const contactId = await contact({ email: "mg@example.com" });
  const queued = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Hi", html: "<p>Hi</p>" },
    providerId: mailgun.body.id,
  });
  const sent = await settled(queued.body.id, "sent");
  const body = (signature: unknown) =>
    JSON.stringify({
      signature,
      "event-data": {
        id: "mg-ev-1",
        event: "failed",
        severity: "permanent",
        message: { headers: { "message-id": sent.providerMessageId } },
        "delivery-status": { description: "Mailbox does not exist" },
      },
    });
  const path = `/api/providers/email/webhooks?providerId=${mailgun.body.id}`;
  const post = (raw: string) =>
    filedAfter(
      app,
      app.http().request("POST", path, { raw, headers: { "content-type": "application/json" } }),
    );
  expect((await post(body(mailgunSignature("wrong")))).status).toBe(401);
  expect((await post(body(undefined))).status).toBe(401);
  expect((await post(body(mailgunSignature("mg-signing")))).status).toBe(200);
  expect(await message(sent.id)).toMatchObject({
    status: "bounced",
    reason: "hard_bounce",
    error: "Mailbox does not exist",
  });
});

test("smsapi1: STOP opts out (sms_stop) and is answered through the same provider; START opts back in; HELP only answers", async () => {
  const c = ctx.owner.client;
  const phone = "+14155550170";
  const contactId = await contact({ phone }, true);
  const replies = () =>
    fake.received.filter((r) => r.path.startsWith("/twilio") && r.body.includes(encodeURIComponent(phone)));

  expect(
    (await postTwilio({ MessageSid: "SMin1", From: phone, To: "+15550009999", Body: "stop " }, "wrong"))
      .status,
  ).toBe(401);
  const stop = await postTwilio({ MessageSid: "SMin1", From: phone, To: "+15550009999", Body: " stop " });
  expect(stop.status).toBe(200);
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms).toMatchObject({
    status: "opted_out",
    source: "sms_stop",
  });
  await waitFor(
    () => hooks.received.find((r) => JSON.parse(r.body).event === "unsubscribe.sms"),
    10_000,
    "unsubscribe.sms",
  );
  const reply = await waitFor(() => replies()[0], 10_000, "STOP reply");
  expect(new URLSearchParams(reply.body).get("Body")).toMatch(/^You are unsubscribed/);
  const received = await c.get(`${ctx.ws}/events?contactId=${contactId}&type=sms.message_received`);
  expect(JSON.stringify(received.body)).toContain('"text":" stop "');

  // The same inbound delivered again changes nothing and answers no second time.
  await postTwilio({ MessageSid: "SMin1", From: phone, To: "+15550009999", Body: " stop " });

  await postTwilio({ MessageSid: "SMin2", From: phone, To: "+15550009999", Body: "START" });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms).toMatchObject({
    status: "opted_in",
    source: "sms_start",
  });
  await postTwilio({ MessageSid: "SMin3", From: phone, To: "+15550009999", Body: "Help" });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms.status).toBe("opted_in");
  await waitFor(() => (replies().length >= 3 ? true : undefined), 10_000, "three replies");
  await new Promise((r) => setTimeout(r, 300));
  expect(replies().map((r) => new URLSearchParams(r.body).get("Body"))).toEqual([
    expect.stringMatching(/^You are unsubscribed/),
    expect.stringMatching(/^You are subscribed again/),
    expect.stringMatching(/^Reply STOP to unsubscribe/),
  ]);

  // A status callback moves the reply it names.
  const latest = (await c.get(`${ctx.ws}/messages?contactId=${contactId}`)).body.data[0];
  await waitFor(async () => ((await message(latest.id)).status === "sent" ? true : undefined), 10_000);
  const sent = await message(latest.id);
  await postTwilio({
    MessageSid: sent.providerMessageId,
    MessageStatus: "delivered",
    To: phone,
    AccountSid: "AC9",
  });
  expect((await message(latest.id)).status).toBe("delivered");

  // A number nobody has yet becomes a contact.
  await postTwilio({ MessageSid: "SMin4", From: "+14155550171", To: "+15550009999", Body: "hello?" });
  const found = await c.get(`${ctx.ws}/contacts?search=4155550171`);
  expect(found.body.data).toHaveLength(1);
});

test("smsapi1 with providerHandlesOptOut: STOP and START are recorded, Twilio's own answer is not doubled", async () => {
  const c = ctx.owner.client;
  const created = await c.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi1",
    name: "answers STOP itself",
    config: {
      accountSid: "AC10",
      authToken: "twilio-auth",
      from: "+15550008888",
      baseUrl: fake.url("/twilio"),
      providerHandlesOptOut: true,
    },
  });
  expect(created.status).toBe(201);
  expect(created.body.config.providerHandlesOptOut).toBe(true);
  const phone = "+14155550290";
  const contactId = await contact({ phone }, true);
  const inbound = (sid: string, body: string) =>
    postTwilio(
      { MessageSid: sid, From: phone, To: "+15550008888", Body: body },
      "twilio-auth",
      created.body.id,
    );

  expect((await inbound("SMown1", "STOP")).status).toBe(200);
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms).toMatchObject({
    status: "opted_out",
    source: "sms_stop",
  });
  expect((await inbound("SMown2", "unstop")).status).toBe(200);
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms).toMatchObject({
    status: "opted_in",
    source: "sms_start",
  });
  // A reply is recorded before the callback answers: none was made.
  expect((await c.get(`${ctx.ws}/messages?contactId=${contactId}`)).body.data).toEqual([]);
});

test("smsapi1: a reply Twilio refuses as opted out (21610) is suppressed, not failed", async () => {
  const c = ctx.owner.client;
  fake.setBehaviour(standardFake);
  const created = await c.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi1",
    name: "opted out at Twilio",
    config: {
      accountSid: "AC11",
      authToken: "twilio-auth",
      from: "+15550007777",
      baseUrl: fake.url("/twilio-opted-out"),
    },
  });
  expect(created.status).toBe(201);
  const phone = "+14155550291";
  const contactId = await contact({ phone }, true);
  const stop = await postTwilio(
    { MessageSid: "SMout1", From: phone, To: "+15550007777", Body: "STOP" },
    "twilio-auth",
    created.body.id,
  );
  expect(stop.status).toBe(200);
  const [reply] = (await c.get(`${ctx.ws}/messages?contactId=${contactId}`)).body.data;
  const settledReply = await waitFor(
    async () => {
      const m = await message(reply.id);
      return m.status !== "queued" && m.status !== "sending" ? m : undefined;
    },
    10_000,
    "the reply settled",
  );
  expect(settledReply).toMatchObject({ status: "suppressed", reason: "unsubscribed" });
  expect(settledReply.error).toContain("21610");
  expect(settledReply.history.map((h: { status: string }) => h.status)).toContain("suppressed");
});

test("smsapi2: Vonage's signed JSON; delivered by client_ref; an inbound 'stop' opts out", async () => {
  const c = ctx.owner.client;
  fake.setBehaviour(() => ({
    status: 200,
    body: '{"message-count":"1","messages":[{"status":"0","message-id":"V-100"}]}',
  }));
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
  const phone = "+14155550180";
  const contactId = await contact({ phone }, true);
  const queued = await c.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "sms",
    content: { body: "Hi" },
    providerId: vonage.body.id,
  });
  const sent = await settled(queued.body.id, "sent");
  const path = `/api/providers/sms/webhooks?providerId=${vonage.body.id}`;
  const post = (payload: unknown, secret = "vonage-sig") => {
    const body = JSON.stringify(payload);
    return filedAfter(
      app,
      app.http().request("POST", path, {
        raw: body,
        headers: { "content-type": "application/json", authorization: vonageBearer(secret, body) },
      }),
    );
  };
  expect(
    (await post({ message_uuid: "V-100", status: "delivered", client_ref: sent.id }, "wrong")).status,
  ).toBe(401);
  expect((await post({ message_uuid: "V-100", status: "delivered", client_ref: sent.id })).status).toBe(200);
  expect((await message(sent.id)).status).toBe("delivered");
  await post({
    message_uuid: "in-1",
    from: phone.slice(1),
    to: "15550002222",
    channel: "sms",
    message_type: "text",
    text: "stop",
  });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms).toMatchObject({
    status: "opted_out",
    source: "sms_stop",
  });
});

test("channel-commands: defaults until replaced; PUT replaces, one keyword per channel", async () => {
  const c = ctx.owner.client;
  const defaults = await c.get(`${ctx.ws}/channel-commands`);
  expect(defaults.body.commands.map((k: { keyword: string }) => k.keyword)).toEqual([
    "STOP",
    "STOPALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "START",
    "UNSTOP",
    "HELP",
  ]);
  const twice = await c.put(`${ctx.ws}/channel-commands`, {
    commands: [
      { keyword: "ALTO", action: "opt_out", channels: ["sms"], reply: "Baja confirmada" },
      { keyword: "alto", action: "help", channels: ["sms"], reply: null },
    ],
  });
  expect([twice.status, twice.body.details[0].field]).toEqual([400, "commands[1].keyword"]);
  const bad = await c.put(`${ctx.ws}/channel-commands`, {
    commands: [{ keyword: "X", action: "nope", channels: ["sms"], reply: null }],
  });
  expect([bad.status, bad.body.details[0].field]).toEqual([400, "commands[0].action"]);
  const put = await c.put(`${ctx.ws}/channel-commands`, {
    commands: [{ keyword: " ALTO ", action: "opt_out", channels: ["sms"], reply: "Baja confirmada" }],
  });
  expect(put.body.commands).toEqual([
    { keyword: "ALTO", action: "opt_out", channels: ["sms"], reply: "Baja confirmada" },
  ]);
  expect((await c.get(`${ctx.ws}/channel-commands`)).body).toEqual(put.body);

  const phone = "+14155550190";
  const contactId = await contact({ phone }, true);
  fake.setBehaviour(() => ({ status: 201, body: '{"sid":"SM-alto","num_segments":"1"}' }));
  await postTwilio({ MessageSid: "SMalto", From: phone, To: "+15550009999", Body: "Alto" });
  expect((await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.sms.status).toBe("opted_out");
  const reply = await waitFor(
    () =>
      fake.received.find((r) => r.path.startsWith("/twilio") && r.body.includes(encodeURIComponent(phone))),
    10_000,
  );
  expect(new URLSearchParams(reply.body).get("Body")).toBe("Baja confirmada");
});

test("provider opens and clicks count only where our own tracking of them is off", async () => {
  const c = ctx.owner.client;
  fake.setBehaviour(standardFake);
  const { contactId, sent } = await sentEmail("reader@example.com");
  await postSendgrid([{ event: "open", sg_message_id: sent.providerMessageId, sg_event_id: "ev-o1" }]);
  expect(await message(sent.id)).toMatchObject({ status: "sent", opens: 0 });

  await c.patch(ctx.ws, { settings: { tracking: { opens: false, clicks: false } } });
  try {
    await postSendgrid([
      { event: "open", sg_message_id: sent.providerMessageId, sg_event_id: "ev-o2" },
      {
        event: "click",
        sg_message_id: sent.providerMessageId,
        sg_event_id: "ev-k1",
        url: "https://example.com/a",
      },
    ]);
    expect(await message(sent.id)).toMatchObject({ status: "clicked", opens: 1, clicks: 1 });
    const recorded = await c.get(`${ctx.ws}/events?contactId=${contactId}`);
    const types = JSON.stringify(recorded.body);
    expect(types).toContain("message.open");
    expect(types).toContain('"url":"https://example.com/a"');
  } finally {
    await c.patch(ctx.ws, { settings: { tracking: null } });
  }
});

test("callbacks kept a week without their send, and event ids a month old, are swept", async () => {
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO provider_callbacks_pending (workspace_id, provider_id, provider_message_id, event, created_at)
       VALUES ($1, $2, 'gone', '{}', now() - interval '8 days'), ($1, $2, 'recent', '{}', now())`,
      [ctx.workspaceId, sendgridId],
    );
    await db.query(
      `INSERT INTO provider_event_log (provider_id, event_id, created_at) VALUES ($1, 'old-event', now() - interval '31 days')`,
      [sendgridId],
    );
    expect(await app.broker.call("messages.sweepProviderCallbacks")).toBe(1);
    expect(await app.broker.call("providers.sweepEventLog")).toBe(1);
    const left = await db.query(
      `SELECT provider_message_id FROM provider_callbacks_pending WHERE provider_id = $1`,
      [sendgridId],
    );
    expect(left.rows.map((r) => r.provider_message_id)).toContain("recent");
    expect(left.rows.map((r) => r.provider_message_id)).not.toContain("gone");
  } finally {
    await db.end();
  }
});
