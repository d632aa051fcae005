import { basicAuth, errorText, refusal, send } from "./http";
import { emailParts, type ProviderClient } from "./types";

/**
 * `emailapi2`: the Mailgun wire. `POST /v3/{domain}/messages`, form-encoded,
 * basic auth `api:<key>`; 200 `{id: "<...>", message}`. Our message id
 * travels as the variable `v:messageId`, headers as `h:<name>`.
 */

export interface Emailapi2Config {
  apiKey: string;
  domain: string;
  baseUrl?: string;
}

const NAME = "emailapi2";

export function emailapi2Client(id: string, config: Emailapi2Config): ProviderClient {
  const base = (config.baseUrl ?? "https://api.mailgun.net").replace(/\/$/, "");
  const url = `${base}/v3/${encodeURIComponent(config.domain)}/messages`;
  return {
    id,
    type: NAME,
    async send(message) {
      const { from, subject, text, html } = emailParts(message);
      const form = new URLSearchParams();
      form.set("from", from.name ? `${JSON.stringify(from.name)} <${from.email}>` : from.email);
      form.set("to", message.to);
      form.set("subject", subject);
      if (text) form.set("text", text);
      if (html) form.set("html", html);
      if (message.replyTo) form.set("h:Reply-To", message.replyTo);
      for (const [name, value] of Object.entries(message.headers)) form.set(`h:${name}`, value);
      form.set("v:messageId", message.messageId);
      const answer = await send(NAME, url, {
        method: "POST",
        headers: {
          authorization: basicAuth("api", config.apiKey),
          "content-type": "application/x-www-form-urlencoded",
        },
        body: form.toString(),
      });
      if (answer.status !== 200)
        throw refusal(
          NAME,
          answer.status,
          errorText(answer.body, (j) => j.message),
        );
      const id = errorText(answer.body, (j) => j.id);
      // Mailgun's events name the message by its Message-Id without the angle brackets.
      return { providerMessageId: id.replace(/^<|>$/g, "") };
    },
  };
}
