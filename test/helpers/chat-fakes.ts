import type { Received } from "./receiver";

/**
 * The two chat APIs as their servers answer, for tests that run them behind
 * `startReceiver`: Telegram's Bot API (`/bot<token>/<method>`) and Meta's
 * Graph API (WhatsApp Cloud API, under `/v19.0`).
 */

type Answer = { status: number; body: string };

const json = (status: number, body: unknown): Answer => ({ status, body: JSON.stringify(body) });
const botOk = (result: unknown) => json(200, { ok: true, result });
const botError = (error_code: number, description: string, parameters?: Record<string, unknown>) =>
  json(error_code, { ok: false, error_code, description, ...(parameters ? { parameters } : {}) });

/** The token and method of a Bot API request (`/bot<token>/<method>`), or empty. */
export function botCall(req: Received): { token?: string; method?: string } {
  const [, token, method] = /^\/bot([^/]+)\/(\w+)$/.exec(req.path) ?? [];
  return { token, method };
}

export interface BotApiOptions {
  /** `getMe`'s username for a token (default `test_bot`). */
  username?: (token: string) => string;
  /** Chats whose `sendMessage` Telegram refuses, with its error code, description and parameters. */
  refusedChats?: Record<string, { code: number; description: string; parameters?: Record<string, unknown> }>;
  /** What `getWebhookInfo` adds to the registered URL (pending updates, last error). */
  webhookInfo?: Record<string, unknown>;
}

/**
 * A Telegram Bot API: `getMe`, `setWebhook`/`deleteWebhook` (the URL kept per
 * token, as Telegram does), `getWebhookInfo`, `setMyCommands`, `sendMessage`
 * with increasing message ids; token `bad-token` is unauthorized.
 * `webhookInfoDown` makes `getWebhookInfo` a 502.
 */
export function botApi(options: BotApiOptions = {}) {
  const registered = new Map<string, string>();
  const state = { messageIds: 100, webhookInfoDown: false };
  const answer = (req: Received): Answer => {
    const { token = "", method } = botCall(req);
    const body = req.body ? JSON.parse(req.body) : {};
    if (token === "bad-token") return botError(401, "Unauthorized");
    switch (method) {
      case "getMe":
        return botOk({ id: 42, is_bot: true, username: options.username?.(token) ?? "test_bot" });
      case "setWebhook":
        registered.set(token, body.url);
        return botOk(true);
      case "deleteWebhook":
        registered.set(token, "");
        return botOk(true);
      case "getWebhookInfo":
        if (state.webhookInfoDown) return botError(502, "Bad Gateway");
        return botOk({
          url: registered.get(token) ?? "",
          has_custom_certificate: false,
          pending_update_count: 0,
          ...options.webhookInfo,
        });
      case "setMyCommands":
        return botOk(true);
      case "sendMessage": {
        const refused = options.refusedChats?.[String(body.chat_id)];
        if (refused) return botError(refused.code, refused.description, refused.parameters);
        return botOk({ message_id: ++state.messageIds, chat: { id: Number(body.chat_id) }, text: body.text });
      }
      default:
        return botError(404, "Not Found");
    }
  };
  return { answer, registered, state };
}

/** A private chat's text message as Telegram posts it to a webhook. */
export function botTextUpdate(update: {
  updateId: number;
  chatId: number | string;
  text: string;
  firstName: string;
  lastName: string;
  date?: number;
  extra?: Record<string, unknown>;
}) {
  const chatId = Number(update.chatId);
  return {
    update_id: update.updateId,
    message: {
      message_id: update.updateId,
      date: update.date ?? Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: "private", first_name: update.firstName, last_name: update.lastName },
      from: { id: chatId, is_bot: false, first_name: update.firstName },
      text: update.text,
      ...update.extra,
    },
  };
}

export interface GraphApiOptions {
  accessToken: string;
  phoneNumberId: string;
  /** Pages of `message_templates` for the business account, each answered with a link to the next. */
  templates?: { businessAccountId: string; pages: unknown[][]; nextUrl: (after: string) => string };
}

/**
 * The Graph API calls chatapp2 makes: the bearer token checked on every
 * call (code 190 otherwise), the phone number's check, sends answered with
 * increasing `wamid.out<n>` ids, and the account's templates page by page.
 */
export function graphApi(options: GraphApiOptions) {
  const state = { sent: 0 };
  const phone = `/v19.0/${options.phoneNumberId}`;
  const answer = (req: Received): Answer => {
    if (req.headers.authorization !== `Bearer ${options.accessToken}`)
      return json(401, {
        error: {
          message: "Invalid OAuth access token.",
          type: "OAuthException",
          code: 190,
          fbtrace_id: "A1",
        },
      });
    if (req.path === phone)
      return json(200, {
        id: options.phoneNumberId,
        display_phone_number: "+1 555-000-1111",
        verified_name: "Acme",
      });
    if (req.path === `${phone}/messages`) {
      const to = JSON.parse(req.body).to;
      return json(200, {
        messaging_product: "whatsapp",
        contacts: [{ input: to, wa_id: to }],
        messages: [{ id: `wamid.out${++state.sent}` }],
      });
    }
    const t = options.templates;
    const listing = t && `/v19.0/${t.businessAccountId}/message_templates?limit=100`;
    if (t && listing && req.path.startsWith(listing)) {
      const after = /[?&]after=page(\d+)$/.exec(req.path);
      const index = after ? Number(after[1]) - 1 : 0;
      const page = t.pages[index];
      if (!page || (index === 0 && req.path !== listing))
        return json(404, { error: { message: "Unknown path", code: 100 } });
      const next = index + 1 < t.pages.length ? `page${index + 2}` : undefined;
      return json(200, {
        data: page,
        paging: next
          ? { cursors: { before: `b${index + 1}`, after: next }, next: t.nextUrl(next) }
          : { cursors: { before: `b${index + 1}`, after: "end" } },
      });
    }
    return json(404, { error: { message: "Unknown path", code: 100 } });
  };
  return { answer, state };
}
