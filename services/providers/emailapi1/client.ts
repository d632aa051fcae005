import { errorText, refusal, send } from "../clients/http";
import { holeKey, joinWithKeys } from "../clients/batch";
import { emailParts, ourMessageId, type ProviderClient } from "../clients/types";
import type { Emailapi1Config } from "./config";

/**
 * `emailapi1`: the SendGrid v3 wire. `POST /v3/mail/send` with a bearer
 * key; 202 and the `X-Message-Id` header on acceptance. Our message id
 * travels as a custom arg, so the event webhook names it. A batch is one
 * request of up to 1,000 personalizations, each with its own subject,
 * headers, custom args and substitutions into the shared content. Each mail
 * carries our Message-ID (SendGrid keeps a Message-ID header it is given),
 * so a reply threads with the message it answers.
 */

const NAME = "emailapi1";

export function emailapi1Client(id: string, config: Emailapi1Config): ProviderClient {
  const url = `${(config.baseUrl ?? "https://api.sendgrid.com").replace(/\/$/, "")}/v3/mail/send`;
  /** A mail send; anything but its acceptance is a refusal with SendGrid's first error. */
  const post = async (body: object) => {
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
    return answer;
  };
  return {
    id,
    type: NAME,
    async send(message) {
      const { from, subject, text, html, attachments } = emailParts(message);
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
        headers: { ...message.headers, "Message-ID": ourMessageId(message.messageId, from.email) },
        ...(attachments.length
          ? {
              attachments: attachments.map((a) => ({
                content: a.content,
                filename: a.filename,
                type: a.contentType,
                disposition: "attachment",
              })),
            }
          : {}),
      };
      const answer = await post(body);
      const providerMessageId = answer.headers["x-message-id"];
      return {
        providerMessageId: typeof providerMessageId === "string" ? providerMessageId : message.messageId,
      };
    },
    // SendGrid takes 1,000 personalizations per request and 10,000 bytes of substitutions in each.
    batchLimits: { recipients: 1000, holeBytes: 9000 },
    async sendBatch(batch) {
      const personalizations = batch.recipients.map(({ message, html, text }) => ({
        to: [{ email: message.to }],
        subject: String(message.content.subject ?? ""),
        headers: { ...message.headers, "Message-ID": ourMessageId(message.messageId, batch.from.email) },
        custom_args: { messageId: message.messageId },
        substitutions: Object.fromEntries([
          ...html.map((hole, i) => [holeKey("h")(i), hole]),
          ...(text ?? []).map((hole, i) => [holeKey("t")(i), hole]),
        ]),
      }));
      const body = {
        personalizations,
        from: batch.from.name
          ? { email: batch.from.email, name: batch.from.name }
          : { email: batch.from.email },
        ...(batch.replyTo ? { reply_to: { email: batch.replyTo } } : {}),
        content: [
          ...(batch.text ? [{ type: "text/plain", value: joinWithKeys(batch.text, holeKey("t")) }] : []),
          { type: "text/html", value: joinWithKeys(batch.html, holeKey("h")) },
        ],
      };
      const answer = await post(body);
      const shared = answer.headers["x-message-id"];
      // One id per request; each recipient's is it and its place, and callbacks name the message by its custom arg.
      return batch.recipients.map(({ message }, i) => ({
        providerMessageId: typeof shared === "string" ? `${shared}.${i}` : message.messageId,
      }));
    },
  };
}
