import { sha256Hex } from "../../lib/crypto";
import { forwardedHeaders } from "../../services/providers/callbacks";
import { readEvents, verifyCallback } from "../../services/providers/chatapp1/callbacks";
import { chatapp1Client } from "../../services/providers/chatapp1/client";
import { menuOf } from "../../services/providers/chatapp1/connect";
import { closeHttp } from "../../services/providers/clients/http";
import { ProviderError } from "../../services/providers/clients/types";
import { DEFAULT_COMMANDS } from "../../services/providers/commands";
import { startReceiver, type Behaviour } from "../helpers/receiver";

/** chatapp1 (Telegram): reading updates, the secret header, the command menu, and the client against a fake Bot API. */

const update = (message: Record<string, unknown>, id = 7) =>
  JSON.stringify({
    update_id: id,
    message: { message_id: 70, date: 1, chat: { id: 12345, type: "private", first_name: "Ada" }, ...message },
  });

describe("readEvents", () => {
  test("a text in a private chat is an inbound message from the chat, applied once by update_id", () => {
    expect(readEvents(update({ text: "Hello", reply_to_message: { message_id: 69 } }))).toEqual([
      {
        kind: "inbound",
        providerMessageId: "12345:70",
        eventId: "7",
        from: "12345",
        to: "",
        text: "Hello",
        references: ["12345:69"],
        name: { firstName: "Ada", lastName: null },
      },
    ]);
  });

  test("commands: /stop and /stop@bot are matched as `stop`; /start <token> carries the link token; /start alone is no command", () => {
    const [stop] = readEvents(update({ text: "/stop" }));
    expect(stop).toMatchObject({ text: "/stop", command: "stop" });
    expect(readEvents(update({ text: "/STOP@acme_bot" }))[0]).toMatchObject({ command: "stop" });
    const [start] = readEvents(update({ text: "/start AbC123_-x" }));
    expect(start).toMatchObject({ linkToken: "AbC123_-x" });
    expect(start).not.toHaveProperty("command");
    const [bare] = readEvents(update({ text: "/start" }));
    expect(bare).not.toHaveProperty("command");
    expect(bare).not.toHaveProperty("linkToken");
    expect(readEvents(update({ text: "/start not a token!" }))[0]).not.toHaveProperty("linkToken");
    expect(readEvents(update({ text: "STOP" }))[0]).not.toHaveProperty("command");
  });

  test("a caption is the text; groups, channels, stickers and broken bodies give nothing", () => {
    expect(readEvents(update({ caption: "look" }))[0]).toMatchObject({ text: "look" });
    expect(readEvents(update({ text: "hi", chat: { id: -100, type: "group" } }))).toEqual([]);
    expect(readEvents(update({ sticker: { file_id: "x" } }))).toEqual([]);
    expect(readEvents(JSON.stringify({ update_id: 1, edited_message: { text: "x" } }))).toEqual([]);
    expect(readEvents("not json")).toEqual([]);
  });
});

describe("verifyCallback", () => {
  const cb = (secret?: string) => ({
    rawBody: "{}",
    url: "",
    headers: forwardedHeaders(secret === undefined ? {} : { "x-telegram-bot-api-secret-token": secret }),
  });
  test("the gateway forwards the secret header hashed, and no cookie", () => {
    const forwarded = forwardedHeaders({
      "x-telegram-bot-api-secret-token": "s3cret",
      cookie: "session=1",
      "content-type": "application/json",
    });
    expect(forwarded).toEqual({
      "x-telegram-bot-api-secret-token": sha256Hex("s3cret"),
      "content-type": "application/json",
    });
  });
  test("the secret header must equal the webhook secret", () => {
    expect(verifyCallback(cb("s3cret"), { webhookSecret: "s3cret" })).toBe(true);
    expect(verifyCallback(cb("s3cret!"), { webhookSecret: "s3cret" })).toBe(false);
    expect(verifyCallback(cb(), { webhookSecret: "s3cret" })).toBe(false);
    expect(verifyCallback(cb(""), { webhookSecret: "" })).toBe(false);
    expect(verifyCallback(cb("s3cret"), {})).toBe(false);
  });
});

