import { sha256Hex } from "../../lib/crypto";

/**
 * Provider callbacks (contract 5): what arrives and the one shape the send
 * path applies, and the helpers each provider's `<type>/callbacks.ts` (its
 * own signature scheme and events) shares. kinds.ts picks the provider's.
 */

/** A signed timestamp further than this from our clock is refused (a replay, or a clock gone wrong). */
export const MAX_SKEW_SECONDS = 300;

/**
 * Request headers that are themselves a shared secret (Telegram sends the
 * webhook's `secret_token` back as it is): the gateway forwards their
 * SHA-256 (hex), so the secret never crosses the broker, and the check
 * hashes the stored one.
 */
export const SECRET_HEADERS = ["x-telegram-bot-api-secret-token"];

/** The headers a callback's action gets from the gateway: no cookie, the secret ones hashed. */
export function forwardedHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[] | undefined> {
  const out = { ...headers };
  delete out.cookie;
  for (const name of SECRET_HEADERS) {
    const value = out[name];
    if (typeof value === "string") out[name] = sha256Hex(value);
    else delete out[name];
  }
  return out;
}

/** What arrived, as the gateway forwarded it (`forwardedHeaders`). */
export interface Callback {
  /** The exact bytes of the body. */
  rawBody: string;
  headers: Record<string, string | string[] | undefined>;
  /** The URL the provider called, as it knows it (PUBLIC_URL + path + query): Twilio signs it. */
  url: string;
}

export const header = (cb: Callback, name: string): string | undefined => {
  const value = cb.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
};

export const fresh = (seconds: number, now: Date) =>
  Number.isFinite(seconds) && Math.abs(now.getTime() / 1000 - seconds) <= MAX_SKEW_SECONDS;

/** One thing a provider tells us, in our words. */
export type ProviderEvent =
  | {
      kind: "delivered" | "bounced" | "complained" | "failed" | "opened" | "clicked";
      /** Ours, when the provider carried it back (custom args, variables, client ref). */
      messageId: string | null;
      providerMessageId: string | null;
      /** The provider's id of this event, to apply it once. */
      eventId: string | null;
      /** Bounces: permanent (a dead address) or not. */
      hard?: boolean;
      reason?: string | null;
      url?: string | null;
    }
  | {
      kind: "inbound";
      providerMessageId: string | null;
      eventId: string | null;
      from: string;
      to: string;
      text: string;
      /** Email: the mail's subject. */
      subject?: string;
      /** The provider ids of the messages this one answers (email In-Reply-To and References; a chat's replied-to message). */
      references?: string[];
      /** What channel commands are matched on when the channel writes them its own way (Telegram's `/stop`). */
      command?: string;
      /** A deep link's one-time token binding the sender to a contact (Telegram's `/start <token>`). */
      linkToken?: string;
      /** How the sender calls themselves, for the contact made from them. */
      name?: { firstName: string | null; lastName: string | null };
      /** When the person sent it, when the provider says (a retried callback may arrive days later). */
      sentAt?: Date | null;
    };

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export const str = (value: unknown): string | null => (typeof value === "string" && value ? value : null);
