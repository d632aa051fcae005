import type { AddressInfo } from "node:net";
import { SYSTEM } from "../../../lib/access";
import { SMTPServer, type SMTPServerAddress } from "smtp-server";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { newContact } from "./fixtures";
import { startReceiver, type Received } from "../../helpers/receiver";

/**
 * The send path through each real client: SMTP to a real `smtp-server`, and
 * the SendGrid, Mailgun, Twilio and Vonage wires to a local fake of their
 * APIs. Each test asserts the exact request and how the answer maps to the
 * message (accepted, retried, failed with the provider's words).
 */

interface Mail {
  from: string;
  to: string[];
  raw: string;
}

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let api: Awaited<ReturnType<typeof startReceiver>>;
let smtp: SMTPServer;
let smtpPort: number;
const mails: Mail[] = [];
const PUBLIC_URL = "https://cms.example.test";
/** Recipients the SMTP server refuses, with the reply code, once each. */
const refuseOnce = new Map<string, number>();

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      const code = refuseOnce.get(address.address);
      if (!code) return callback();
      refuseOnce.delete(address.address);
      callback(
        Object.assign(new Error(code >= 500 ? "5.1.1 No such user" : "4.7.1 Try again later"), {
          responseCode: code,
        }),
      );
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  api = await startReceiver();
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "templates", "messages", "providers"],
    // One send loop: with two, their claims may split one enqueue's rows (SKIP LOCKED), and the batch test needs
    // its three recipients in one claim.
    env: { MESSAGE_POLL_MS: "50", MESSAGE_RETRY_DELAYS_MS: "100,100,100", MESSAGE_WORKERS: "1", PUBLIC_URL },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  await ctx.owner.client.patch(ctx.ws, {
    settings: { sender: { fromName: "Acme", fromEmail: "news@acme.test", replyTo: "help@acme.test" } },
  });
});

