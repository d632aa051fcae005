import jwt from "jsonwebtoken";
import { sha256Hex } from "../../../lib/crypto";
import { fresh, header, parseJson, str, type Callback, type ProviderEvent } from "../callbacks";

/** smsapi2 (Vonage): `Authorization: Bearer` JWT HS256 with the signature secret, `payload_hash` the body's SHA-256. */
export function verifyCallback(cb: Callback, config: Record<string, unknown>, now: Date): boolean {
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

/** Vonage (Messages API webhooks, JSON): a status with `client_ref` naming our message, or an inbound text. */
export function readEvents(body: string): ProviderEvent[] {
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
