import { hmacSha256Hex, randomHex, safeEqual } from "../../lib/crypto";

/** Receivers reject a delivery whose timestamp is further than this from now (spec 8). */
export const TOLERANCE_SECONDS = 300;

/** A new endpoint secret: `whsec_` + 48 hex characters (contract); the HMAC key is the whole string. */
export const newSecret = () => `whsec_${randomHex(24)}`;

/** Outbound signature (spec 6.1): lowercase hex HMAC-SHA256 of `<unix-seconds>.<raw body>`. */
export const signOutbound = (secret: string, timestamp: number, body: string) =>
  hmacSha256Hex(secret, `${timestamp}.${body}`);

/** Inbound signature (spec 5): lowercase hex HMAC-SHA256 of the raw request body. */
export const signInbound = (secret: string, rawBody: string | Buffer) => hmacSha256Hex(secret, rawBody);

/** Constant-time check of an inbound `X-Webhook-Signature` header. */
export function verifyInbound(secret: string, rawBody: string | Buffer, header: string | undefined): boolean {
  if (!header) return false;
  return safeEqual(header.trim().toLowerCase(), signInbound(secret, rawBody));
}

/**
 * What a customer's receiver does with one of our deliveries (documented in
 * docs/webhooks.md): the timestamp within the tolerance, then the signature
 * over `<timestamp>.<raw body>` compared in constant time.
 */
export function verifyOutbound(
  secret: string,
  rawBody: string,
  headers: { signature?: string; timestamp?: string },
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = TOLERANCE_SECONDS,
): boolean {
  if (!headers.signature || !headers.timestamp || !/^\d+$/.test(headers.timestamp)) return false;
  const timestamp = Number(headers.timestamp);
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  return safeEqual(headers.signature, signOutbound(secret, timestamp, rawBody));
}

/** Spec 6.1 body, serialised once at fan-out: every attempt signs and sends exactly these bytes. */
export function deliveryBody(payload: { event: string; timestamp: string; data: unknown }): string {
  return JSON.stringify({ event: payload.event, timestamp: payload.timestamp, data: payload.data });
}
