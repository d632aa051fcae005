import type { LoggerInstance } from "moleculer";
import { attachmentsOf, type ProviderClient } from "./types";

/**
 * With no provider configured a workspace sends through `log`, which writes
 * the message to the log and accepts it, so the whole path works on a fresh
 * `npm start`.
 */
export function logClient(logger: LoggerInstance): ProviderClient {
  return {
    id: null,
    type: "log",
    async send(message) {
      const files = attachmentsOf(message.content).map((a) => a.filename);
      const summary =
        message.channel === "email"
          ? `subject ${JSON.stringify(message.content.subject ?? "")}${files.length ? `, attached ${files.join(", ")}` : ""}`
          : `${JSON.stringify(message.content).length} bytes`;
      logger.info(
        `[log provider] ${message.channel} message ${message.messageId} to ${message.to}: ${summary}`,
      );
      return { providerMessageId: `log-${message.messageId}` };
    },
  };
}
