import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp, type SignedInUser } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver, type Received } from "../webhooks/receiver";

/**
 * A chat round trip through the gateway (issue 31, "Tests that must exist"):
 * chatapp1 connected to a local fake of the Telegram Bot API; an inbound
 * text through the signed webhook makes a thread that a round-robin rule
 * assigns and an auto-reply answers, each once; a member's reply reaches
 * the fake and answers `sent`; the contact's STOP opts it out, is not a
 * thread message, and is answered.
 */

const PUBLIC_URL = "https://cms.example.test";
const TOKEN = "777000:roundtrip-token-wxyz";
const CHAT = "7001";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let agent: SignedInUser;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let providerId: string;
let secretToken: string;
let messageIds = 500;

const methodOf = (req: Received) => /^\/bot([^/]+)\/(\w+)$/.exec(req.path)?.[2];
const ok = (result: unknown) => ({ status: 200, body: JSON.stringify({ ok: true, result }) });

/** The Bot API methods this round trip uses, answered as Telegram does. */
function botApi(req: Received) {
  const body = req.body ? JSON.parse(req.body) : {};
  switch (methodOf(req)) {
    case "getMe":
      return ok({ id: 77, is_bot: true, username: "roundtrip_bot" });
    case "setWebhook":
    case "setMyCommands":
    case "deleteWebhook":
      return ok(true);
    case "getWebhookInfo":
      return ok({ url: "", pending_update_count: 0 });
    case "sendMessage":
      return ok({ message_id: ++messageIds, chat: { id: Number(body.chat_id) }, text: body.text });
    default:
      return { status: 404, body: JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }) };
  }
}

/** The texts the fake was asked to send to the chat, in order. */
const sentTexts = () =>
  fake.received
    .filter((r) => methodOf(r) === "sendMessage" && JSON.parse(r.body).chat_id === CHAT)
    .map((r) => JSON.parse(r.body).text as string);

let updateId = 9000;
function inbound(text: string, secret = secretToken) {
  const id = ++updateId;
  const update = {
    update_id: id,
    message: {
      message_id: id,
      date: Math.floor(Date.now() / 1000),
      chat: { id: Number(CHAT), type: "private", first_name: "Rita", last_name: "Roundtrip" },
      from: { id: Number(CHAT), is_bot: false, first_name: "Rita" },
      text,
    },
  };
  return app.http().request("POST", `/api/providers/chatapp1/webhooks?providerId=${providerId}`, {
    raw: JSON.stringify(update),
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
  });
}

beforeAll(async () => {
  fake = await startReceiver(botApi);
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
    providerMessageId: String(messageIds),
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
