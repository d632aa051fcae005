import type { IncomingMessage } from "node:http";
import type { ActionSchema, ServiceBroker } from "moleculer";
import { parse as parseCookies } from "cookie";
import { SYSTEM, type Principal } from "../../lib/access";
import { authSecret } from "../../lib/auth-secret";
import { config } from "../../lib/config";
import { safeEqual, sha256Hex } from "../../lib/crypto";
import { unauthorized } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { decodeSession } from "../../lib/session-token";
import { readSessionCookie } from "../auth/cookies";

export interface GatewayRequest extends IncomingMessage {
  $action?: ActionSchema;
  rawBody?: Buffer;
  cookies?: Record<string, string>;
  originalUrl?: string;
}

export interface VerifiedApiKey {
  id: string;
  workspaceId: string;
  scopes: string[];
  expiresAt: string | null;
  lastUsedAt: string | null;
}

/** Client IP per the contract: X-Forwarded-For, then X-Real-IP, then the socket (unless TRUST_PROXY=false). */
export function clientIp(req: IncomingMessage): string {
  if (config().trustProxy) {
    const forwarded = req.headers["x-forwarded-for"];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim();
    if (first) return first;
    const real = req.headers["x-real-ip"];
    if (typeof real === "string" && real.trim()) return real.trim();
  }
  return req.socket.remoteAddress ?? "unknown";
}

const TOUCH_INTERVAL_MS = 60_000;
const lastTouched = new Map<string, number>();

/** `lastUsedAt` is written at most once a minute per key. */
function touchApiKey(broker: ServiceBroker, key: VerifiedApiKey) {
  const now = Date.now();
  const seen = Math.max(lastTouched.get(key.id) ?? 0, key.lastUsedAt ? Date.parse(key.lastUsedAt) : 0);
  if (now - seen < TOUCH_INTERVAL_MS) return;
  lastTouched.set(key.id, now);
  broker.call("auth.touchApiKey", { id: key.id }).catch((err) => broker.logger.warn("touchApiKey failed", err));
}

async function principalFromBearer(broker: ServiceBroker, token: string): Promise<Principal | null> {
  if (token.startsWith("svc_")) {
    const key = (await broker.call("auth.verifyApiKey", { keyHash: sha256Hex(token) })) as VerifiedApiKey | null;
    if (!key || (key.expiresAt && Date.parse(key.expiresAt) <= Date.now())) return null;
    touchApiKey(broker, key);
    return { kind: "apiKey", apiKeyId: key.id, workspaceId: key.workspaceId, scopes: key.scopes };
  }
  // NextAuth's getToken also accepts the session JWE (URL-encoded) as a bearer token; bad encoding is no token.
  let decoded: string;
  try {
    decoded = decodeURIComponent(token);
  } catch {
    return null;
  }
  return principalFromSession(decoded);
}

/**
 * Decrypted session tokens, keyed by the token string: decrypting the JWE on
 * every request costs more than the rest of authentication. An entry lives at
 * most SESSION_CACHE_TTL_MS and never past the token's own `exp`; only valid
 * tokens are kept, and the oldest entry goes when the cache is full.
 */
const SESSION_CACHE_TTL_MS = 30_000;
const SESSION_CACHE_MAX = 1_000;
const sessionCache = new Map<string, { principal: Principal; until: number }>();

async function principalFromSession(token: string | undefined): Promise<Principal | null> {
  if (!token) return null;
  const now = Date.now();
  const cached = sessionCache.get(token);
  if (cached) {
    if (cached.until > now) return { ...cached.principal };
    sessionCache.delete(token);
  }
  const claims = await decodeSession(token, authSecret());
  if (!claims?.sub) return null;
  const principal: Principal = { kind: "user", userId: claims.sub, email: claims.email ?? undefined, name: claims.name ?? undefined };
  const until = Math.min(now + SESSION_CACHE_TTL_MS, typeof claims.exp === "number" ? claims.exp * 1000 : now);
  if (until > now) {
    if (sessionCache.size >= SESSION_CACHE_MAX) sessionCache.delete(sessionCache.keys().next().value as string);
    sessionCache.set(token, { principal, until });
  }
  return principal;
}

/**
 * Resolve the caller into `ctx.meta.principal`. A bad credential is a 401
 * except on public routes, which simply run without a principal.
 */
export async function authenticateRequest(broker: ServiceBroker, ctx: AppContext, req: GatewayRequest): Promise<null> {
  req.cookies ??= parseCookies(req.headers.cookie ?? "");
  const isPublic = req.$action?.auth === "public";
  const header = req.headers.authorization;
  if (req.$action?.auth === "cron") {
    const secret = config().cronSecret;
    const token = /^Bearer\s+(.+)$/i.exec(header?.trim() ?? "")?.[1];
    if (!secret || !token || !safeEqual(token, secret)) throw unauthorized("A valid cron secret is required");
    ctx.meta.principal = SYSTEM;
    return null;
  }
  let principal: Principal | null = null;
  if (header) {
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    principal = match ? await principalFromBearer(broker, match[1].trim()) : null;
    if (!principal && !isPublic) throw unauthorized("Invalid or expired credentials");
  } else {
    principal = await principalFromSession(readSessionCookie(req.cookies));
  }
  if (principal) ctx.meta.principal = principal;
  return null;
}
