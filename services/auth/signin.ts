import { authSecret } from "../../lib/auth-secret";
import { config } from "../../lib/config";
import { hmacSha256Hex, randomHex, safeEqual } from "../../lib/crypto";
import { burnPasswordCheck, verifyPassword } from "../../lib/passwords";
import { consume, record, refuseWhenSpent, reset, type LimitSpec } from "../../lib/rate-limit";
import {
  createCsrfToken,
  decodeSession,
  encodeSession,
  SESSION_MAX_AGE,
  sessionIdOf,
  verifyCsrfCookie,
  type SessionClaims,
} from "../../lib/session-token";
import { findUserByEmail, revokeSession, sessionActive, userView, type UserView } from "./auth.repo";
import { clearSessionCookies, cookieNames, readSessionCookie, setCookie } from "./cookies";
import { authBase, credentialsErrorUrl, resolveCallbackUrl, wantsJson } from "./nextauth";

/**
 * The NextAuth v4 credentials flow. Each function returns an outcome the
 * service turns into HTTP: a JSON body or a redirect, a status, cookies.
 */
export interface AuthOutcome {
  status: number;
  body?: unknown;
  redirect?: string;
  cookies: string[];
  /** A session this request ended: every gateway forgets it at once. */
  revokedSessionId?: string;
}

export interface AuthRequest {
  body: Record<string, unknown>;
  cookies: Record<string, string>;
  isJsonBody: boolean;
  ip: string;
}

const origin = () => config().publicUrl;

/** JSON `{url}` with the status when the client asked for JSON; otherwise a 302 to the url. */
function respond(req: AuthRequest, status: number, url: string, cookies: string[]): AuthOutcome {
  if (req.isJsonBody || wantsJson(req.body)) return { status, body: { url }, cookies };
  return { status: 302, redirect: url, cookies };
}

/** The csrf token of a valid cookie, or a new token with the cookie that carries it. */
export function csrf(cookies: Record<string, string>): { token: string; cookies: string[] } {
  const names = cookieNames();
  const existing = verifyCsrfCookie(cookies[names.csrfToken], authSecret());
  if (existing) return { token: existing, cookies: [] };
  const fresh = createCsrfToken(authSecret());
  return { token: fresh.token, cookies: [setCookie(names.csrfToken, fresh.cookieValue)] };
}

/** Double-submit check: the body's csrfToken equals the token in a valid cookie. */
function csrfVerified(req: AuthRequest): boolean {
  const token = verifyCsrfCookie(req.cookies[cookieNames().csrfToken], authSecret());
  return Boolean(token) && typeof req.body.csrfToken === "string" && safeEqual(req.body.csrfToken, token!);
}

/**
 * Sign-in limits that an attacker cannot turn against the account's owner:
 * the tight limit counts one email from one client IP (reset by a success);
 * one IP gets a wider allowance over all emails; and failures for one email
 * from everywhere put untrusted clients on a backoff that a device the owner
 * signed in from before (its device cookie) does not wait for.
 */
const SIGNIN_PER_EMAIL_IP: LimitSpec = { name: "signin-email-ip", points: 10, durationSeconds: 15 * 60 };
const SIGNIN_PER_IP: LimitSpec = { name: "signin-ip", points: 100, durationSeconds: 15 * 60 };
const FAILURES_PER_EMAIL: LimitSpec = { name: "signin-email-failures", points: 20, durationSeconds: 15 * 60 };

const DEVICE_COOKIE_MAX_AGE = 365 * 24 * 60 * 60;
const deviceCookieName = () => `${cookieNames().secure ? "__Secure-" : ""}svc.trusted-device`;
const deviceSignature = (nonce: string, email: string) =>
  hmacSha256Hex(authSecret(), `trusted-device.${nonce}.${email}`);

/** OWASP's device cookie: proof that this browser signed in as `email` before. */
function deviceCookie(email: string): string {
  const nonce = randomHex(16);
  return setCookie(deviceCookieName(), `${nonce}.${deviceSignature(nonce, email)}`, {
    maxAge: DEVICE_COOKIE_MAX_AGE,
    path: "/api/auth",
  });
}

function trustedDevice(req: AuthRequest, email: string): boolean {
  const [nonce, signature] = (req.cookies[deviceCookieName()] ?? "").split(".");
  return Boolean(nonce && signature) && safeEqual(signature, deviceSignature(nonce, email));
}

async function sessionCookie(
  user: { id: string; name: string; email: string },
  sessionId?: string,
): Promise<string> {
  const claims: SessionClaims = { name: user.name, email: user.email, sub: user.id };
  if (sessionId) claims.sid = sessionId;
  const token = await encodeSession(claims, authSecret());
  return setCookie(cookieNames().sessionToken, token, {
    expires: new Date(Date.now() + SESSION_MAX_AGE * 1000),
  });
}

