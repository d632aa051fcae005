import { filedAfter } from "../../helpers/inbound";
import { startApp, type TestApp } from "../../helpers/app";
import { botApi, botCall, botTextUpdate, graphApi } from "../../helpers/chat-fakes";
import { ownerWithWorkspace, signUp, type SignedInUser } from "../../helpers/http";
import { hubSignature } from "../../helpers/provider-signatures";
import { waitFor } from "../../helpers/wait";
import { startReceiver, type Received } from "../../helpers/receiver";

/**
 * A chat round trip through the gateway (issue 31, "Tests that must exist"):
 * chatapp1 connected to a local fake of the Telegram Bot API; an inbound
 * text through the signed webhook makes a thread that a round-robin rule
 * assigns and an auto-reply answers, each once; a member's reply reaches
 * the fake and answers `sent`; the contact's STOP opts it out, is not a
 * thread message, and is answered. A chatapp2 (WhatsApp Cloud API) message
 * through its signed webhook makes a thread whose reply goes out through
 * the fake Graph API.
 */

const PUBLIC_URL = "https://cms.example.test";
const TOKEN = "777000:roundtrip-token-wxyz";
const CHAT = "7001";
const PHONE_ID = "1098765";
const GRAPH_TOKEN = "EAAG-roundtrip-token";
const APP_SECRET = "meta-app-secret";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let agent: SignedInUser;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let providerId: string;
let secretToken: string;

const bot = botApi({ username: () => "roundtrip_bot" });
const graph = graphApi({ accessToken: GRAPH_TOKEN, phoneNumberId: PHONE_ID });
const methodOf = (req: Received) => botCall(req).method;

/** The texts the fake was asked to send to the chat, in order. */
const sentTexts = () =>
  fake.received
    .filter((r) => methodOf(r) === "sendMessage" && JSON.parse(r.body).chat_id === CHAT)
    .map((r) => JSON.parse(r.body).text as string);

let updateId = 9000;
function inbound(text: string, secret = secretToken) {
  const update = botTextUpdate({
    updateId: ++updateId,
    chatId: CHAT,
    text,
    firstName: "Rita",
    lastName: "Roundtrip",
  });
  return filedAfter(
    app,
    app.http().request("POST", `/api/providers/chatapp1/webhooks?providerId=${providerId}`, {
      raw: JSON.stringify(update),
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
    }),
  );
}

