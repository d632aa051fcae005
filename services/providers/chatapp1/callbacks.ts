import { safeEqual, sha256Hex } from "../../../lib/crypto";
import { header, parseJson, type Callback, type ProviderEvent } from "../callbacks";

/**
 * chatapp1 (Telegram): each update carries the `secret_token` we registered
 * with the webhook in `X-Telegram-Bot-Api-Secret-Token`
 * (https://core.telegram.org/bots/api#setwebhook); the gateway forwards it
 * hashed (`forwardedHeaders`), compared in constant time with the stored
 * secret's hash.
 */
export function verifyCallback(cb: Callback, config: Record<string, unknown>): boolean {
  const hashed = header(cb, "X-Telegram-Bot-Api-Secret-Token");
  const secret = config.webhookSecret;
  return typeof secret === "string" && !!secret && !!hashed && safeEqual(hashed, sha256Hex(secret));
}

interface Update {
  update_id?: unknown;
  message?: {
    message_id?: unknown;
    text?: unknown;
    caption?: unknown;
    chat?: { id?: unknown; type?: unknown; first_name?: unknown; last_name?: unknown };
    reply_to_message?: { message_id?: unknown };
  };
}

/** `/name`, `/name@bot` and what follows, as Telegram clients send a command. */
const COMMAND = /^\/([A-Za-z0-9_]{1,32})(?:@[A-Za-z0-9_]+)?(?:\s+([\s\S]*))?$/;

/**
 * A Telegram update: a text (or a caption) in a private chat is an inbound
 * message from the chat's id; the update's id applies it once. A command
 * (`/stop`) is matched as its name; `/start <token>`, the deep link of
 * `contacts/{id}/chatapp1-link`, carries the token binding the chat to a
 * contact, and `/start` alone is Telegram's conversation opener, never the
 * START keyword. Group chats and what is not text are not ours to read.
 */
export function readEvents(body: string): ProviderEvent[] {
  const update = parseJson(body) as Update | null;
  const message = update?.message;
  const chatId = message?.chat?.id;
  const text = typeof message?.text === "string" ? message.text : message?.caption;
  if (
    !message ||
    message.chat?.type !== "private" ||
    (typeof chatId !== "number" && typeof chatId !== "string") ||
    typeof text !== "string" ||
    !text
  )
    return [];
  const command = COMMAND.exec(text.trim());
  const name = command?.[1].toLowerCase();
  const argument = command?.[2]?.trim();
  const replyTo = chatMessageId(chatId, message.reply_to_message?.message_id);
  const inbound: Extract<ProviderEvent, { kind: "inbound" }> = {
    kind: "inbound",
    providerMessageId: chatMessageId(chatId, message.message_id),
    eventId: idOf(update?.update_id),
    from: String(chatId),
    to: "",
    text,
    references: replyTo === null ? [] : [replyTo],
    name: { firstName: namePart(message.chat.first_name), lastName: namePart(message.chat.last_name) },
  };
  if (name === "start") {
    if (argument && /^[A-Za-z0-9_-]{1,64}$/.test(argument)) inbound.linkToken = argument;
  } else if (name) inbound.command = name;
  return [inbound];
}

const idOf = (value: unknown): string | null =>
  typeof value === "number" || (typeof value === "string" && value) ? String(value) : null;

/**
 * A message's id for the bot: Telegram numbers messages per chat, so two
 * chats' first messages share a `message_id`; `<chat id>:<message_id>` is
 * unique (the client names what it sends the same way).
 */
export function chatMessageId(chatId: number | string, messageId: unknown): string | null {
  const id = idOf(messageId);
  return id === null ? null : `${chatId}:${id}`;
}

const namePart = (value: unknown): string | null =>
  typeof value === "string" && value.trim() ? value.trim().slice(0, 100) : null;
