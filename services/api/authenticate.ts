import type { IncomingMessage } from "node:http";
import type { ActionSchema, ServiceBroker } from "moleculer";
import { parse as parseCookies } from "cookie";
import { LRUCache } from "lru-cache";
import proxyaddr from "proxy-addr";
import { SYSTEM, type Principal } from "../../lib/access";
import { authSecret } from "../../lib/auth-secret";
import { config } from "../../lib/config";
import { safeEqual, sha256Hex } from "../../lib/crypto";
import { forbidden, unauthorized } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { decodeSession, sessionIdOf } from "../../lib/session-token";
import { ownOrListedOrigin } from "../../lib/origins";
import { readSessionCookie } from "../auth/cookies";
import type { WorkspaceId } from "../../lib/tenancy";

export interface GatewayRequest extends IncomingMessage {
  $action?: ActionSchema;
  /** The route's alias moleculer-web matched (its action's name). */
  $alias?: { action?: string };
  rawBody?: Buffer;
  cookies?: Record<string, string>;
  originalUrl?: string;
  /** A HEAD request, answered as GET (see api.service.ts httpHandler). */
  headRequest?: boolean;
  /** Its request id, answered as `X-Request-Id` and carried by every call it makes (lib/request-id.ts). */
  requestId?: string;
}

export interface VerifiedApiKey {
  id: string;
  workspaceId: WorkspaceId;
  scopes: string[];
  expiresAt: string | null;
  lastUsedAt: string | null;
}

/**
 * Which peers may speak for the client with `X-Forwarded-For` (proxy-addr's
 * trust): TRUST_PROXY is `true` (every peer: only behind a proxy that
 * overwrites the header), `false` (none), a hop count, or a list of
 * addresses, CIDRs and proxy-addr's names (`loopback`, `linklocal`,
 * `uniquelocal`). The default trusts loopback and private peers: a local
 * proxy or a cluster's ingress, never a client on the open internet.
 */
let trusted: { setting: string; trust: (addr: string, hop: number) => boolean } | undefined;
export function trustFunction(): (addr: string, hop: number) => boolean {
  const setting = config().trustProxy;
  if (trusted?.setting !== setting) {
    let trust: (addr: string, hop: number) => boolean;
    if (setting === "true") trust = () => true;
    else if (setting === "false") trust = () => false;
    else if (/^\d+$/.test(setting)) trust = (_addr, hop) => hop < Number(setting);
    else
      trust = proxyaddr.compile(
        setting
          .split(",")
          .map((entry) => entry.trim())
          .filter(Boolean),
      );
    trusted = { setting, trust };
  }
  return trusted.trust;
}

/**
 * Client IP: the nearest address in `X-Forwarded-For` not added by a trusted
 * proxy (then `X-Real-IP` from a trusted peer), else the socket's address.
 */