afterAll(async () => {
  await app?.stop();
  await api?.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

async function provider(channel: "email" | "sms", body: Record<string, unknown>): Promise<string> {
  const res = await ctx.owner.client.post(`${ctx.ws}/providers/${channel}`, body);
  expect(res.status).toBe(201);
  return res.body.id;
}

const contact = (body: Record<string, unknown>, smsConsent = false) =>
  newContact(ctx.owner.client, ctx.ws, body, smsConsent);

/** Queue a send and wait until it leaves `queued`/`sending`; answers the message. */
async function send(body: Record<string, unknown>) {
  const queued = await ctx.owner.client.post(`${ctx.ws}/messages`, body);
  expect(queued.status).toBe(202);
  return waitFor(
    async () => {
      const m = (await ctx.owner.client.get(`${ctx.ws}/messages/${queued.body.id}`)).body;
      return m.status === "queued" || m.status === "sending" ? undefined : m;
    },
    10_000,
    `message ${queued.body.id} done`,
  );
}

const EMAIL = {
  channel: "email",
  content: {
    subject: "Hi {{ contact.firstName }}",
    html: '<p>Hi {{ contact.firstName }} <a href="https://example.com/offer">offer</a></p>',
  },
};
const requestsTo = (path: string) => api.received.filter((r: Received) => r.path === path);

test("smtp: through the pool to a real SMTP server, with sender, reply-to, List-Unsubscribe and our Message-ID", async () => {
  const providerId = await provider("email", {
    type: "smtp",
    config: { host: "127.0.0.1", port: smtpPort, secure: false, maxConnections: 2, maxMessages: 50 },
  });
  const contactId = await contact({ email: "ana@example.com", firstName: "Ana" });
  const sent = await send({ ...EMAIL, contactId, providerId });
  expect(sent).toMatchObject({
    status: "sent",
    providerType: "smtp",
    providerId,
    providerMessageId: `${sent.id}@acme.test`,
  });
  const mail = mails.find((m) => m.raw.includes(`<${sent.id}@acme.test>`));
  expect(mail).toMatchObject({ from: "news@acme.test", to: ["ana@example.com"] });
  const raw = mail!.raw.replace(/\r\n[ \t]+/g, " ");
  expect(raw).toMatch(/^From: Acme <news@acme\.test>$/m);
  expect(raw).toMatch(/^Reply-To: help@acme\.test$/m);
  expect(raw).toMatch(/^Subject: Hi Ana$/m);
  expect(raw).toMatch(/^List-Unsubscribe: <https:\/\/cms\.example\.test\/api\/unsubscribe\?token=[^>]+>$/m);
  expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
  expect(raw).toContain("text/html");
  expect(raw).toContain("text/plain");

  // A 4xx reply is retried; a 5xx fails the message with the server's words.
  refuseOnce.set("later@example.com", 451);
  const retried = await send({ ...EMAIL, to: "later@example.com", providerId });
  expect(retried).toMatchObject({ status: "sent" });
  expect(
    (await ctx.owner.client.get(`${ctx.ws}/messages/${retried.id}`)).body.history.map(
      (h: { status: string }) => h.status,
    ),
  ).toEqual(["queued", "sending", "sending", "sent"]); // two attempts
  refuseOnce.set("nobody@example.com", 550);
  const refused = await send({ ...EMAIL, to: "nobody@example.com", providerId });
  expect(refused.status).toBe("failed");
  expect(refused.error).toMatch(/^smtp 550: .*No such user/);
});

test("emailapi1 (SendGrid v3): the exact request; 202 and X-Message-Id accepted; 429 retried; 400 fails once with SendGrid's words", async () => {
  api.setBehaviour((req) =>
    req.path === "/sendgrid/v3/mail/send"
      ? { status: 202, body: "", headers: { "x-message-id": `sg-${api.received.length}` } }
      : { status: 404 },
  );
  const providerId = await provider("email", {
    type: "emailapi1",
    config: { apiKey: "SG.secret-api-key", baseUrl: api.url("/sendgrid") },
  });
  const contactId = await contact({ email: "ben@example.com", firstName: "Ben" });
  const sent = await send({ ...EMAIL, contactId, providerId });
  expect(sent).toMatchObject({
    status: "sent",
    providerType: "emailapi1",
    providerMessageId: expect.stringMatching(/^sg-\d+$/),
  });
  const [request] = requestsTo("/sendgrid/v3/mail/send");
  expect(request.headers.authorization).toBe("Bearer SG.secret-api-key");
  expect(request.headers["content-type"]).toBe("application/json");
  const body = JSON.parse(request.body);
  expect(body).toMatchObject({
    personalizations: [{ to: [{ email: "ben@example.com" }], custom_args: { messageId: sent.id } }],
    from: { email: "news@acme.test", name: "Acme" },
    reply_to: { email: "help@acme.test" },
    subject: "Hi Ben",
    headers: {
      "List-Unsubscribe": expect.stringMatching(/^<http.*unsubscribe\?token=/),
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
      // Ours, so a reply's In-Reply-To names the message (SendGrid's X-Message-Id is not the mail's Message-ID).
      "Message-ID": `<${sent.id}@acme.test>`,
    },
  });
  expect(body.content.map((c: { type: string }) => c.type)).toEqual(["text/plain", "text/html"]);
  expect(body.content[1].value).toContain("Hi Ben");
  expect(body.content[1].value).toContain("/api/messages/"); // links tracked, pixel added

  let calls = 0;
  api.setBehaviour(() =>
    ++calls === 1
      ? { status: 429, body: '{"errors":[{"message":"too many"}]}' }
      : { status: 202, body: "", headers: { "x-message-id": "sg-after" } },
  );
  const retried = await send({ ...EMAIL, to: "retry@example.com", providerId });
  expect(retried).toMatchObject({ status: "sent", providerMessageId: "sg-after" });
  expect(calls).toBe(2);

  calls = 0;
  api.setBehaviour(() => {
    calls += 1;
    return {
      status: 400,
      body: '{"errors":[{"message":"The from address does not match a verified Sender Identity","field":"from"}]}',
    };
  });
  const failed = await send({ ...EMAIL, to: "never@example.com", providerId });
  expect(failed.status).toBe("failed");
  expect(failed.error).toBe("emailapi1 400: The from address does not match a verified Sender Identity");
  expect(calls).toBe(1);
  expect(JSON.stringify(failed)).not.toContain("SG.secret-api-key");
});

test("emailapi2 (Mailgun): form-encoded with basic auth, headers as h:, our id as v:messageId", async () => {
  api.setBehaviour(() => ({
    status: 200,
    body: '{"id":"<20261125.1@mg.acme.test>","message":"Queued. Thank you."}',
  }));
  const providerId = await provider("email", {
    type: "emailapi2",
    config: { apiKey: "key-mailgun-1", domain: "mg.acme.test", baseUrl: api.url("/mailgun") },
  });
  const contactId = await contact({ email: "cai@example.com", firstName: "Cai" });
  const sent = await send({ ...EMAIL, contactId, providerId });
  expect(sent).toMatchObject({
    status: "sent",
    providerType: "emailapi2",
    providerMessageId: "20261125.1@mg.acme.test",
  });
  const [request] = requestsTo("/mailgun/v3/mg.acme.test/messages");
  expect(request.headers.authorization).toBe(`Basic ${Buffer.from("api:key-mailgun-1").toString("base64")}`);
  expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded");
  const form = new URLSearchParams(request.body);
  expect(form.get("from")).toBe('"Acme" <news@acme.test>');
  expect(form.get("to")).toBe("cai@example.com");
  expect(form.get("subject")).toBe("Hi Cai");
  expect(form.get("html")).toContain("Hi Cai");
  expect(form.get("text")).toContain("Hi Cai");
  expect(form.get("h:Reply-To")).toBe("help@acme.test");
  expect(form.get("h:List-Unsubscribe")).toMatch(/^<http.*unsubscribe\?token=/);
  expect(form.get("v:messageId")).toBe(sent.id);
});

test("smsapi1 (Twilio): form-encoded, basic auth, our id as the idempotency token, segments recorded; 400 keeps Twilio's code", async () => {
  api.setBehaviour(() => ({ status: 201, body: '{"sid":"SM0123","num_segments":"2","status":"queued"}' }));
  const providerId = await provider("sms", {
    type: "smsapi1",
    config: {
      accountSid: "AC42",
      authToken: "twilio-token",
      from: "+15550001111",
      baseUrl: api.url("/twilio"),
    },
  });
  const contactId = await contact({ phone: "+14155550100", firstName: "Dee" }, true);
  const body = `Hi {{ contact.firstName }}, ${"a long message ".repeat(12)}`;
  const sent = await send({ channel: "sms", contactId, content: { body }, providerId });
  expect(sent).toMatchObject({
    status: "sent",
    providerType: "smsapi1",
    providerMessageId: "SM0123",
    segments: 2,
  });
  const [request] = requestsTo("/twilio/2010-04-01/Accounts/AC42/Messages.json");
  expect(request.headers.authorization).toBe(`Basic ${Buffer.from("AC42:twilio-token").toString("base64")}`);
  expect(request.headers["i-twilio-idempotency-token"]).toBe(sent.id);
  const form = new URLSearchParams(request.body);
  expect(Object.fromEntries(form)).toEqual({
    To: "+14155550100",
    From: "+15550001111",
    Body: `Hi Dee, ${"a long message ".repeat(12)}`,
    StatusCallback: `${PUBLIC_URL}/api/providers/sms/webhooks?providerId=${providerId}`,
  });

  api.setBehaviour(() => ({
    status: 400,
    body: '{"code":21211,"message":"The \'To\' number is not a valid phone number.","status":400}',
  }));
  const other = await contact({ phone: "+14155550101" }, true);
  const failed = await send({ channel: "sms", contactId: other, content: { body: "x" }, providerId });
  expect(failed).toMatchObject({
    status: "failed",
    error: "smsapi1 400: 21211 The 'To' number is not a valid phone number.",
  });
});

test("smsapi2 (Vonage): credentials in the form, unicode for non-GSM text, one part per segment; throttling retried", async () => {
  let calls = 0;
  api.setBehaviour(() =>
    ++calls === 1
      ? {
          status: 200,
          body: '{"message-count":"1","messages":[{"status":"1","error-text":"Throughput Rate Exceeded"}]}',
        }
      : {
          status: 200,
          body: '{"message-count":"2","messages":[{"status":"0","message-id":"V-1"},{"status":"0","message-id":"V-2"}]}',
        },
  );
  const providerId = await provider("sms", {
    type: "smsapi2",
    config: { apiKey: "vk", apiSecret: "vonage-secret", from: "+15550002222", baseUrl: api.url("/vonage") },
  });
  const contactId = await contact({ phone: "+14155550102" }, true);
  const text = `Привет! ${"Ж".repeat(80)}`;
  const sent = await send({ channel: "sms", contactId, content: { body: text }, providerId });
  expect(sent).toMatchObject({
    status: "sent",
    providerType: "smsapi2",
    providerMessageId: "V-1",
    segments: 2,
  });
  expect(calls).toBe(2);
  const request = requestsTo("/vonage/sms/json").at(-1)!;
  expect(Object.fromEntries(new URLSearchParams(request.body))).toEqual({
    api_key: "vk",
    api_secret: "vonage-secret",
    from: "15550002222",
    to: "14155550102",
    text,
    "client-ref": sent.id,
    type: "unicode",
  });
});

test("a named provider must be the workspace's, of the channel; an email with no sender fails saying where to set one", async () => {
  const c = ctx.owner.client;
  const contactId = await contact({ email: "eve@example.com", phone: "+14155550103" }, true);
  const unknown = await c.post(`${ctx.ws}/messages`, { ...EMAIL, contactId, providerId: "nope" });
  expect([unknown.status, unknown.body.details?.[0]?.field]).toEqual([404, "providerId"]);
  const emailProvider = (await c.get(`${ctx.ws}/providers/email`)).body[0].id;
  const wrongChannel = await c.post(`${ctx.ws}/messages`, {
    channel: "sms",
    contactId,
    content: { body: "x" },
    providerId: emailProvider,
  });
  expect(wrongChannel.status).toBe(404);

  const bare = await ownerWithWorkspace(app.baseUrl);
  api.setBehaviour(() => ({ status: 202, body: "" }));
  await bare.owner.client.post(`${bare.ws}/providers/email`, {
    type: "emailapi1",
    config: { apiKey: "k-123", baseUrl: api.url("/bare") },
  });
  const person = await bare.owner.client.post(`${bare.ws}/contacts`, { email: "fay@example.com" });
  const queued = await bare.owner.client.post(`${bare.ws}/messages`, { ...EMAIL, contactId: person.body.id });
  const failed = await waitFor(async () => {
    const m = (await bare.owner.client.get(`${bare.ws}/messages/${queued.body.id}`)).body;
    return m.status === "failed" ? m : undefined;
  }, 10_000);
  expect(failed.error).toBe(
    "No sender address: set the template's fromEmail or the workspace's settings.sender.fromEmail",
  );
  expect(requestsTo("/bare/v3/mail/send")).toHaveLength(0);
});

test("send-test goes through the workspace's default email provider", async () => {
  const c = ctx.owner.client;
  const defaultProvider = (await c.get(`${ctx.ws}/providers/email`)).body[0];
  expect(defaultProvider.type).toBe("smtp");
  const t = await c.post(`${ctx.ws}/templates`, { name: "Test me", ...EMAIL });
  const res = await c.post(`${ctx.ws}/templates/${t.body.id}/send-test`, { to: ["qa@example.com"] });
  expect(res.status).toBe(200);
  expect(res.body.results).toEqual([{ to: "qa@example.com", status: "sent", error: null }]);
  const mail = mails.find((m) => m.to.includes("qa@example.com"));
  expect(mail?.raw).toMatch(/^Subject: \[TEST\] Hi /m);
});

test("emailapi1 batches: one template to many contacts is one request of personalizations; each keeps its row, status and provider id", async () => {
  const c = ctx.owner.client;
  api.setBehaviour((req) =>
    req.path.startsWith("/batch")
      ? { status: 202, body: "", headers: { "x-message-id": "sg-batch" } }
      : { status: 404 },
  );
  const providerId = await provider("email", {
    type: "emailapi1",
    config: { apiKey: "SG.batch-key", baseUrl: api.url("/batch") },
  });
  const t = await c.post(`${ctx.ws}/templates`, {
    name: "Weekly",
    channel: "email",
    content: {
      subject: "News for {{ contact.firstName }}",
      html: '<p>Hi {{ contact.firstName }}</p><a href="https://example.com/n?c={{ contact.id }}">Read</a><a href="{{ unsubscribeUrl }}">Leave</a>',
    },
  });
  const names = ["Ivy", "Jon", "Kim"];
  const contactIds = [];
  for (const name of names)
    contactIds.push(await contact({ email: `${name.toLowerCase()}@example.com`, firstName: name }));
  const queued = (await app.broker.call(
    "messages.enqueue",
    { channel: "email", templateId: t.body.id, contactIds, providerId },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  )) as { queued: number; messageIds: string[] };
  expect(queued.queued).toBe(3);
  const messages = await waitFor(async () => {
    const all = await Promise.all(
      queued.messageIds.map(async (id) => (await c.get(`${ctx.ws}/messages/${id}`)).body),
    );
    return all.every((m) => m.status === "sent") ? all : undefined;
  }, 10_000);

  const requests = requestsTo("/batch/v3/mail/send");
  expect(requests).toHaveLength(1);
  const body = JSON.parse(requests[0].body);
  expect(body.personalizations).toHaveLength(3);
  expect(new Set(messages.map((m) => m.providerMessageId))).toEqual(
    new Set(["sg-batch.0", "sg-batch.1", "sg-batch.2"]),
  );
  const [text, html] = body.content as Array<{ type: string; value: string }>;
  expect([text.type, html.type]).toEqual(["text/plain", "text/html"]);
  for (const p of body.personalizations as Array<Record<string, any>>) {
    const message = messages.find((m) => m.id === p.custom_args.messageId)!;
    const fill = (value: string) =>
      Object.entries(p.substitutions as Record<string, string>).reduce(
        (out, [key, hole]) => out.split(key).join(hole),
        value,
      );
    expect(p.to).toEqual([{ email: message.to }]);
    expect(p.subject).toBe(message.content.subject);
    expect(fill(html.value)).toBe(message.content.html);
    expect(fill(text.value)).toBe(message.content.text);
    expect(p.headers["List-Unsubscribe"]).toMatch(/unsubscribe\?token=/);
    expect(p.headers["Message-ID"]).toBe(`<${message.id}@${body.from.email.split("@")[1]}>`);
  }
  expect(html.value).not.toContain("Ivy");
});

test("emailapi2 batches: one request to many addresses with recipient-variables; each keeps its row, status, provider id and v:messageId", async () => {
  const c = ctx.owner.client;
  api.setBehaviour((req) =>
    req.path.startsWith("/mg-batch")
      ? { status: 200, body: '{"id":"<batch.1@mg.acme.test>","message":"Queued. Thank you."}' }
      : { status: 404 },
  );
  const providerId = await provider("email", {
    type: "emailapi2",
    config: { apiKey: "key-batch", domain: "mg.acme.test", baseUrl: api.url("/mg-batch") },
  });
  const template = async (html: string) =>
    (
      await c.post(`${ctx.ws}/templates`, {
        name: `Digest ${html.length}`,
        channel: "email",
        content: { subject: "Digest for {{ contact.firstName }}", html },
      })
    ).body.id as string;
  const enqueue = async (templateId: string, contactIds: string[]) => {
    const queued = (await app.broker.call(
      "messages.enqueue",
      { channel: "email", templateId, contactIds, providerId },
      { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
    )) as { messageIds: string[] };
    return waitFor(async () => {
      const all = await Promise.all(
        queued.messageIds.map(async (id) => (await c.get(`${ctx.ws}/messages/${id}`)).body),
      );
      return all.every((m) => m.status === "sent") ? all : undefined;
    }, 10_000);
  };
  const contactIds = [];
  for (const name of ["Lea", "Max", "Noa"])
    contactIds.push(await contact({ email: `${name.toLowerCase()}@mg.example.com`, firstName: name }));

  const messages = await enqueue(
    await template(
      '<p>Hi {{ contact.firstName }}</p><a href="https://example.com/d?c={{ contact.id }}">Read</a>',
    ),
    contactIds,
  );
  const requests = requestsTo("/mg-batch/v3/mg.acme.test/messages");
  expect(requests).toHaveLength(1);
  const form = new URLSearchParams(requests[0].body);
  expect(form.getAll("to").sort()).toEqual([
    "lea@mg.example.com",
    "max@mg.example.com",
    "noa@mg.example.com",
  ]);
  expect(form.get("from")).toBe('"Acme" <news@acme.test>');
  expect(form.get("h:Reply-To")).toBe("help@acme.test");
  expect(form.get("subject")).toBe("%recipient.subject%");
  expect(form.get("v:messageId")).toBe("%recipient.v:messageId%");
  expect(form.get("h:List-Unsubscribe")).toBe("%recipient.h:List-Unsubscribe%");
  expect(form.get("html")).not.toContain("Lea");
  const variables = JSON.parse(form.get("recipient-variables")!) as Record<string, Record<string, string>>;
  // What Mailgun does with each address: fill every %recipient.key% from its entry.
  const fill = (value: string, entry: Record<string, string>) =>
    value.replace(/%recipient\.([^%]+)%/g, (_, key: string) => entry[key]);
  for (const message of messages) {
    const entry = variables[message.to];
    expect(fill(form.get("v:messageId")!, entry)).toBe(message.id);
    expect(fill(form.get("subject")!, entry)).toBe(message.content.subject);
    expect(fill(form.get("html")!, entry)).toBe(message.content.html);
    expect(fill(form.get("text")!, entry)).toBe(message.content.text);
    expect(fill(form.get("h:List-Unsubscribe")!, entry)).toMatch(/^<http.*unsubscribe\?token=/);
  }
  expect(new Set(messages.map((m) => m.providerMessageId))).toEqual(
    new Set(["batch.1@mg.acme.test.0", "batch.1@mg.acme.test.1", "batch.1@mg.acme.test.2"]),
  );

  // Content that already holds a %recipient. would be filled by Mailgun: those go one by one.
  const literal = await enqueue(
    await template("<p>Hi {{ contact.firstName }}, write %recipient.name% to reply</p>"),
    contactIds.slice(0, 2),
  );
  const singles = requestsTo("/mg-batch/v3/mg.acme.test/messages").slice(1);
  expect(singles).toHaveLength(2);
  for (const request of singles) {
    const single = new URLSearchParams(request.body);
    expect(single.get("recipient-variables")).toBeNull();
    expect(single.get("html")).toContain("%recipient.name%");
    expect(literal.map((m) => m.id)).toContain(single.get("v:messageId"));
  }
});

test("attachments: a file in content.attachments reaches SMTP, SendGrid and Mailgun as an attachment", async () => {
  const csv = 't,value\n2026-03-01T00:00:00.000Z,2\n"a, ""b""",3\n';
  const file = {
    filename: "report.csv",
    contentType: "text/csv",
    content: Buffer.from(csv).toString("base64"),
  };
  const content = { subject: "Your report", text: "Attached.", attachments: [file] };

  const smtpId = await provider("email", { type: "smtp", config: { host: "127.0.0.1", port: smtpPort } });
  const bySmtp = await send({ channel: "email", to: "files@example.com", content, providerId: smtpId });
  expect(bySmtp.status).toBe("sent");
  const mail = mails.find((m) => m.raw.includes(`<${bySmtp.id}@acme.test>`))!;
  const raw = mail.raw.replace(/\r\n[ \t]+/g, " ");
  expect(raw).toMatch(/^Content-Type: text\/csv; name=report\.csv$/m);
  expect(raw).toMatch(/^Content-Disposition: attachment; filename=report\.csv$/m);
  const encoded = raw
    .split(/^Content-Disposition: attachment; filename=report\.csv\r?\n\r?\n/m)[1]
    .split(/\r?\n--/)[0];
  expect(Buffer.from(encoded.replace(/\s+/g, ""), "base64").toString("utf8")).toBe(csv);

  api.setBehaviour((req) =>
    req.path.startsWith("/sendgrid")
      ? { status: 202, body: "", headers: { "x-message-id": "sg-file" } }
      : { status: 200, body: '{"id":"<file.1@mg.acme.test>","message":"Queued."}' },
  );
  const sendgridId = await provider("email", {
    type: "emailapi1",
    config: { apiKey: "SG.files", baseUrl: api.url("/sendgrid-files") },
  });
  expect(
    (await send({ channel: "email", to: "files@example.com", content, providerId: sendgridId })).status,
  ).toBe("sent");
  const [sendgrid] = requestsTo("/sendgrid-files/v3/mail/send");
  expect(JSON.parse(sendgrid.body).attachments).toEqual([
    { content: file.content, filename: "report.csv", type: "text/csv", disposition: "attachment" },
  ]);

  const mailgunId = await provider("email", {
    type: "emailapi2",
    config: { apiKey: "key-files", domain: "mg.acme.test", baseUrl: api.url("/mailgun-files") },
  });
  const byMailgun = await send({ channel: "email", to: "files@example.com", content, providerId: mailgunId });
  expect(byMailgun).toMatchObject({ status: "sent", providerMessageId: "file.1@mg.acme.test" });
  const [mailgun] = requestsTo("/mailgun-files/v3/mg.acme.test/messages");
  expect(mailgun.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
  const form = await new Response(mailgun.body, {
    headers: { "content-type": String(mailgun.headers["content-type"]) },
  }).formData();
  expect(form.get("to")).toBe("files@example.com");
  expect(form.get("v:messageId")).toBe(byMailgun.id);
  const attached = form.get("attachment") as File;
  expect([attached.name, attached.type, await attached.text()]).toEqual(["report.csv", "text/csv", csv]);
});

test("a template with attachments is sent one mail per contact, each with its files, never batched", async () => {
  const c = ctx.owner.client;
  api.setBehaviour((req) =>
    req.path.startsWith("/files-batch")
      ? { status: 202, body: "", headers: { "x-message-id": `sg-f${api.received.length}` } }
      : { status: 404 },
  );
  const providerId = await provider("email", {
    type: "emailapi1",
    config: { apiKey: "SG.files-batch", baseUrl: api.url("/files-batch") },
  });
  const file = {
    filename: "terms.txt",
    contentType: "text/plain",
    content: Buffer.from("Terms").toString("base64"),
  };
  const t = await c.post(`${ctx.ws}/templates`, {
    name: "With terms",
    channel: "email",
    content: { subject: "Terms for {{ contact.firstName }}", html: "<p>Hi</p>", attachments: [file] },
  });
  expect(t.status).toBe(201);
  const contactIds = [
    await contact({ email: "lea@example.com", firstName: "Lea" }),
    await contact({ email: "max@example.com", firstName: "Max" }),
  ];
  const queued = (await app.broker.call(
    "messages.enqueue",
    { channel: "email", templateId: t.body.id, contactIds, providerId },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  )) as { queued: number; messageIds: string[] };
  await waitFor(async () => {
    const all = await Promise.all(
      queued.messageIds.map(async (id) => (await c.get(`${ctx.ws}/messages/${id}`)).body),
    );
    return all.every((m) => m.status === "sent");
  }, 10_000);
  const bodies = requestsTo("/files-batch/v3/mail/send").map((r: Received) => JSON.parse(r.body));
  expect(
    bodies.map((b) => b.personalizations.map((p: { to: Array<{ email: string }> }) => p.to[0].email)).sort(),
  ).toEqual([["lea@example.com"], ["max@example.com"]]);
  for (const body of bodies)
    expect(body.attachments).toEqual([
      { content: file.content, filename: "terms.txt", type: "text/plain", disposition: "attachment" },
    ]);
});
