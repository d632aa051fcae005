import { hmacSha256Hex, safeEqual } from "../../../lib/crypto";
import { fresh, parseJson, str, type Callback, type ProviderEvent } from "../callbacks";

/** emailapi2 (Mailgun): `signature.{timestamp, token, signature}` in the body, hex HMAC-SHA256 of timestamp + token. */
export function verifyCallback(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
  const key = config.webhookSigningKey;
  const signed = (parseJson(cb.rawBody) as { signature?: Record<string, unknown> } | null)?.signature;
  if (typeof key !== "string" || !signed) return false;
  const { timestamp, token, signature } = signed;
  if (typeof timestamp !== "string" || typeof token !== "string" || typeof signature !== "string")
    return false;
  if (!fresh(Number(timestamp), now)) return false;
  return safeEqual(hmacSha256Hex(key, timestamp + token), signature);
}

/** Mailgun's webhook: one event in `event-data`; `failed` with `severity` permanent is a hard bounce. */
export function readEvents(body: string): ProviderEvent[] {
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
