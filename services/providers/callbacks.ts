import crypto from "node:crypto";
import jwt from "jsonwebtoken";
import { hmacSha256Hex, safeEqual, sha256Hex } from "../../lib/crypto";
import type { ProviderType } from "./providers.schemas";

/**
 * Provider callbacks (contract 5), pure: each provider's own signature
 * scheme, and its events read into one shape the send path applies.
 */

/** A signed timestamp further than this from our clock is refused (a replay, or a clock gone wrong). */
export const MAX_SKEW_SECONDS = 300;

/** What arrived, as the gateway saw it. */
export interface Callback {
  /** The exact bytes of the body. */
  rawBody: string;
  headers: Record<string, string | string[] | undefined>;
  /** The URL the provider called, as it knows it (PUBLIC_URL + path + query): Twilio signs it. */
  url: string;
}

const header = (cb: Callback, name: string): string | undefined => {
  const value = cb.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
};

const fresh = (seconds: number, now: Date) =>
  Number.isFinite(seconds) && Math.abs(now.getTime() / 1000 - seconds) <= MAX_SKEW_SECONDS;

/** emailapi1 (SendGrid): base64 ECDSA P-256 SHA-256 of the timestamp header + body, with the webhook's public key (base64 DER). */
function verifyEmailapi1(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
  const signature = header(cb, "X-Twilio-Email-Event-Webhook-Signature");
  const timestamp = header(cb, "X-Twilio-Email-Event-Webhook-Timestamp");
  const publicKey = config.webhookPublicKey;
  if (!signature || !timestamp || typeof publicKey !== "string" || !fresh(Number(timestamp), now))
    return false;
  try {
    const key = crypto.createPublicKey({
      key: Buffer.from(publicKey, "base64"),
      format: "der",
      type: "spki",
    });
    return crypto.verify(
      "sha256",
      Buffer.from(timestamp + cb.rawBody, "utf8"),
      key,
      Buffer.from(signature, "base64"),
    );
  } catch {
    return false;
  }
}

/** emailapi2 (Mailgun): `signature.{timestamp, token, signature}` in the body, hex HMAC-SHA256 of timestamp + token. */
function verifyEmailapi2(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
  const key = config.webhookSigningKey;
  const signed = (parseJson(cb.rawBody) as { signature?: Record<string, unknown> } | null)?.signature;
  if (typeof key !== "string" || !signed) return false;
  const { timestamp, token, signature } = signed;
  if (typeof timestamp !== "string" || typeof token !== "string" || typeof signature !== "string")
    return false;
  if (!fresh(Number(timestamp), now)) return false;
  return safeEqual(hmacSha256Hex(key, timestamp + token), signature);
}

/** smsapi1 (Twilio): `X-Twilio-Signature`, base64 HMAC-SHA1 of the URL and the sorted form parameters (name + value). */
function verifySmsapi1(cb: Callback, config: Record<string, unknown>): boolean {
  const signature = header(cb, "X-Twilio-Signature");
  if (!signature || typeof config.authToken !== "string") return false;
  const params = [...new URLSearchParams(cb.rawBody)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const data = cb.url + params.map(([name, value]) => name + value).join("");
  return safeEqual(
    crypto.createHmac("sha1", config.authToken).update(data, "utf8").digest("base64"),
    signature,
  );
}

/** smsapi2 (Vonage): `Authorization: Bearer` JWT HS256 with the signature secret, `payload_hash` the body's SHA-256. */
function verifySmsapi2(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
  const token = header(cb, "Authorization")?.replace(/^Bearer\s+/i, "");
  if (!token || typeof config.signatureSecret !== "string") return false;
  try {
    const claims = jwt.verify(token, config.signatureSecret, {
      algorithms: ["HS256"],
      clockTimestamp: Math.floor(now.getTime() / 1000),
    }) as jwt.JwtPayload;
    return (
      typeof claims.iat === "number" &&
      fresh(claims.iat, now) &&
      claims.payload_hash === sha256Hex(cb.rawBody)
    );
  } catch {
    return false;
  }
}

/** Whether the callback carries the provider's valid signature; false when the provider has no key to check it with. */
export function verifyCallback(
  type: ProviderType,
  cb: Callback,
  config: Record<string, unknown>,
  now = new Date(),
): boolean {
  switch (type) {
    case "emailapi1":
      return verifyEmailapi1(cb, config, now);
    case "emailapi2":
      return verifyEmailapi2(cb, config, now);
    case "smsapi1":
      return verifySmsapi1(cb, config);
    case "smsapi2":
      return verifySmsapi2(cb, config, now);
    default:
      return false;
  }
}

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
    };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const str = (value: unknown): string | null => (typeof value === "string" && value ? value : null);

