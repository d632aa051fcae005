import { errorText, refusal, send } from "./http";
import { emailParts, type ProviderClient } from "./types";

/**
 * `emailapi1`: the SendGrid v3 wire. `POST /v3/mail/send` with a bearer
 * key; 202 and the `X-Message-Id` header on acceptance. Our message id
 * travels as a custom arg, so the event webhook names it.
 */

export interface Emailapi1Config {
  apiKey: string;
  baseUrl?: string;
}

const NAME = "emailapi1";

export function emailapi1Client(id: string, config: Emailapi1Config): ProviderClient {
  const url = `${(config.baseUrl ?? "https://api.sendgrid.com").replace(/\/$/, "")}/v3/mail/send`;
  return {
    id,
    type: NAME,
    async send(message) {
      const { from, subject, text, html } = emailParts(message);
      // SendGrid wants text/plain before text/html, and no empty part.
      const content = [
        ...(text ? [{ type: "text/plain", value: text }] : []),
        ...(html ? [{ type: "text/html", value: html }] : []),
      ];
      const body = {
        personalizations: [{ to: [{ email: message.to }], custom_args: { messageId: message.messageId } }],
        from: from.name ? { email: from.email, name: from.name } : { email: from.email },
        ...(message.replyTo ? { reply_to: { email: message.replyTo } } : {}),
        subject,
        content,
        ...(Object.keys(message.headers).length ? { headers: message.headers } : {}),
      };
      const answer = await send(NAME, url, {
        method: "POST",
        headers: { authorization: `Bearer ${config.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (answer.status !== 202 && answer.status !== 200)
        throw refusal(
          NAME,
          answer.status,
          errorText(answer.body, (j) => (j.errors as Array<{ message?: string }> | undefined)?.[0]?.message),
        );
      const providerMessageId = answer.headers["x-message-id"];
      return {
        providerMessageId: typeof providerMessageId === "string" ? providerMessageId : message.messageId,
      };
    },
  };
}
