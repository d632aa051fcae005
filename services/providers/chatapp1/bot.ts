import { send, type Answer } from "../clients/http";
import { ProviderError } from "../clients/types";
import { DEFAULT_BASE_URL } from "./config";

/**
 * The Telegram Bot API methods we call
 * (https://core.telegram.org/bots/api#making-requests): `POST
 * {baseUrl}/bot<token>/<method>` with a JSON body, answered `{ok: true,
 * result}` or `{ok: false, error_code, description, parameters}`. The token
 * is in the path, as Telegram wants it: never in a log line or an error text.
 */

const NAME = "chatapp1";

export interface Bot {
  token: string;
  baseUrl?: string;
}

export interface BotAnswer<T> {
  /** HTTP status of the answer. */
  status: number;
  ok: boolean;
  result: T | null;
  /** Telegram's own words on a refusal ("Unauthorized", "Forbidden: bot was blocked by the user"). */
  description: string;
  /** 429: how long Telegram asks us to wait. */
  retryAfter: number | null;
}

/**
 * One Bot API call. A network failure throws a transient ProviderError (from
 * `send`); any answer, refusals included, is returned for the caller to judge.
 */
export async function callBot<T>(bot: Bot, method: string, body: object): Promise<BotAnswer<T>> {
  const base = (bot.baseUrl ?? DEFAULT_BASE_URL).replace(/\/$/, "");
  let answer: Answer;
  try {
    answer = await send(NAME, `${base}/bot${bot.token}/${method}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (err) {
    // The URL holds the token: whatever the network layer said, the token is not repeated.
    if (err instanceof ProviderError)
      throw new ProviderError(err.message.replaceAll(bot.token, "<token>"), true);
    throw err;
  }
  let json: {
    ok?: unknown;
    result?: T;
    description?: unknown;
    parameters?: { retry_after?: unknown };
  } = {};
  try {
    json = JSON.parse(answer.body) as typeof json;
  } catch {
    // Not JSON (a proxy's error page): judged by the status alone.
  }
  const retryAfter = json.parameters?.retry_after;
  return {
    status: answer.status,
    ok: answer.status === 200 && json.ok === true,
    result: json.result ?? null,
    description: typeof json.description === "string" ? json.description : `HTTP ${answer.status}`,
    retryAfter: typeof retryAfter === "number" ? retryAfter : null,
  };
}

/** `getMe`: the bot the token belongs to. */
export const getMe = (bot: Bot) =>
  callBot<{ id: number; is_bot: boolean; username: string }>(bot, "getMe", {});

/** `setWebhook`: updates are POSTed to `url` carrying `secret_token` in a header; only messages are asked for. */
export const setWebhook = (bot: Bot, url: string, secretToken: string) =>
  callBot<boolean>(bot, "setWebhook", { url, secret_token: secretToken, allowed_updates: ["message"] });

export const deleteWebhook = (bot: Bot) => callBot<boolean>(bot, "deleteWebhook", {});

export interface WebhookInfo {
  url: string;
  pending_update_count: number;
  last_error_date?: number;
  last_error_message?: string;
}

export const getWebhookInfo = (bot: Bot) => callBot<WebhookInfo>(bot, "getWebhookInfo", {});

export interface BotCommand {
  command: string;
  description: string;
}

export const setMyCommands = (bot: Bot, commands: BotCommand[]) =>
  callBot<boolean>(bot, "setMyCommands", { commands });

export interface SendMessage {
  chat_id: string;
  text: string;
  reply_markup?: { inline_keyboard: Array<Array<{ text: string; url: string }>> };
}

export const sendMessage = (bot: Bot, message: SendMessage) =>
  callBot<{ message_id: number }>(bot, "sendMessage", message);
