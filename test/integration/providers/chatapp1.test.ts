import { filedAfter } from "../../helpers/inbound";
import { Client } from "pg";
import { systemCall } from "../../../lib/system-call";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { botApi, botCall, botTextUpdate } from "../../helpers/chat-fakes";
import { startReceiver } from "../../helpers/receiver";

/**
 * chatapp1 (the Telegram Bot API wire) against a fake Bot API on 127.0.0.1
 * (`/bot<token>/<method>`), checking the exact requests: connecting (getMe,
 * setWebhook with our URL and a generated secret, setMyCommands), the
 * webhook's health and its re-registration, PATCH keeping the secret,
 * DELETE; updates with good and bad secrets, `/start <token>` linking the
 * contact of `chatapp1-link`, inbound texts, STOP and `/stop`, and sends with
 * buttons through the gateway.
 */

const PUBLIC_URL = "https://cms.example.test";
const TOKEN = "123456:good-token-abcd";
const OTHER_TOKEN = "654321:other-token-wxyz";
const BLOCKED_CHAT = "999";
const FLOODED_CHAT = "429";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let providerId: string;
const bot = botApi({
  username: (token) => (token === TOKEN ? "acme_bot" : "other_bot"),
  refusedChats: {
    [BLOCKED_CHAT]: { code: 403, description: "Forbidden: bot was blocked by the user" },
    [FLOODED_CHAT]: {
      code: 429,
      description: "Too Many Requests: retry after 3600",
      parameters: { retry_after: 3600 },
    },
  },
  webhookInfo: {
    pending_update_count: 3,
    last_error_date: 1_700_000_000,
    last_error_message: "Connection timed out",
  },
});
const registered = bot.registered;

const calls = (method: string, token = TOKEN) =>
  fake.received.filter((r) => {
    const call = botCall(r);
    return call.token === token && call.method === method;
  });
const lastBody = (method: string, token = TOKEN) => JSON.parse(calls(method, token).at(-1)!.body);

