import crypto from "node:crypto";
import { fresh, header, parseJson, str, type Callback, type ProviderEvent } from "../callbacks";

/** emailapi1 (SendGrid): base64 ECDSA P-256 SHA-256 of the timestamp header + body, with the webhook's public key (base64 DER). */
export function verifyCallback(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
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

/** SendGrid's event webhook: an array of events; `sg_message_id` starts with the `X-Message-Id` we kept. */
export function readEvents(body: string): ProviderEvent[] {
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
