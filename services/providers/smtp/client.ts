import nodemailer from "nodemailer";
import { config as appConfig } from "../../../lib/config";
import { ProviderError, emailParts, ourMessageId, type ProviderClient } from "../clients/types";
import type { SmtpConfig } from "./config";

/**
 * `smtp` through nodemailer's pooled transport: connections are reused for
 * up to `maxMessages` each, at most `maxConnections` at once. A 4xx reply or
 * a connection failure is transient; a 5xx reply fails the message with the
 * server's words.
 */

const NAME = "smtp";

export function smtpClient(id: string, config: SmtpConfig): ProviderClient {
  const timeout = appConfig().providerTimeoutMs;
  const transport = nodemailer.createTransport({
    pool: true,
    host: config.host,
    port: config.port,
    secure: config.secure ?? config.port === 465,
    auth: config.username ? { user: config.username, pass: config.password ?? "" } : undefined,
    maxConnections: config.maxConnections ?? 5,
    maxMessages: config.maxMessages ?? 100,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });
  return {
    id,
    type: NAME,
    async send(message) {
      const { from, subject, text, html, attachments } = emailParts(message);
      try {
        const info = await transport.sendMail({
          from: from.name ? { name: from.name, address: from.email } : from.email,
          to: message.to,
          replyTo: message.replyTo ?? undefined,
          subject,
          text: text ?? undefined,
          html: html ?? undefined,
          headers: message.headers,
          attachments: attachments.map((a) => ({
            filename: a.filename,
            contentType: a.contentType,
            content: a.content,
            encoding: "base64",
          })),
          messageId: ourMessageId(message.messageId, from.email),
        });
        return { providerMessageId: String(info.messageId).replace(/^<|>$/g, "") };
      } catch (err) {
        const e = err as { responseCode?: number; response?: string; code?: string; message?: string };
        if (e.responseCode)
          throw new ProviderError(
            `${NAME} ${e.responseCode}: ${(e.response ?? e.message ?? "").slice(0, 500)}`,
            e.responseCode < 500,
          );
        throw new ProviderError(`${NAME}: ${e.code ?? "error"}: ${e.message ?? String(err)}`, true);
      }
    },
    async close() {
      transport.close();
    },
  };
}