/** POST /api/auth/callback/credentials */
export async function credentialsCallback(req: AuthRequest): Promise<AuthOutcome> {
  if (!req.isJsonBody && !csrfVerified(req)) {
    const fresh = csrf(req.cookies);
    return respond(req, 200, `${authBase(origin())}/signin?csrf=true`, fresh.cookies);
  }
  const email = typeof req.body.email === "string" ? req.body.email.trim().toLowerCase() : "";
  const password = typeof req.body.password === "string" ? req.body.password : "";
  // Throttle before the password hash is computed.
  await consume(SIGNIN_PER_IP, req.ip);
  if (email) {
    await consume(SIGNIN_PER_EMAIL_IP, `${email}|${req.ip}`);
    if (!trustedDevice(req, email)) await refuseWhenSpent(FAILURES_PER_EMAIL, email);
  }

  const user = email && password ? await findUserByEmail(email) : null;
  const valid = user
    ? await verifyPassword(password, user.passwordHash)
    : (await burnPasswordCheck(password), false);
  if (!user || !valid) {
    if (email) await record(FAILURES_PER_EMAIL, email);
    return respond(req, 401, credentialsErrorUrl(origin()), []);
  }

  await reset(SIGNIN_PER_EMAIL_IP, `${email}|${req.ip}`);
  const url = resolveCallbackUrl(req.body.callbackUrl, origin());
  return respond(req, 200, url, [
    await sessionCookie(user),
    setCookie(cookieNames().callbackUrl, url),
    deviceCookie(email),
  ]);
}

/** The user these credentials are of, or null: `npm run setup` run again for an existing account. */
export async function checkCredentials(email: string, password: string): Promise<UserView | null> {
  const user = await findUserByEmail(email);
  if (!user) {
    await burnPasswordCheck(password); // as long as a real check: the answer's time does not tell who has an account
    return null;
  }
  return (await verifyPassword(password, user.passwordHash)) ? userView(user) : null;
}

/** The claims of the request's session cookie while that session is still live, else null. */
export async function liveSession(cookies: Record<string, string>): Promise<SessionClaims | null> {
  const token = readSessionCookie(cookies);
  if (!token) return null;
  const claims = await decodeSession(token, authSecret());
  if (!claims?.sub) return null;
  return (await sessionActive(claims.sub, sessionIdOf(claims), claims.iat ?? 0)) ? claims : null;
}

/**
 * GET /api/auth/session (and its POST, the client's `update()`): the session
 * with its cookie rolled forward under the same session id, or `{}` (a
 * cookie that is invalid, expired or ended is cleared).
 */
export async function session(cookies: Record<string, string>): Promise<AuthOutcome> {
  if (!readSessionCookie(cookies)) return { status: 200, body: {}, cookies: [] };
  const claims = await liveSession(cookies);
  if (!claims) return { status: 200, body: {}, cookies: clearSessionCookies(cookies) };
  const user = { id: claims.sub!, name: String(claims.name ?? ""), email: String(claims.email ?? "") };
  return {
    status: 200,
    body: { user, expires: new Date(Date.now() + SESSION_MAX_AGE * 1000).toISOString() },
    cookies: [await sessionCookie(user, sessionIdOf(claims))],
  };
}

/** POST /api/auth/session: NextAuth answers 400 `{}` unless the csrf token is verified. */
export async function updateSession(req: AuthRequest): Promise<AuthOutcome> {
  if (!csrfVerified(req)) return { status: 400, body: {}, cookies: [] };
  return session(req.cookies);
}

/** POST /api/auth/signout: ends the session on the server and clears its cookie (and every chunk of it). */
export async function signout(req: AuthRequest): Promise<AuthOutcome> {
  if (!req.isJsonBody && !csrfVerified(req)) {
    return respond(req, 200, `${authBase(origin())}/signout?csrf=true`, []);
  }
  const token = readSessionCookie(req.cookies);
  const claims = token ? await decodeSession(token, authSecret()) : null;
  let revokedSessionId: string | undefined;
  if (claims?.sub) {
    revokedSessionId = sessionIdOf(claims);
    await revokeSession(revokedSessionId, claims.sub, new Date(claims.exp! * 1000));
  }
  const url = resolveCallbackUrl(req.body.callbackUrl, origin());
  return {
    ...respond(req, 200, url, [
      setCookie(cookieNames().callbackUrl, url),
      ...clearSessionCookies(req.cookies),
    ]),
    revokedSessionId,
  };
}

export function providers() {
  const base = authBase(origin());
  return {
    credentials: {
      id: "credentials",
      name: "Credentials",
      type: "credentials",
      signinUrl: `${base}/signin/credentials`,
      callbackUrl: `${base}/callback/credentials`,
    },
  };
}
