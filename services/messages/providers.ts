import type { LoggerInstance } from "moleculer";
import { config } from "../../lib/config";
import { takeTurn } from "../../lib/rate-limit";
import type { Channel, Content } from "../templates/render";

/**
 * The providers a send goes through. With none configured a workspace sends
 * through `log`, which writes the message to the log and accepts it, so the
 * whole path works on a fresh `npm start`. Real clients (SMTP, the HTTP
 * APIs) plug in here with the same contract.
 */

export interface Outgoing {
  /** Also the idempotency key for providers that take one: a send retried after a crash is not sent twice. */
  messageId: string;
  channel: Channel;
  to: string;
  content: Content;
  /** Email headers (List-Unsubscribe, List-Unsubscribe-Post). */
  headers: Record<string, string>;
}

/** A provider's refusal: `transient` ones are retried with backoff, the others fail the message with `message`. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super(message);
  }
}

export interface Provider {
  id: string | null;
  type: string;
  send(message: Outgoing): Promise<{ providerMessageId: string }>;
}

export function logProvider(logger: LoggerInstance): Provider {
  return {
    id: null,
    type: "log",
    async send(message) {
      const summary =
        message.channel === "email"
          ? `subject ${JSON.stringify(message.content.subject ?? "")}`
          : `${JSON.stringify(message.content).length} bytes`;
      logger.info(
        `[log provider] ${message.channel} message ${message.messageId} to ${message.to}: ${summary}`,
      );
      return { providerMessageId: `log-${message.messageId}` };
    },
  };
}

/**
 * Wait until the provider type's rate limit (PROVIDER_RATE_LIMITS, sends per
 * second, counted across replicas in Redis when configured) allows one more
 * send; at most `maxWaitMs`, else the wait it would need.
 */
export async function providerTurn(type: string, maxWaitMs: number): Promise<number> {
  const perSecond = config().providerRateLimits[type];
  if (!perSecond) return 0;
  const spec = { name: "provider-send", points: perSecond, durationSeconds: 1 };
  for (let waited = 0; ;) {
    const wait = await takeTurn(spec, type);
    if (wait === 0) return 0;
    if (waited + wait > maxWaitMs) return wait;
    await new Promise((resolve) => setTimeout(resolve, wait));
    waited += wait;
  }
}