export function clientIp(req: IncomingMessage): string {
  const peer = req.socket.remoteAddress ?? "unknown";
  const trust = trustFunction();
  if (req.headers["x-forwarded-for"]) return proxyaddr(req, trust);
  const real = req.headers["x-real-ip"];
  if (typeof real === "string" && real.trim() && peer !== "unknown" && trust(peer, 0)) return real.trim();
  return peer;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

function allowedOrigin(origin: string, req: IncomingMessage): boolean {
  if (ownOrListedOrigin(origin, config().corsOrigins)) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/**
 * A write authenticated by the session cookie must come from our own pages
 * or an allowed CORS origin (OWASP: Fetch Metadata, then Origin). Clients
 * that send neither header (curl, apps) cannot be a browser's forged request.
 */
function refuseCrossSiteWrite(req: GatewayRequest): void {
  if (SAFE_METHODS.has(req.method ?? "GET")) return;
  const origin = typeof req.headers.origin === "string" ? req.headers.origin : undefined;
  const site = req.headers["sec-fetch-site"];
  const crossSite =
    site === "same-site" || site === "cross-site"
      ? !origin || !allowedOrigin(origin, req)
      : site === undefined && origin !== undefined && !allowedOrigin(origin, req);
  if (crossSite) throw forbidden("A cross-site request may not use the session cookie to change anything");
}

const TOUCH_INTERVAL_MS = 60_000;
/** When this process last had each key touched (kept for the keys used most recently). */
const lastTouched = new LRUCache<string, number>({ max: 10_000 });

/** `lastUsedAt` is written at most once a minute per key. */
function touchApiKey(broker: ServiceBroker, key: VerifiedApiKey) {
  const now = Date.now();
  const seen = Math.max(lastTouched.get(key.id) ?? 0, key.lastUsedAt ? Date.parse(key.lastUsedAt) : 0);
  if (now - seen < TOUCH_INTERVAL_MS) return;
  lastTouched.set(key.id, now);
  broker
    .call("auth.touchApiKey", { id: key.id })
    .catch((err) => broker.logger.warn("touchApiKey failed", err));
}

async function principalFromBearer(broker: ServiceBroker, token: string): Promise<Principal | null> {
  if (token.startsWith("svc_")) {
    const key = (await broker.call("auth.verifyApiKey", {
      keyHash: sha256Hex(token),
    })) as VerifiedApiKey | null;
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
  return principalFromSession(broker, decoded);
}

/**
 * Live sessions, keyed by the token string: decrypting the JWE and asking
 * whether the session was ended cost more than the rest of authentication.
 * An entry lives at most SESSION_CACHE_TTL_MS and never past the token's own
 * `exp`; a sign-out or password reset clears it on every gateway at once
 * (`forgetSessions`), and the least recently used entry goes when the cache is full.
 */
const SESSION_CACHE_TTL_MS = 30_000;
interface CachedSession {
  principal: Principal;
  sessionId: string;
}
const sessionCache = new LRUCache<string, CachedSession>({ max: 1_000, ttl: SESSION_CACHE_TTL_MS });

/** Drop cached sessions that were just ended: one session, or every session of a user. */
export function forgetSessions(ended: { sessionId?: string; userId?: string }): void {
  const endedTokens = [...sessionCache.entries()]
    .filter(([, entry]) => {
      const principal = entry.principal as { userId?: string };
      return entry.sessionId === ended.sessionId || (ended.userId && principal.userId === ended.userId);
    })
    .map(([token]) => token);
  for (const token of endedTokens) sessionCache.delete(token);
}

async function principalFromSession(
  broker: ServiceBroker,
  token: string | undefined,
): Promise<Principal | null> {
  if (!token) return null;
  const now = Date.now();
  const cached = sessionCache.get(token);
  if (cached) return { ...cached.principal };
  const claims = await decodeSession(token, authSecret());
  if (!claims?.sub) return null;
  const sessionId = sessionIdOf(claims);
  const active = await broker.call("auth.sessionActive", {
    userId: claims.sub,
    sessionId,
    issuedAt: claims.iat ?? 0,
  });
  if (!active) return null;
  const principal: Principal = {
    kind: "user",
    userId: claims.sub,
    email: claims.email ?? undefined,
    name: claims.name ?? undefined,
  };
  const until = Math.min(now + SESSION_CACHE_TTL_MS, claims.exp! * 1000);
  if (until > now) sessionCache.set(token, { principal, sessionId }, { ttl: until - now });
  return principal;
}

/**
 * Resolve the caller into `ctx.meta.principal`. A bad credential is a 401
 * except on public routes, which simply run without a principal.
 */
export async function authenticateRequest(
  broker: ServiceBroker,
  ctx: AppContext,
  req: GatewayRequest,
): Promise<null> {
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
    principal = await principalFromSession(broker, readSessionCookie(req.cookies));
    if (principal && !isPublic) refuseCrossSiteWrite(req);
  }
  if (principal) ctx.meta.principal = principal;
  return null;
}