beforeAll(async () => {
  fake = await startReceiver((req) => (req.path.startsWith("/v19.0") ? graph.answer(req) : bot.answer(req)));
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
    env: { PUBLIC_URL, MESSAGE_POLL_MS: "50", INBOX_POLL_MS: "100" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  agent = await signUp(app.baseUrl, "Chat Agent");
  const c = ctx.owner.client;
  expect((await c.post(`${ctx.ws}/members`, { email: agent.email, role: "MEMBER" })).status).toBe(201);
  const created = await c.post(`${ctx.ws}/providers/chatapp1`, {
    config: { botToken: TOKEN, baseUrl: fake.url("") },
  });
  expect(created.status).toBe(201);
  providerId = created.body.id;
  const hook = fake.received.filter((r) => methodOf(r) === "setWebhook").at(-1)!;
  secretToken = JSON.parse(hook.body).secret_token;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

test("an inbound chatapp1 text: a thread assigned once, one auto-reply, a member's reply sent, STOP opts out", async () => {
  const c = ctx.owner.client;
  const rule = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
    name: "Chat team",
    type: "round_robin",
    config: { memberIds: [agent.id] },
  });
  expect(rule.status).toBe(201);
  // No business hours: it answers at any time (once per thread and day).
  const auto = await c.post(`${ctx.ws}/inbox/auto-replies`, {
    name: "Chat ack",
    channel: "chatapp1",
    body: "Thanks for writing, a person will answer soon.",
  });
  expect(auto.status).toBe(201);

  // A wrong secret is refused before anything is stored.
  expect((await inbound("Hello?", "x".repeat(48))).status).toBe(401);
  expect(await c.get(`${ctx.ws}/inbox?channel=chatapp1`)).toMatchObject({ body: { data: [] } });

  expect((await inbound("Hello, my order is late")).status).toBe(200);
  const contacts = (await c.get(`${ctx.ws}/contacts?search=Roundtrip`)).body.data;
  expect(contacts).toHaveLength(1);
  expect(contacts[0].attributes).toMatchObject({ chatapp1ChatId: CHAT });
  const contactId = contacts[0].id as string;
  const threads = async () =>
    (await c.get(`${ctx.ws}/inbox?contactId=${contactId}&channel=chatapp1`)).body.data;
  const [thread] = await threads();
  expect(thread).toMatchObject({ channel: "chatapp1", status: "open", assigneeId: agent.id });

  // The auto-reply reached the Bot API.
  await waitFor(() => (sentTexts().length ? true : undefined), 10_000, "the auto-reply");
  expect(sentTexts()).toEqual(["Thanks for writing, a person will answer soon."]);

  // A second message on the same thread: neither re-assigned nor answered again today.
  expect((await inbound("Are you there?")).status).toBe(200);
  expect(await threads()).toHaveLength(1);
  const detail = (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(detail.assigneeId).toBe(agent.id);
  expect(
    detail.messages.map((m: { direction: string; body: string; authorId: string | null }) => [
      m.direction,
      m.body,
      m.authorId,
    ]),
  ).toEqual([
    ["inbound", "Hello, my order is late", null],
    ["outbound", "Thanks for writing, a person will answer soon.", null],
    ["inbound", "Are you there?", null],
  ]);
  expect(sentTexts()).toHaveLength(1);
  const assigned = (await agent.client.get(`${ctx.ws}/notifications?type=inbox.assigned`)).body.data.filter(
    (n: { data: { threadId: string } }) => n.data.threadId === thread.id,
  );
  expect(assigned).toHaveLength(1);

  // The agent answers: delivered through the Bot API to the chat, at once.
  const reply = await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, { body: "It ships tomorrow." });
  expect(reply.status).toBe(201);
  expect(reply.body).toMatchObject({
    direction: "outbound",
    authorId: agent.id,
    status: "sent",
    error: null,
  });
  const request = fake.received.filter((r) => methodOf(r) === "sendMessage").at(-1)!;
  expect(request.path).toBe(`/bot${TOKEN}/sendMessage`);
  expect(JSON.parse(request.body)).toEqual({ chat_id: CHAT, text: "It ships tomorrow." });
  const sent = (await c.get(`${ctx.ws}/messages/${reply.body.messageId}`)).body;
  expect(sent).toMatchObject({
    channel: "chatapp1",
    status: "sent",
    providerId,
    providerMessageId: `${CHAT}:${bot.state.messageIds}`,
  });

  // STOP: opted out by chat command, answered, and not filed in the conversation.
  expect((await inbound("STOP")).status).toBe(200);
  const consent = (await c.get(`${ctx.ws}/contacts/${contactId}/consent`)).body.chatapp1;
  expect(consent).toMatchObject({ status: "opted_out", source: "chat_command" });
  await waitFor(() => (sentTexts().length >= 3 ? true : undefined), 10_000, "the STOP reply");
  expect(sentTexts()[2]).toMatch(/^You are unsubscribed/);
  const after = (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(after.messages.map((m: { body: string }) => m.body)).not.toContain("STOP");
  expect(after.messages).toHaveLength(4);
  expect(await threads()).toHaveLength(1);
  // Still one auto-reply: the STOP did not trigger one.
  expect(sentTexts().filter((t) => t.startsWith("Thanks for writing"))).toHaveLength(1);
});

test("an inbound chatapp2 message through the signed webhook: a thread whose reply goes out through the Graph API", async () => {
  const c = ctx.owner.client;
  const connected = await c.post(`${ctx.ws}/providers/chatapp2`, {
    config: {
      phoneNumberId: PHONE_ID,
      businessAccountId: "2233445",
      accessToken: GRAPH_TOKEN,
      appSecret: APP_SECRET,
      verifyToken: "paste-me-into-meta",
      baseUrl: fake.url("/v19.0"),
    },
  });
  expect(connected.status).toBe(201);
  const body = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "2233445",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550001111", phone_number_id: PHONE_ID },
              contacts: [{ profile: { name: "Wanda" }, wa_id: "447700900777" }],
              messages: [
                {
                  from: "447700900777",
                  id: "wamid.in-roundtrip",
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: "text",
                  text: { body: "Is the shop open on Sunday?" },
                },
              ],
            },
          },
        ],
      },
    ],
  });
  const signature = hubSignature(APP_SECRET, body);
  const posted = await filedAfter(
    app,
    app.http().request("POST", `/api/providers/chatapp2/webhooks?providerId=${connected.body.id}`, {
      raw: body,
      headers: { "content-type": "application/json", "x-hub-signature-256": signature },
    }),
  );
  expect(posted.status).toBe(200);

  const [thread] = (await c.get(`${ctx.ws}/inbox?channel=chatapp2`)).body.data;
  expect(thread).toMatchObject({ channel: "chatapp2", status: "open", contact: { phone: "+447700900777" } });
  const reply = await c.post(`${ctx.ws}/inbox/${thread.id}`, { body: "Yes, from 10 to 4." });
  expect(reply.body).toMatchObject({ status: "sent", error: null });
  const request = fake.received.filter((r) => r.path === `/v19.0/${PHONE_ID}/messages`).at(-1)!;
  expect(JSON.parse(request.body)).toMatchObject({
    messaging_product: "whatsapp",
    to: "447700900777",
    type: "text",
    text: { body: "Yes, from 10 to 4." },
  });
  expect(reply.body.providerMessageId).toBe(`wamid.out${graph.state.sent}`);
});