beforeAll(async () => {
  fake = await startReceiver(bot.answer);
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
      "campaigns",
      "providers",
    ],
    env: { PUBLIC_URL, MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

const secret = () => lastBody("setWebhook").secret_token as string;

function postUpdate(update: unknown, secretToken: string | null = secret(), id = providerId) {
  return filedAfter(
    app,
    app.http().request("POST", `/api/providers/chatapp1/webhooks?providerId=${id}`, {
      raw: JSON.stringify(update),
      headers: {
        "content-type": "application/json",
        ...(secretToken === null ? {} : { "x-telegram-bot-api-secret-token": secretToken }),
      },
    }),
  );
}

let updateId = 1000;
const textUpdate = (chatId: number | string, text: string, extra: Record<string, unknown> = {}) =>
  botTextUpdate({
    updateId: ++updateId,
    chatId,
    text,
    firstName: "Ada",
    lastName: "Lovelace",
    date: 1_700_000_000,
    extra,
  });

const chatContact = (chatId: string) =>
  systemCall<{ id: string }>(app.broker, ctx.workspaceId, "contacts.byAddress", {
    type: "chatapp1ChatId",
    value: chatId,
  });

const sentTo = (chatId: string) => calls("sendMessage").filter((r) => JSON.parse(r.body).chat_id === chatId);

describe("connecting the bot", () => {
  test("a token Telegram refuses is a 400 on config.botToken; a webhook secret from the caller is refused", async () => {
    const c = ctx.owner.client;
    const bad = await c.post(`${ctx.ws}/providers/chatapp1`, {
      config: { botToken: "bad-token", baseUrl: fake.url("") },
    });
    expect([bad.status, bad.body.code, bad.body.details?.[0]?.field]).toEqual([
      400,
      "VALIDATION_ERROR",
      "config.botToken",
    ]);
    const chosen = await c.post(`${ctx.ws}/providers/chatapp1`, {
      config: { botToken: TOKEN, webhookSecret: "my-own-secret", baseUrl: fake.url("") },
    });
    expect([chosen.status, chosen.body.details?.[0]?.field]).toEqual([400, "config.webhookSecret"]);
    const unreachable = await c.post(`${ctx.ws}/providers/chatapp1`, {
      config: { botToken: TOKEN, baseUrl: "http://127.0.0.1:1" },
    });
    expect([unreachable.status, unreachable.body.code]).toEqual([502, "UPSTREAM_ERROR"]);
    expect(unreachable.body.error).not.toContain(TOKEN);
    expect((await c.get(`${ctx.ws}/providers/chatapp1`)).status).toBe(404);
  });

  test("POST checks the token, registers the webhook with a generated secret and our URL, sets the menu and the bot URL", async () => {
    const c = ctx.owner.client;
    const created = await c.post(`${ctx.ws}/providers/chatapp1`, {
      config: { botToken: TOKEN, baseUrl: fake.url("") },
    });
    expect(created.status).toBe(201);
    providerId = created.body.id;
    expect(created.body).toMatchObject({
      channel: "chatapp1",
      type: "chatapp1",
      isDefault: true,
      config: {
        botToken: "••••abcd",
        botUsername: "acme_bot",
        webhookSecret: expect.stringMatching(/^••••/),
      },
    });
    expect(JSON.stringify(created.body)).not.toContain(TOKEN);

    expect(calls("getMe")).toHaveLength(1);
    const hook = lastBody("setWebhook");
    expect(hook).toEqual({
      url: `${PUBLIC_URL}/api/providers/chatapp1/webhooks?providerId=${providerId}`,
      secret_token: expect.stringMatching(/^[A-Za-z0-9]{48}$/),
      allowed_updates: ["message"],
    });
    expect(hook.url).not.toContain("good-token");
    expect(created.body.config.webhookSecret).toBe(`••••${hook.secret_token.slice(-4)}`);

    const menu = lastBody("setMyCommands").commands as Array<{ command: string; description: string }>;
    expect(menu.map((m) => m.command)).toEqual([
      "stop",
      "stopall",
      "unsubscribe",
      "cancel",
      "end",
      "quit",
      "unstop",
      "help",
    ]);
    expect(menu.every((m) => m.description.length > 0)).toBe(true);

    const workspace = await c.get(ctx.ws);
    expect(workspace.body.settings.chatapp1).toEqual({ botUrl: "https://t.me/acme_bot" });
  });

  test("GET shows the webhook's health and registers the webhook again when Telegram lost it", async () => {
    const c = ctx.owner.client;
    const healthy = await c.get(`${ctx.ws}/providers/chatapp1`);
    expect(healthy.status).toBe(200);
    expect(healthy.body.health).toEqual({
      reachable: true,
      webhookRegistered: true,
      reRegistered: false,
      pendingUpdates: 3,
      lastError: "Connection timed out",
      lastErrorAt: new Date(1_700_000_000_000).toISOString(),
      checkedAt: expect.any(String),
    });
    const before = calls("setWebhook").length;
    const secretBefore = secret();

    registered.set(TOKEN, "");
    const lost = await c.get(`${ctx.ws}/providers/chatapp1`);
    expect(lost.body.health).toMatchObject({ webhookRegistered: true, reRegistered: true });
    expect(calls("setWebhook")).toHaveLength(before + 1);
    expect(lastBody("setWebhook")).toMatchObject({
      url: `${PUBLIC_URL}/api/providers/chatapp1/webhooks?providerId=${providerId}`,
      secret_token: secretBefore,
    });

    // Telegram failing: the provider still answers, saying what is known.
    bot.state.webhookInfoDown = true;
    const down = await c.get(`${ctx.ws}/providers/chatapp1`);
    bot.state.webhookInfoDown = false;
    expect(down.status).toBe(200);
    expect(down.body.health).toMatchObject({
      reachable: true,
      webhookRegistered: false,
      lastError: "Telegram refused getWebhookInfo: Bad Gateway",
    });
  });

  test("PATCH merges and keeps the secret while the token stays; PUT channel-commands re-sets the menu", async () => {
    const c = ctx.owner.client;
    const secretBefore = secret();
    const patched = await c.patch(`${ctx.ws}/providers/chatapp1`, { name: "Support bot" });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: providerId,
      name: "Support bot",
      config: { botUsername: "acme_bot" },
    });
    expect(secret()).toBe(secretBefore);

    const commands = (await c.get(`${ctx.ws}/channel-commands`)).body.commands;
    const put = await c.put(`${ctx.ws}/channel-commands`, {
      commands: [
        ...commands,
        { keyword: "PAUSE", action: "opt_out", channels: ["chatapp1"], reply: "Paused." },
        { keyword: "NOT A COMMAND", action: "help", channels: ["chatapp1"], reply: null },
      ],
    });
    expect(put.status).toBe(200);
    expect(lastBody("setMyCommands").commands.map((m: { command: string }) => m.command)).toContain("pause");
    expect(JSON.stringify(lastBody("setMyCommands"))).not.toContain("not a command");
    await c.put(`${ctx.ws}/channel-commands`, { commands });
  });
});

