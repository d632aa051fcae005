import { refusal } from "../clients/http";
import { ProviderError, type ProviderClient } from "../clients/types";
import { sendMessage, type SendMessage } from "./bot";
import { chatMessageId } from "./callbacks";
import type { Chatapp1Config } from "./config";

/**
 * `chatapp1`: the Telegram Bot API wire. `sendMessage` to the contact's chat
 * id (`attributes.chatapp1ChatId`), plain text (no `parse_mode`: a rendered
 * variable cannot become markup), the template's buttons as an inline
 * keyboard of URL buttons, one per row; the provider message id is
 * `<chat id>:<message_id>` (Telegram numbers messages per chat; replies
 * name the message in `reply_to_message`, read the same way).
 */

const NAME = "chatapp1";

/**
 * Telegram's refusal when the person blocked the bot
 * (https://core.telegram.org/api/errors#403-forbidden). They left the
 * conversation: the message is suppressed, not failed, but their consent
 * is left alone, as with an SMS provider's own opt-out list, because
 * unblocking the bot sends us nothing: an opt-out recorded here would outlive
 * their return and tell every CRM they unsubscribed.
 */
const BLOCKED = /bot was blocked by the user/i;

export function chatapp1Client(id: string, config: Chatapp1Config): ProviderClient {
  const bot = { token: config.botToken, baseUrl: config.baseUrl };
  return {
    id,
    type: NAME,
    async send(message) {
      const body: SendMessage = { chat_id: message.to, text: String(message.content.text ?? "") };
      const buttons = buttonsOf(message.content.buttons);
      if (buttons.length) body.reply_markup = { inline_keyboard: buttons.map((b) => [b]) };
      const answer = await sendMessage(bot, body);
      if (!answer.ok || !answer.result) {
        const detail =
          answer.retryAfter !== null
            ? `${answer.description} (retry after ${answer.retryAfter} s)`
            : answer.description;
        if (answer.status === 403 && BLOCKED.test(answer.description))
          throw new ProviderError(`${NAME} 403: ${detail}`, false, "unsubscribed");
        const error = refusal(NAME, answer.status === 200 ? 502 : answer.status, detail);
        // Flood control: Telegram extends the wait of a bot that retries sooner than it asked.
        if (answer.status === 429 && answer.retryAfter !== null)
          throw new ProviderError(error.message, true, null, answer.retryAfter * 1000);
        throw error;
      }
      return { providerMessageId: chatMessageId(message.to, answer.result.message_id)! };
    },
  };
}

/** The template's `buttons` (`[{text, url}]`, checked when saved) as Telegram URL buttons. */
function buttonsOf(value: unknown): Array<{ text: string; url: string }> {
  if (!Array.isArray(value)) return [];
  return value.flatMap((b: { text?: unknown; url?: unknown }) =>
    typeof b?.text === "string" && typeof b.url === "string" ? [{ text: b.text, url: b.url }] : [],
  );
}