/** SendGrid's event webhook: an array of events; `sg_message_id` starts with the `X-Message-Id` we kept. */
function emailapi1Events(body: string): ProviderEvent[] {
  const events = parseJson(body);
  if (!Array.isArray(events)) return [];
  return events.flatMap((e: Record<string, unknown>): ProviderEvent[] => {
    const base = {
      messageId: str(e.messageId),
      providerMessageId: str(e.sg_message_id)?.split(".")[0] ?? null,
      eventId: str(e.sg_event_id),
    };
    const reason = str(e.reason) ?? str(e.response);
    switch (e.event) {
      case "delivered":
        return [{ kind: "delivered", ...base }];
      case "bounce":
        // SendGrid's `blocked` bounces are the receiving server refusing for now; `bounce` ones are permanent.
        return [{ kind: "bounced", ...base, hard: e.type !== "blocked", reason }];
      case "dropped":
        return [{ kind: "failed", ...base, reason }];
      case "spamreport":
        return [{ kind: "complained", ...base }];
      case "open":
        return [{ kind: "opened", ...base }];
      case "click":
        return [{ kind: "clicked", ...base, url: str(e.url) }];
      default:
        return [];
    }
  });
}

/** Mailgun's webhook: one event in `event-data`; `failed` with `severity` permanent is a hard bounce. */
function emailapi2Events(body: string): ProviderEvent[] {
  const data = (parseJson(body) as { "event-data"?: Record<string, unknown> } | null)?.["event-data"];
  if (!data) return [];
  const message = data.message as { headers?: Record<string, unknown> } | undefined;
  const variables = data["user-variables"] as Record<string, unknown> | undefined;
  const status = data["delivery-status"] as Record<string, unknown> | undefined;
  const base = {
    messageId: str(variables?.messageId),
    providerMessageId: str(message?.headers?.["message-id"]),
    eventId: str(data.id),
  };
  switch (data.event) {
    case "delivered":
      return [{ kind: "delivered", ...base }];
    case "failed":
      return [
        {
          kind: "bounced",
          ...base,
          hard: data.severity === "permanent",
          reason: str(status?.description) ?? str(status?.message) ?? str(data.reason),
        },
      ];
    case "complained":
      return [{ kind: "complained", ...base }];
    case "opened":
      return [{ kind: "opened", ...base }];
    case "clicked":
      return [{ kind: "clicked", ...base, url: str(data.url) }];
    default:
      return [];
  }
}

/** Twilio: a status callback (`MessageStatus`) or an incoming message (`Body` without a status). */
function smsapi1Events(body: string): ProviderEvent[] {
  const form = new URLSearchParams(body);
  const sid = form.get("MessageSid") ?? form.get("SmsSid");
  const status = form.get("MessageStatus") ?? form.get("SmsStatus");
  if (form.has("Body") && (!status || status === "received"))
    return [
      {
        kind: "inbound",
        providerMessageId: sid,
        eventId: sid,
        from: form.get("From") ?? "",
        to: form.get("To") ?? "",
        text: form.get("Body") ?? "",
      },
    ];
  const base = {
    messageId: null,
    providerMessageId: sid,
    eventId: sid && status ? `${sid}:${status}` : null,
  };
  if (status === "delivered") return [{ kind: "delivered", ...base }];
  if (status === "undelivered" || status === "failed") {
    const code = form.get("ErrorCode");
    return [{ kind: "failed", ...base, reason: code ? `${status} ${code}` : status }];
  }
  return [];
}

/** Vonage (Messages API webhooks, JSON): a status with `client_ref` naming our message, or an inbound text. */
function smsapi2Events(body: string): ProviderEvent[] {
  const e = parseJson(body) as Record<string, unknown> | null;
  if (!e) return [];
  const providerMessageId = str(e.message_uuid) ?? str(e.messageId) ?? str(e["message-id"]);
  if (typeof e.text === "string" && !e.status)
    return [
      {
        kind: "inbound",
        providerMessageId,
        eventId: providerMessageId,
        from: `+${String(e.from ?? e.msisdn ?? "").replace(/^\+/, "")}`,
        to: `+${String(e.to ?? "").replace(/^\+/, "")}`,
        text: e.text,
      },
    ];
  const base = {
    messageId: str(e.client_ref) ?? str(e["client-ref"]),
    providerMessageId,
    eventId: providerMessageId && typeof e.status === "string" ? `${providerMessageId}:${e.status}` : null,
  };
  const error = e.error as { title?: string; detail?: string } | undefined;
  switch (e.status) {
    case "delivered":
      return [{ kind: "delivered", ...base }];
    case "rejected":
    case "undeliverable":
    case "failed":
    case "expired":
      return [{ kind: "failed", ...base, reason: str(error?.detail) ?? str(error?.title) ?? e.status }];
    default:
      return [];
  }
}

/** The events of a callback, in our words; what we do not use (deferrals, `processed`, `sent`) is left out. */
export function readEvents(type: ProviderType, rawBody: string): ProviderEvent[] {
  switch (type) {
    case "emailapi1":
      return emailapi1Events(rawBody);
    case "emailapi2":
      return emailapi2Events(rawBody);
    case "smsapi1":
      return smsapi1Events(rawBody);
    case "smsapi2":
      return smsapi2Events(rawBody);
    default:
      return [];
  }
}
