import crypto from "node:crypto";
import jwt from "jsonwebtoken";
import { LRUCache } from "lru-cache";
import { authSecret } from "../../lib/auth-secret";
import { config } from "../../lib/config";
import { safeEqual } from "../../lib/crypto";
import { invalidToken } from "../../lib/errors";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Signed public links (contract 6): JWT HS256 tokens for unsubscribe,
 * preferences and confirm, and the tracking signature `s` of opens and
 * clicks. Each key is HKDF-SHA256 of AUTH_SECRET with its own `info`, so a
 * leaked link key reveals nothing about sessions or the other key.
 */

/** `page`: a landing page as served (`sub` its id), so the website script knows the sandboxed page is the workspace's. */
export type LinkType = "unsubscribe" | "preferences" | "confirm" | "visitor" | "asset" | "page";

export interface LinkClaims {
  typ: LinkType;
  ws: WorkspaceId;
  sub: string;
  ch?: string;
  mid?: string;
  src?: string;
  /** `confirm` from a form's double opt-in: that form's `confirmRedirectUrl` is where the link leads. */
  fid?: string;
}

const DAY_SECONDS = 86_400;
/** Keys are KeyObjects made once: jsonwebtoken turns a Buffer into one on every sign, which costs more than the signature. */
const keys = new LRUCache<string, { secret: string; key: crypto.KeyObject }>({ max: 16 });

function derivedKey(info: string): crypto.KeyObject {
  const secret = authSecret();
  const cached = keys.get(info);
  if (cached?.secret === secret) return cached.key;
  const key = crypto.createSecretKey(
    Buffer.from(crypto.hkdfSync("sha256", secret, Buffer.alloc(0), info, 32)),
  );
  keys.set(info, { secret, key });
  return key;
}

const linkKey = () => derivedKey("cms link token v1");
const trackingKey = () => derivedKey("cms tracking v1");

/** A link token: 365 days, `confirm` 7, `page` 1 (a visit's). */
export function signLinkToken(claims: LinkClaims): string {
  const days = claims.typ === "confirm" ? 7 : claims.typ === "page" ? 1 : 365;
  return jwt.sign(claims, linkKey(), { algorithm: "HS256", expiresIn: days * DAY_SECONDS });
}

/** The token's claims when it verifies as `typ` (one of `types`); else 400 INVALID_TOKEN. */
export function verifyLinkToken(
  token: string | undefined,
  types: LinkType[],
): LinkClaims & { iat: number; exp: number } {
  if (!token) throw invalidToken("The link has no token");
  let claims: jwt.JwtPayload | string;
  try {
    claims = jwt.verify(token, linkKey(), { algorithms: ["HS256"] });
  } catch {
    throw invalidToken();
  }
  if (
    typeof claims !== "object" ||
    !types.includes(claims.typ) ||
    typeof claims.ws !== "string" ||
    typeof claims.sub !== "string"
  )
    throw invalidToken();
  return claims as LinkClaims & { iat: number; exp: number };
}

/** The contact a link token of `types` names in `workspaceId`; null without a token; 400 INVALID_TOKEN for a bad one or another workspace's. */
export function linkedContact(
  token: string | undefined,
  types: LinkType[],
  workspaceId: WorkspaceId,
): string | null {
  if (!token) return null;
  const claims = verifyLinkToken(token, types);
  if (claims.ws !== workspaceId) throw invalidToken("The token is for another workspace");
  return claims.sub;
}

/** base64url of the first 16 bytes of HMAC-SHA256(`<messageId>:<u>`); `u` is empty for the open pixel. */
export function trackingSignature(messageId: string, code = ""): string {
  return crypto
    .createHmac("sha256", trackingKey())
    .update(`${messageId}:${code}`)
    .digest()
    .subarray(0, 16)
    .toString("base64url");
}

export const trackingSignatureValid = (messageId: string, code: string, s: string | undefined) =>
  typeof s === "string" && safeEqual(s, trackingSignature(messageId, code));

const base = () => config().publicUrl;

export function trackingUrl(messageId: string, code?: string): string {
  const query = code
    ? `u=${encodeURIComponent(code)}&s=${trackingSignature(messageId, code)}`
    : `s=${trackingSignature(messageId)}`;
  return `${base()}/api/messages/${encodeURIComponent(messageId)}/track?${query}`;
}

export const unsubscribeUrl = (token: string) =>
  `${base()}/api/unsubscribe?token=${encodeURIComponent(token)}`;
export const preferencesUrl = (token: string) =>
  `${base()}/api/preferences?token=${encodeURIComponent(token)}`;
export const confirmUrl = (token: string) =>
  `${base()}/api/preferences/confirm?token=${encodeURIComponent(token)}`;
export const assetDownloadUrl = (assetId: string, token: string) =>
  `${base()}/api/assets/${encodeURIComponent(assetId)}/download?token=${encodeURIComponent(token)}`;

/**
 * An http(s) address in a plain-text part: up to white space, a bracket or a
 * quote, without the punctuation that ends a sentence after it (a derived
 * text part writes each link's address in brackets after its text).
 */
const TEXT_URL = /https?:\/\/[^\s<>"'[\]]+?(?=[.,;:!?)]*(?:[\s<>"'[\]]|$))/g;

/** The addresses of a text part a person may open, except our own (unsubscribe, preferences, tracking). */
export function trackableTextLinks(text: string, publicUrl: string): string[] {
  const urls = new Set<string>();
  for (const [url] of text.matchAll(TEXT_URL)) if (!url.startsWith(`${publicUrl}/api/`)) urls.add(url);
  return [...urls];
}

/** Each trackable address of a text part through its short link: the same signed URL the HTML's link gets. */
export function rewriteTextLinks(text: string, messageId: string, codes: Map<string, string>): string {
  return text.replace(TEXT_URL, (url) => {
    const code = codes.get(url);
    return code ? trackingUrl(messageId, code) : url;
  });
}
