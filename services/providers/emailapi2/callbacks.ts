import { hmacSha256Hex, safeEqual } from "../../../lib/crypto";
import { fresh, parseJson, str, type Callback, type ProviderEvent } from "../callbacks";

/**
 * emailapi2 (Mailgun). Webhooks are JSON with `signature.{timestamp, token,
 * signature}`; inbound routes forward mail as a form (`sender`, `recipient`,
 * `subject`, `body-plain`, `stripped-text`, `Message-Id`, `In-Reply-To`,
 * `References`) with `timestamp`, `token` and `signature` as fields. Either
 * way the signature is the hex HMAC-SHA256 of timestamp + token.
 */

/** A route's forwarded mail: the form's fields, or null when the body is not a form of one. */
function inboundForm(body: string): URLSearchParams | null {
  if (body.trimStart().startsWith("{")) return null;
  const form = new URLSearchParams(body);
  return form.has("sender") || form.has("recipient") ? form : null;
}

export function verifyCallback(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
  const key = config.webhookSigningKey;
  const form = inboundForm(cb.rawBody);
  const signed = form
    ? { timestamp: form.get("timestamp"), token: form.get("token"), signature: form.get("signature") }
    : (parseJson(cb.rawBody) as { signature?: Record<string, unknown> } | null)?.signature;
  if (typeof key !== "string" || !signed) return false;
  const { timestamp, token, signature } = signed;
  if (typeof timestamp !== "string" || typeof token !== "string" || typeof signature !== "string")
    return false;
  if (!fresh(Number(timestamp), now)) return false;
  return safeEqual(hmacSha256Hex(key, timestamp + token), signature);
}

/** Message ids of a header (`<a@x> <b@y>`), without their angle brackets. */
const messageIds = (header: string | null): string[] =>
  (header?.match(/<[^<>\s]+>/g) ?? []).map((id) => id.slice(1, -1));

/** A route's forwarded mail as an inbound message: the reply's own text (quoted history stripped) when Mailgun found it. */
function readInbound(form: URLSearchParams): ProviderEvent[] {
  const id = messageIds(form.get("Message-Id"))[0] ?? str(form.get("Message-Id"));
  const references = [...messageIds(form.get("References")), ...messageIds(form.get("In-Reply-To"))];
  return [
    {
      kind: "inbound",
      providerMessageId: id,
      eventId: id ? `inbound:${id}` : null,
      from: form.get("sender") ?? "",
      to: form.get("recipient") ?? "",
      text: str(form.get("stripped-text")) ?? form.get("body-plain") ?? "",
      subject: form.get("subject") ?? "",
      references: [...new Set(references)],
    },
  ];
}

/** Mailgun's webhook: one event in `event-data`; `failed` with `severity` permanent is a hard bounce. */
export function readEvents(body: string): ProviderEvent[] {
  const form = inboundForm(body);
  if (form) return readInbound(form);
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