describe("the webhook", () => {
  test("the secret header is checked; an unknown provider is 404", async () => {
    const update = textUpdate(5001, "hello");
    expect((await postUpdate(update, null)).status).toBe(401);
    const wrong = await postUpdate(update, "x".repeat(48));
    expect([wrong.status, wrong.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
    expect((await postUpdate(update, secret(), "no-such-provider")).status).toBe(404);
  });

  test("a text from an unknown chat makes the contact and records chatapp1.message_received; a retried update applies once", async () => {
    const c = ctx.owner.client;
    const update = textUpdate(5002, "Hi there", { reply_to_message: { message_id: 7 } });
    const answer = await postUpdate(update);
    expect([answer.status, answer.body]).toEqual([200, { received: true }]);
    expect((await postUpdate(update)).status).toBe(200);

    const contacts = (await c.get(`${ctx.ws}/contacts?search=Lovelace`)).body.data;
    expect(contacts).toHaveLength(1);
    expect(contacts[0]).toMatchObject({
      firstName: "Ada",
      lastName: "Lovelace",
      attributes: { chatapp1ChatId: "5002" },
    });
    const events = await waitFor(async () => {
      const res = await c.get(`${ctx.ws}/events?contactId=${contacts[0].id}&type=chatapp1.message_received`);
      return res.body.length ? res.body : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0].metadata).toMatchObject({
      providerId,
      from: "5002",
      text: "Hi there",
      providerMessageId: `5002:${update.message.message_id}`,
    });
  });

  // Telegram numbers messages per chat: two people's first messages share a message_id.
  test("two chats' messages with one message_id are both received, each from its own contact", async () => {
    const c = ctx.owner.client;
    for (const chatId of [5030, 5031])
      expect((await postUpdate(textUpdate(chatId, `first from ${chatId}`, { message_id: 1 }))).status).toBe(
        200,
      );
    for (const chatId of ["5030", "5031"]) {
      const contact = await chatContact(chatId);
      const events = (await c.get(`${ctx.ws}/events?contactId=${contact.id}&type=chatapp1.message_received`))
        .body;
      expect(
        events.map((e: { metadata: { text: string; providerMessageId: string } }) => e.metadata),
      ).toEqual([
        expect.objectContaining({ text: `first from ${chatId}`, providerMessageId: `${chatId}:1` }),
      ]);
    }
  });

  test("first messages from one unknown chat arriving together make one contact", async () => {
    const c = ctx.owner.client;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => postUpdate(textUpdate(5010, `burst ${i}`))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM contacts WHERE workspace_id = $1 AND attributes->>'chatapp1ChatId' = '5010'`,
        [ctx.workspaceId],
      );
      expect(rows).toHaveLength(1);
      const events = await waitFor(async () => {
        const res = await c.get(`${ctx.ws}/events?contactId=${rows[0].id}&type=chatapp1.message_received`);
        return res.body.length === 8 ? res.body : undefined;
      });
      expect(events).toHaveLength(8);
    } finally {
      await db.end();
    }
  });

  test("first messages of several unknown chats arriving together make one contact each, with its name", async () => {
    const chats = [5110, 5111, 5112, 5113, 5114];
    const answers = await Promise.all(
      chats.flatMap((chat) => [0, 1].map((i) => postUpdate(textUpdate(chat, `together ${i}`)))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(chats.length * 2).fill(200));
    const db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ chat: string; n: string; first_name: string | null }>(
        `SELECT attributes->>'chatapp1ChatId' AS chat, count(*) AS n, min(first_name) AS first_name FROM contacts
          WHERE workspace_id = $1 AND attributes->>'chatapp1ChatId' = ANY ($2::text[])
          GROUP BY 1 ORDER BY 1`,
        [ctx.workspaceId, chats.map(String)],
      );
      expect(rows).toEqual(chats.map((chat) => ({ chat: String(chat), n: "1", first_name: "Ada" })));
    } finally {
      await db.end();
    }
  });

  test("/start <token> from chatapp1-link binds the chat to the contact and answers a welcome", async () => {
    const c = ctx.owner.client;
    const person = await c.post(`${ctx.ws}/contacts`, { email: "grace@example.com", firstName: "Grace" });
    const link = await c.get(`${ctx.ws}/contacts/${person.body.id}/chatapp1-link`);
    expect(link.status).toBe(200);
    expect(link.body.url).toBe(`https://t.me/acme_bot?start=${link.body.token}`);

    // The person wrote to the bot before opening the link: the bot's contact for the chat is merged in.
    await postUpdate(textUpdate(5003, "hello?"));
    const botMade = await chatContact("5003");
    expect(botMade.id).not.toBe(person.body.id);
    expect((await postUpdate(textUpdate(5003, `/start ${link.body.token}`))).status).toBe(200);
    const linked = (await c.get(`${ctx.ws}/contacts/${person.body.id}`)).body;
    expect(linked.attributes).toMatchObject({ chatapp1ChatId: "5003" });
    expect((await chatContact("5003")).id).toBe(person.body.id);
    expect((await c.get(`${ctx.ws}/contacts/${botMade.id}`)).status).toBe(404);

    const welcome = await waitFor(() => sentTo("5003")[0], 10_000, "welcome");
    expect(JSON.parse(welcome.body)).toEqual({
      chat_id: "5003",
      text: expect.stringMatching(/^You are connected/),
    });

    // The token works once: used again, the chat stays with the contact it was given to.
    await postUpdate(textUpdate(5004, `/start ${link.body.token}`));
    expect((await c.get(`${ctx.ws}/contacts/${person.body.id}`)).body.attributes.chatapp1ChatId).toBe("5003");
  });
});

describe("sending", () => {
  const message = async (id: string) => (await ctx.owner.client.get(`${ctx.ws}/messages/${id}`)).body;

  test("a message with buttons reaches the Bot API as sendMessage with an inline keyboard", async () => {
    const c = ctx.owner.client;
    const contact = await c.post(`${ctx.ws}/contacts`, {
      email: "linus@example.com",
      attributes: { chatapp1ChatId: "5010" },
    });
    const queued = await c.post(`${ctx.ws}/messages`, {
      contactId: contact.body.id,
      channel: "chatapp1",
      content: {
        text: "Our sale starts today",
        buttons: [
          { text: "Shop", url: "https://shop.example.com" },
          { text: "Unsubscribe", url: "https://shop.example.com/u" },
        ],
      },
    });
    expect(queued.status).toBe(202);
    const sent = await waitFor(async () => {
      const m = await message(queued.body.id);
      return m.status === "sent" ? m : undefined;
    });
    const request = sentTo("5010")[0];
    expect(JSON.parse(request.body)).toEqual({
      chat_id: "5010",
      text: "Our sale starts today",
      reply_markup: {
        inline_keyboard: [
          [{ text: "Shop", url: "https://shop.example.com" }],
          [{ text: "Unsubscribe", url: "https://shop.example.com/u" }],
        ],
      },
    });
    expect(sent).toMatchObject({
      providerType: "chatapp1",
      providerId,
      providerMessageId: `5010:${bot.state.messageIds}`,
    });
  });

  test("a chat that blocked the bot: the message is suppressed, consent untouched", async () => {
    const c = ctx.owner.client;
    const contact = await c.post(`${ctx.ws}/contacts`, {
      email: "blocked@example.com",
      attributes: { chatapp1ChatId: BLOCKED_CHAT },
    });
    const queued = await c.post(`${ctx.ws}/messages`, {
      contactId: contact.body.id,
      channel: "chatapp1",
      content: { text: "Still there?" },
    });
    const done = await waitFor(async () => {
      const m = await message(queued.body.id);
      return m.status === "suppressed" ? m : undefined;
    });
    expect(done).toMatchObject({ reason: "unsubscribed", error: expect.stringContaining("blocked") });
    expect((await c.get(`${ctx.ws}/contacts/${contact.body.id}/consent`)).body.chatapp1?.status).not.toBe(
      "opted_out",
    );
  });

  test("Telegram's flood control: the send is retried no sooner than its retry_after", async () => {
    const c = ctx.owner.client;
    const contact = await c.post(`${ctx.ws}/contacts`, {
      email: "flooded@example.com",
      attributes: { chatapp1ChatId: FLOODED_CHAT },
    });
    const queued = await c.post(`${ctx.ws}/messages`, {
      contactId: contact.body.id,
      channel: "chatapp1",
      content: { text: "Again" },
    });
    const retried = await waitFor(async () => {
      const m = await message(queued.body.id);
      return m.status === "queued" && m.error ? m : undefined;
    });
    expect(retried.error).toContain("retry after 3600 s");
    expect(Date.parse(retried.sendAt) - Date.now()).toBeGreaterThan(3500_000);
  });

  test("STOP and /stop opt out with source chat_command and are answered; START opts back in", async () => {
    const c = ctx.owner.client;
    const contact = await c.post(`${ctx.ws}/contacts`, {
      email: "stopper@example.com",
      attributes: { chatapp1ChatId: "5020" },
    });
    const consent = async () => (await c.get(`${ctx.ws}/contacts/${contact.body.id}/consent`)).body.chatapp1;

    await postUpdate(textUpdate(5020, " Stop "));
    expect(await consent()).toMatchObject({ status: "opted_out", source: "chat_command" });
    const reply = await waitFor(() => sentTo("5020")[0], 10_000, "STOP reply");
    expect(JSON.parse(reply.body).text).toMatch(/^You are unsubscribed/);

    await postUpdate(textUpdate(5020, "START"));
    expect(await consent()).toMatchObject({ status: "opted_in", source: "chat_command" });
    await postUpdate(textUpdate(5020, "/stop@acme_bot"));
    expect(await consent()).toMatchObject({ status: "opted_out", source: "chat_command" });
    await waitFor(() => (sentTo("5020").length >= 3 ? true : undefined), 10_000, "three replies");

    // A campaign-style send to the opted-out chat is suppressed before it reaches Telegram.
    const queued = await c.post(`${ctx.ws}/messages`, {
      contactId: contact.body.id,
      channel: "chatapp1",
      content: { text: "News" },
    });
    expect(queued.body).toMatchObject({ status: "suppressed", reason: "unsubscribed" });
  });
});

test("a campaign's send node on chatapp1 renders the template and reaches the chat", async () => {
  const c = ctx.owner.client;
  const template = await c.post(`${ctx.ws}/templates`, {
    name: "Chat welcome",
    channel: "chatapp1",
    content: {
      text: "Hello {{ contact.firstName }}, welcome aboard",
      buttons: [{ text: "Your account", url: "https://acme.example/account" }],
    },
  });
  expect(template.status).toBe(201);
  const campaign = await c.post(`${ctx.ws}/campaigns`, {
    name: "Chat journey",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "hello", type: "send", config: { channel: "chatapp1", templateId: template.body.id } },
      ],
      edges: [{ from: "entry", to: "hello" }],
    },
  });
  const id = campaign.body.id;
  await c.post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "event", config: { eventType: "signup" } });
  expect((await c.post(`${ctx.ws}/campaigns/${id}/execute`)).status).toBeLessThan(300);
  const who = await c.post(`${ctx.ws}/contacts`, {
    email: "journey@example.com",
    firstName: "Jo",
    attributes: { chatapp1ChatId: "5030" },
  });
  expect((await c.post(`${ctx.ws}/events`, { type: "signup", contactId: who.body.id })).status).toBe(201);

  const sent = await waitFor(async () => {
    const [m] = (await c.get(`${ctx.ws}/messages?campaignId=${id}`)).body.data;
    return m?.status === "sent" ? m : undefined;
  });
  expect(sent).toMatchObject({ channel: "chatapp1", to: "5030", templateId: template.body.id, providerId });
  expect(JSON.parse(sentTo("5030")[0].body)).toEqual({
    chat_id: "5030",
    text: "Hello Jo, welcome aboard",
    reply_markup: { inline_keyboard: [[{ text: "Your account", url: "https://acme.example/account" }]] },
  });
});

