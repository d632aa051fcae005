import type { AddressInfo } from "node:net";
import { connect, type NatsConnection } from "nats";
import { SMTPServer } from "smtp-server";
import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { dropStreams } from "../../helpers/nats";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";
import { newContact } from "./fixtures";

/**
 * Provider secrets stay in the process that uses them: the messages service
 * and the providers service on separate brokers over NATS, every packet of
 * the namespace read by a raw subscription to `>`, and a send through each
 * provider type to a local fake that checks the credential. No payload may
 * hold a secret, plain or base64.
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL)
  console.log("secrets-wire.test.ts: skipped: NATS_URL is not set (the suite needs a real NATS)");

const SMTP_USER = "wire-relay";
const SECRETS = {
  smtpPassword: "smtp-pass-W1re-7781",
  sendgridKey: "SG.wire-key-4419-abcdef",
  mailgunKey: "key-wire-mailgun-5520",
  mailgunSigningKey: "mailgun-signing-wire-8812",
  twilioToken: "twilio-wire-token-6631",
  vonageSecret: "vonage-wire-secret-9902",
  vonageSignatureSecret: "vonage-signature-wire-3390",
  botToken: "424242:telegram-wire-token-7310",
  chatapp2Token: "EAAG-chatapp2-wire-token-4471",
  chatapp2AppSecret: "chatapp2-app-secret-wire-2208",
};

(NATS_URL ? describe : describe.skip)("provider secrets over NATS", () => {
  const run = randomHex(4);
  const namespace = `wire-${run}`;
  let messagesNode: TestApp;
  let providersNode: TestApp;
  let nats: NatsConnection;
  const payloads: string[] = [];
  let api: Awaited<ReturnType<typeof startReceiver>>;
  let smtp: SMTPServer;
  let smtpPort: number;
  const smtpLogins: string[] = [];

  beforeAll(async () => {
    smtp = new SMTPServer({
      allowInsecureAuth: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username !== SMTP_USER || auth.password !== SECRETS.smtpPassword)
          return callback(new Error("Invalid username or password"));
        smtpLogins.push(auth.username);
        callback(null, { user: auth.username });
      },
      onData(stream, _session, callback) {
        stream.on("data", () => undefined);
        stream.on("end", () => callback());
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    api = await startReceiver((req) => {
      if (req.path.startsWith("/sendgrid/"))
        return { status: 202, body: "", headers: { "x-message-id": `sg-${req.at}` } };
      if (req.path.startsWith("/mailgun/")) return { status: 200, body: '{"id":"<wire@mg.acme.test>"}' };
      if (req.path.startsWith("/twilio/"))
        return { status: 201, body: '{"sid":"SMwire","num_segments":"1"}' };
      if (req.path.startsWith("/telegram/")) {
        const method = req.path.split("/").at(-1);
        const result = method === "getMe" ? { id: 1, is_bot: true, username: "wire_bot" } : true;
        return {
          status: 200,
          body: JSON.stringify({ ok: true, result: method === "sendMessage" ? { message_id: 9 } : result }),
        };
      }
      if (req.path.startsWith("/vonage/"))
        return {
          status: 200,
          body: '{"message-count":"1","messages":[{"status":"0","message-id":"V-wire"}]}',
        };
      if (req.path === "/graph/1098765/messages")
        return { status: 200, body: '{"messaging_product":"whatsapp","messages":[{"id":"wamid.wire"}]}' };
      if (req.path === "/graph/1098765") return { status: 200, body: '{"id":"1098765"}' };
      if (req.path.startsWith("/graph/2233445/message_templates"))
        return {
          status: 200,
          body: JSON.stringify({
            data: [
              {
                name: "hello_world",
                language: "en_US",
                status: "APPROVED",
                category: "UTILITY",
                components: [{ type: "BODY", text: "Hello {{1}}" }],
              },
            ],
          }),
        };
      return { status: 404 };
    });

    nats = await connect({ servers: NATS_URL });
    const all = nats.subscribe(">");
    void (async () => {
      for await (const message of all) payloads.push(Buffer.from(message.data).toString("utf8"));
    })();

    const env = { NATS_URL, NAMESPACE: namespace, MESSAGE_POLL_MS: "50" };
    messagesNode = await startApp({
      env,
      services: ["contacts", "templates", "messages"],
      withoutGateway: true,
      broker: { nodeID: `messages-${run}`, transporter: NATS_URL },
    });
    providersNode = await startApp({
      env,
      services: ["api", "auth", "workspaces", "providers"],
      databaseUrl: messagesNode.databaseUrl,
      broker: { nodeID: `providers-${run}`, transporter: NATS_URL },
      waitForServices: ["messages", "contacts"],
    });
  });

  afterAll(async () => {
    await providersNode?.stop();
    await messagesNode?.stop();
    await nats?.close();
    await api?.close();
    await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
    if (NATS_URL) await dropStreams(NATS_URL, namespace);
  });

  test("a send through each provider type puts no secret, plain or base64, in any broker message", async () => {
    expect(messagesNode.broker.getLocalService("providers")).toBeFalsy();
    expect(providersNode.broker.getLocalService("messages")).toBeFalsy();
    const { owner, ws } = await ownerWithWorkspace(providersNode.baseUrl);
    const c = owner.client;
    // The gateway learns the other node's routes when it rebuilds its aliases: wait for them.
    await waitFor(
      async () => ((await c.get(`${ws}/contacts`)).status === 200 ? true : undefined),
      10_000,
      "the messages node's routes at the gateway",
    );
    await c.patch(ws, { settings: { sender: { fromName: "Acme", fromEmail: "news@acme.test" } } });

    const provider = async (channel: "email" | "sms", type: string, config: Record<string, unknown>) => {
      const res = await c.post(`${ws}/providers/${channel}`, { type, config });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const providers = [
      {
        channel: "email" as const,
        id: await provider("email", "smtp", {
          host: "127.0.0.1",
          port: smtpPort,
          secure: false,
          username: SMTP_USER,
          password: SECRETS.smtpPassword,
        }),
      },
      {
        channel: "email" as const,
        id: await provider("email", "emailapi1", {
          apiKey: SECRETS.sendgridKey,
          baseUrl: api.url("/sendgrid"),
        }),
      },
      {
        channel: "email" as const,
        id: await provider("email", "emailapi2", {
          apiKey: SECRETS.mailgunKey,
          webhookSigningKey: SECRETS.mailgunSigningKey,
          domain: "mg.acme.test",
          baseUrl: api.url("/mailgun"),
        }),
      },
      {
        channel: "sms" as const,
        id: await provider("sms", "smsapi1", {
          accountSid: "ACwire",
          authToken: SECRETS.twilioToken,
          from: "+15550001111",
          baseUrl: api.url("/twilio"),
        }),
      },
      {
        channel: "sms" as const,
        id: await provider("sms", "smsapi2", {
          apiKey: "vonage-wire",
          apiSecret: SECRETS.vonageSecret,
          signatureSecret: SECRETS.vonageSignatureSecret,
          from: "+15550002222",
          baseUrl: api.url("/vonage"),
        }),
      },
    ];
    const contactId = await newContact(
      c,
      ws,
      { email: "wire@example.com", phone: "+14155550199", attributes: { chatapp1ChatId: "777" } },
      true,
    );

    for (const { channel, id: providerId } of providers) {
      const content = channel === "email" ? { subject: "Hi", html: "<p>Hi</p>" } : { body: "Hi" };
      const queued = await c.post(`${ws}/messages`, { channel, contactId, providerId, content });
      expect(queued.status).toBe(202);
      const done = await waitFor(
        async () => {
          const m = (await c.get(`${ws}/messages/${queued.body.id}`)).body;
          return m.status === "queued" || m.status === "sending" ? undefined : m;
        },
        15_000,
        `message through ${providerId} done`,
      );
      expect(done).toMatchObject({ status: "sent", providerId });
    }

    // chatapp1: connected on the providers node; its send from the messages node; an inbound STOP through both.
    const bot = await c.post(`${ws}/providers/chatapp1`, {
      config: { botToken: SECRETS.botToken, baseUrl: api.url("/telegram") },
    });
    expect(bot.status).toBe(201);
    const chat = await c.post(`${ws}/messages`, { channel: "chatapp1", contactId, content: { text: "Hi" } });
    await waitFor(
      async () => ((await c.get(`${ws}/messages/${chat.body.id}`)).body.status === "sent" ? true : undefined),
      15_000,
      "chatapp1 send",
    );
    const webhookSecret = JSON.parse(api.received.find((r) => r.path.endsWith("/setWebhook"))!.body)
      .secret_token as string;
    const update = JSON.stringify({
      update_id: 1,
      message: { message_id: 1, chat: { id: 777, type: "private" }, text: "STOP" },
    });
    const inbound = await providersNode
      .http()
      .request("POST", `/api/providers/chatapp1/webhooks?providerId=${bot.body.id}`, {
        raw: update,
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": webhookSecret },
      });
    expect(inbound.status).toBe(200);
    await waitFor(
      () => (api.received.filter((r) => r.path.endsWith("/sendMessage")).length >= 2 ? true : undefined),
      15_000,
      "the STOP reply",
    );
    expect(api.received.find((r) => r.path.endsWith("/sendMessage"))?.path).toBe(
      `/telegram/bot${SECRETS.botToken}/sendMessage`,
    );

    // chatapp2: connecting and syncing ask the API from the providers node; the send check crosses to it,
    // the send goes from the messages node.
    const chatapp2 = await c.post(`${ws}/providers/chatapp2`, {
      config: {
        phoneNumberId: "1098765",
        businessAccountId: "2233445",
        accessToken: SECRETS.chatapp2Token,
        appSecret: SECRETS.chatapp2AppSecret,
        verifyToken: "wire-verify",
        baseUrl: api.url("/graph"),
      },
    });
    expect(chatapp2.status).toBe(201);
    expect((await c.post(`${ws}/providers/chatapp2/templates/sync`)).body).toEqual({ synced: 1 });
    await c.put(`${ws}/contacts/${contactId}/consent`, { channel: "chatapp2", status: "opted_in" });
    const template = { templateName: "hello_world", language: "en_US", parameters: ["Wire"] };
    const wrong = await c.post(`${ws}/messages`, {
      channel: "chatapp2",
      contactId,
      content: { ...template, parameters: [] },
    });
    expect([wrong.status, wrong.body.details?.[0]?.field]).toEqual([400, "content.parameters"]);
    const chat2 = await c.post(`${ws}/messages`, { channel: "chatapp2", contactId, content: template });
    expect(chat2.status).toBe(202);
    await waitFor(
      async () => (await c.get(`${ws}/messages/${chat2.body.id}`)).body.status === "sent",
      15_000,
      "the chatapp2 message sent",
    );

    // Each provider got its credential: the messages node held every secret.
    expect(smtpLogins).toContain(SMTP_USER);
    const header = (path: string, name: string) =>
      api.received.find((r) => r.path.startsWith(path))?.headers[name];
    expect(header("/sendgrid/", "authorization")).toBe(`Bearer ${SECRETS.sendgridKey}`);
    expect(header("/mailgun/", "authorization")).toBe(
      `Basic ${Buffer.from(`api:${SECRETS.mailgunKey}`).toString("base64")}`,
    );
    const twilioAuth = `Basic ${Buffer.from(`ACwire:${SECRETS.twilioToken}`).toString("base64")}`;
    expect(header("/twilio/", "authorization")).toBe(twilioAuth);
    expect(api.received.find((r) => r.path.startsWith("/vonage/"))?.body).toContain(
      `api_secret=${SECRETS.vonageSecret}`,
    );
    expect(header("/graph/1098765/messages", "authorization")).toBe(`Bearer ${SECRETS.chatapp2Token}`);

    // The broker carried the sends (the hops are real), and not one secret.
    expect(payloads.some((p) => p.includes("messages.create") || p.includes("providers.reportHealth"))).toBe(
      true,
    );
    const forbidden = Object.values(SECRETS).flatMap((secret) => [
      secret,
      Buffer.from(secret).toString("base64"),
    ]);
    forbidden.push(twilioAuth.slice("Basic ".length), webhookSecret);
    for (const secret of forbidden)
      expect({ secret, leaks: payloads.filter((p) => p.includes(secret)).length }).toEqual({
        secret,
        leaks: 0,
      });
  });
});
