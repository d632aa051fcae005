import crypto from "node:crypto";
import { EncryptJWT, jwtDecrypt, type JWTPayload } from "jose";
import { randomHex, safeEqual, sha256Hex } from "./crypto";

/**
 * NextAuth v4 session and CSRF tokens, byte-compatible with next-auth 4.24:
 * compact JWE (`dir`, `A256GCM`) keyed by HKDF-SHA256(secret, salt "", info
 * "NextAuth.js Generated Encryption Key", 32 bytes); CSRF cookie
 * `token|sha256(token + secret)`.
 */

export const SESSION_MAX_AGE = 30 * 24 * 60 * 60;

/** Broadcast when sessions end (sign-out, password reset): every gateway forgets them at once. */
export const SESSIONS_REVOKED_EVENT = "auth.sessions.revoked";
const CLOCK_TOLERANCE = 15;

/** HKDF runs once per secret, not once per request. */
let derived: { secret: string; key: Uint8Array } | undefined;

export function deriveEncryptionKey(secret: string): Uint8Array {
  if (derived?.secret !== secret) {
    derived = {
      secret,
      key: new Uint8Array(crypto.hkdfSync("sha256", secret, "", "NextAuth.js Generated Encryption Key", 32)),
    };
  }
  return derived.key;
}

export interface SessionClaims extends JWTPayload {
  name?: string | null;
  email?: string | null;
  picture?: string | null;
  sub?: string;
  /** The session this token belongs to, kept when the token is rolled forward (NextAuth's own tokens have only `jti`). */
  sid?: string;
}

/** The id a sign-out revokes: stable across the tokens of one session. */
export const sessionIdOf = (claims: SessionClaims): string => claims.sid ?? claims.jti!;

export async function encodeSession(
  claims: SessionClaims,
  secret: string,
  maxAge = SESSION_MAX_AGE,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new EncryptJWT(claims)
    .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
    .setIssuedAt(now)
    .setExpirationTime(now + maxAge)
    .setJti(crypto.randomUUID())
    .encrypt(deriveEncryptionKey(secret));
}

/**
 * The claims of a valid token, or null for anything else (tampered, expired,
 * other algorithm, or without `exp` or `jti`: a token that never expires or
 * cannot be named cannot be ended).
 */
export async function decodeSession(token: string, secret: string): Promise<SessionClaims | null> {
  try {
    const { payload } = await jwtDecrypt(token, deriveEncryptionKey(secret), {
      clockTolerance: CLOCK_TOLERANCE,
      keyManagementAlgorithms: ["dir"],
      contentEncryptionAlgorithms: ["A256GCM"],
      requiredClaims: ["exp", "jti"],
    });
    return payload as SessionClaims;
  } catch {
    return null;
  }
}

export const csrfHash = (token: string, secret: string) => sha256Hex(`${token}${secret}`);

export function createCsrfToken(secret: string): { token: string; cookieValue: string } {
  const token = randomHex(32);
  return { token, cookieValue: `${token}|${csrfHash(token, secret)}` };
}

/** The token inside a csrf cookie value whose hash checks out, else null. Accepts `%7C` for `|`. */
export function verifyCsrfCookie(cookieValue: string | undefined, secret: string): string | null {
  if (!cookieValue) return null;
  let decoded = cookieValue;
  try {
    if (cookieValue.includes("%")) decoded = decodeURIComponent(cookieValue);
  } catch {
    return null; // malformed percent-encoding: not a cookie we made
  }
  const [token, hash] = decoded.split("|");
  if (!token || !hash) return null;
  return safeEqual(hash, csrfHash(token, secret)) ? token : null;
}