test("DELETE removes the provider and Telegram's webhook", async () => {
  const c = ctx.owner.client;
  const before = calls("deleteWebhook").length;
  expect((await c.delete(`${ctx.ws}/providers/chatapp1`)).body).toEqual({ success: true });
  expect(calls("deleteWebhook")).toHaveLength(before + 1);
  expect(registered.get(TOKEN)).toBe("");
  expect((await c.get(`${ctx.ws}/providers/chatapp1`)).status).toBe(404);
});

test("a new token on PATCH gets a new secret and the old bot's webhook is deleted", async () => {
  const c = ctx.owner.client;
  await c.post(`${ctx.ws}/providers/chatapp1`, { config: { botToken: TOKEN, baseUrl: fake.url("") } });
  const first = secret();
  const patched = await c.patch(`${ctx.ws}/providers/chatapp1`, { config: { botToken: OTHER_TOKEN } });
  expect(patched.status).toBe(200);
  expect(patched.body.config).toMatchObject({ botToken: "••••wxyz", botUsername: "other_bot" });
  const second = lastBody("setWebhook", OTHER_TOKEN).secret_token;
  expect(second).not.toBe(first);
  expect(registered.get(TOKEN)).toBe("");
  expect(registered.get(OTHER_TOKEN)).toContain(`providerId=${patched.body.id}`);
});