describe("menuOf", () => {
  test("the chatapp1 commands Telegram can show, lower-cased, once each, without start", () => {
    const menu = menuOf([
      ...DEFAULT_COMMANDS,
      { keyword: "Stop", action: "opt_out", channels: ["chatapp1"], reply: null },
      { keyword: "two words", action: "help", channels: ["chatapp1"], reply: null },
      { keyword: "SMSONLY", action: "help", channels: ["sms"], reply: null },
      { keyword: "START", action: "opt_in", channels: ["chatapp1"], reply: null },
    ]);
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
    expect(menu[0].description).toBe("Stop receiving our messages");
  });
});

describe("chatapp1Client against a fake Bot API", () => {
  let fake: Awaited<ReturnType<typeof startReceiver>>;
  const TOKEN = "111:secret-token";
  beforeAll(async () => {
    fake = await startReceiver();
  });
  afterAll(async () => {
    await closeHttp();
    await fake.close();
  });

  const send = (behaviour: Behaviour, content: Record<string, unknown> = { text: "Hi" }) => {
    fake.setBehaviour(behaviour);
    return chatapp1Client("p1", { botToken: TOKEN, baseUrl: fake.url("") }).send({
      messageId: "m1",
      channel: "chatapp1",
      to: "12345",
      content,
      headers: {},
    });
  };
  const refusal = async (status: number, description: string, extra: Record<string, unknown> = {}) => {
    const err = await send(() => ({
      status,
      body: JSON.stringify({ ok: false, error_code: status, description, ...extra }),
    })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    return err as ProviderError;
  };

  test("sendMessage at /bot<token>/sendMessage; the chat and its message_id are the provider message id", async () => {
    const accepted = await send(() => ({ status: 200, body: '{"ok":true,"result":{"message_id":512}}' }), {
      text: "Sale",
      buttons: [{ text: "Shop", url: "https://shop.example" }],
    });
    expect(accepted).toEqual({ providerMessageId: "12345:512" });
    const request = fake.received.at(-1)!;
    expect(request.path).toBe(`/bot${TOKEN}/sendMessage`);
    expect(request.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(request.body)).toEqual({
      chat_id: "12345",
      text: "Sale",
      reply_markup: { inline_keyboard: [[{ text: "Shop", url: "https://shop.example" }]] },
    });
  });

  test("429 (with retry_after) and 5xx are transient; 400 is permanent; a blocked bot suppresses", async () => {
    const limited = await refusal(429, "Too Many Requests: retry after 3", {
      parameters: { retry_after: 3 },
    });
    expect([limited.transient, limited.suppression, limited.retryAfterMs]).toEqual([true, null, 3000]);
    expect(limited.message).toContain("retry after 3 s");
    expect((await refusal(502, "Bad Gateway")).transient).toBe(true);
    const notFound = await refusal(400, "Bad Request: chat not found");
    expect([notFound.transient, notFound.suppression]).toEqual([false, null]);
    const blocked = await refusal(403, "Forbidden: bot was blocked by the user");
    expect([blocked.transient, blocked.suppression]).toEqual([false, "unsubscribed"]);
    const deactivated = await refusal(403, "Forbidden: user is deactivated");
    expect([deactivated.transient, deactivated.suppression]).toEqual([false, null]);
  });

  test("an unreachable Bot API is transient and the error never names the token", async () => {
    const err = (await chatapp1Client("p1", { botToken: TOKEN, baseUrl: "http://127.0.0.1:1" })
      .send({ messageId: "m2", channel: "chatapp1", to: "1", content: { text: "x" }, headers: {} })
      .catch((e: unknown) => e)) as ProviderError;
    expect(err).toBeInstanceOf(ProviderError);
    expect(err.transient).toBe(true);
    expect(err.message).not.toContain("secret-token");
  });
});
