import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp, type SignedInUser } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver, type Received } from "../webhooks/receiver";

/**
 * The chat round trip of the inbox through the gateway, against a fake Bot
 * API on 127.0.0.1: an inbound chatapp1 update makes a thread, the
 * round-robin rule assigns it once and the auto-reply answers once, both
 * through `sendMessage` to the chat (a chat channel's answer goes through
 * its one provider, never one named by the inbound message); a member's
 * reply reaches the chat; STOP opts the contact out and files no message.
 */

const TOKEN = "123456:inbox-token-abcd";
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let agent: SignedInUser;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let providerId: string;
let sent = 0;

const methodOf = (req: Received) => /^\/bot[^/]+\/(\w+)$/.exec(req.path)?.[1];
const ok = (result: unknown) => ({ status: 200, body: JSON.stringify({ ok: true, result }) });

function botApi(req: Received) {
  const body = req.body ? JSON.parse(req.body) : {};
  switch (methodOf(req)) {
    case "getMe":
      return ok({ id: 42, is_bot: true, username: "inbox_bot" });
    case "setWebhook":
    case "setMyCommands":
    case "deleteWebhook":
      return ok(true);
    case "getWebhookInfo":
      return ok({ url: "", pending_update_count: 0 });
    case "sendMessage":
      return ok({ message_id: 500 + ++sent, chat: { id: Number(body.chat_id) }, text: body.text });
    default:
      return { status: 404, body: JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }) };
  }
}

const sentTo = (chatId: string) =>
  fake.received
    .filter((r) => methodOf(r) === "sendMessage" && JSON.parse(r.body).chat_id === chatId)
    .map((r) => JSON.parse(r.body).text as string);

const secret = () =>
  JSON.parse(fake.received.filter((r) => methodOf(r) === "setWebhook").at(-1)!.body).secret_token as string;

let updateId = 7000;
const postText = (chatId: number, text: string) =>
  app.http().request("POST", `/api/providers/chatapp1/webhooks?providerId=${providerId}`, {
    raw: JSON.stringify({
      update_id: ++updateId,
      message: {
        message_id: updateId,
        date: 1_700_000_000,
        chat: { id: chatId, type: "private", first_name: "Ada", last_name: "Lovelace" },
        from: { id: chatId, is_bot: false, first_name: "Ada" },
        text,
      },
    }),
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret() },
  });

beforeAll(async () => {
  fake = await startReceiver(botApi);
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "templates",
      "messages",
      "providers",
      "crm",
      "inbox",
    ],
    env: { PUBLIC_URL: "https://cms.example.test", MESSAGE_POLL_MS: "50" },
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
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

test("an inbound chat: one thread, assigned once, one auto-reply through the bot, a member's reply delivered, STOP opts out", async () => {
  const c = ctx.owner.client;
  expect(
    (
      await c.post(`${ctx.ws}/inbox/assignment-rules`, {
        name: "Chat team",
        type: "round_robin",
        priority: 1,
        config: { memberIds: [agent.id] },
      })
    ).status,
  ).toBe(201);
  expect(
    (await c.post(`${ctx.ws}/inbox/auto-replies`, { name: "Ack", channel: "chatapp1", body: "We got it." }))
      .status,
  ).toBe(201);

  expect((await postText(6101, "Where is my order?")).status).toBe(200);
  const [thread] = (await c.get(`${ctx.ws}/inbox?channel=chatapp1`)).body.data;
  expect(thread).toMatchObject({ channel: "chatapp1", status: "open", assigneeId: agent.id });
  expect(sentTo("6101")).toEqual(["We got it."]);

  expect((await postText(6101, "Hello?")).status).toBe(200);
  const list = (await c.get(`${ctx.ws}/inbox?channel=chatapp1`)).body.data;
  expect(list.map((t: { id: string }) => t.id)).toEqual([thread.id]);

  const reply = await agent.client.post(`${ctx.ws}/inbox/${thread.id}`, { body: "It ships today." });
  expect(reply.status).toBe(201);
  expect(reply.body).toMatchObject({ direction: "outbound", status: "sent", error: null });
  expect(sentTo("6101")).toEqual(["We got it.", "It ships today."]);
  const detail = (await agent.client.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  expect(detail.messages.map((m: { direction: string; body: string }) => [m.direction, m.body])).toEqual([
    ["inbound", "Where is my order?"],
    ["outbound", "We got it."],
    ["inbound", "Hello?"],
    ["outbound", "It ships today."],
  ]);

  expect((await postText(6101, "STOP")).status).toBe(200);
  const consent = (await c.get(`${ctx.ws}/contacts/${thread.contact.id}/consent`)).body.chatapp1;
  expect(consent).toMatchObject({ status: "opted_out", source: "chat_command" });
  await waitFor(() => (sentTo("6101").length === 3 ? true : undefined), 10_000, "the STOP confirmation");
  expect((await agent.client.get(`${ctx.ws}/inbox/${thread.id}`)).body.messages).toHaveLength(4);
});
