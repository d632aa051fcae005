import { authSecret } from "../../lib/auth-secret";
import { config } from "../../lib/config";
import { burnPasswordCheck, verifyPassword } from "../../lib/passwords";
import { consume, reset, type LimitSpec } from "../../lib/rate-limit";
import { createCsrfToken, decodeSession, encodeSession, SESSION_MAX_AGE, verifyCsrfCookie } from "../../lib/session-token";
import { findUserByEmail } from "./auth.repo";
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
  return Boolean(token) && req.body.csrfToken === token;
}

const SIGNIN_PER_EMAIL: LimitSpec = { name: "signin-email", points: 10, durationSeconds: 15 * 60 };
const SIGNIN_PER_IP: LimitSpec = { name: "signin-ip", points: 100, durationSeconds: 15 * 60 };

async function sessionCookie(user: { id: string; name: string; email: string }): Promise<string> {
  const token = await encodeSession({ name: user.name, email: user.email, sub: user.id }, authSecret());
  return setCookie(cookieNames().sessionToken, token, { expires: new Date(Date.now() + SESSION_MAX_AGE * 1000) });
}

/** POST /api/auth/callback/credentials */
export async function credentialsCallback(req: AuthRequest): Promise<AuthOutcome> {
  if (!req.isJsonBody && !csrfVerified(req)) {
    const fresh = csrf(req.cookies);
    return respond(req, 200, `${authBase(origin())}/signin?csrf=true`, fresh.cookies);
  }
  const email = typeof req.body.email === "string" ? req.body.email.trim().toLowerCase() : "";
  const password = typeof req.body.password === "string" ? req.body.password : "";
  // Throttle before the password hash is computed, per email and per IP.
  await consume(SIGNIN_PER_IP, req.ip);
  if (email) await consume(SIGNIN_PER_EMAIL, email);

  const user = email && password ? await findUserByEmail(email) : null;
  const valid = user ? await verifyPassword(password, user.passwordHash) : (await burnPasswordCheck(password), false);
  if (!user || !valid) return respond(req, 401, credentialsErrorUrl(origin()), []);

  await reset(SIGNIN_PER_EMAIL, email);
  const url = resolveCallbackUrl(req.body.callbackUrl, origin());
  return respond(req, 200, url, [await sessionCookie(user), setCookie(cookieNames().callbackUrl, url)]);
}

/** GET /api/auth/session: the session (cookie rolled forward) or `{}` (an invalid cookie is cleared). */
export async function session(cookies: Record<string, string>): Promise<AuthOutcome> {
  const token = readSessionCookie(cookies);
  if (!token) return { status: 200, body: {}, cookies: [] };
  const claims = await decodeSession(token, authSecret());
  if (!claims?.sub) return { status: 200, body: {}, cookies: clearSessionCookies(cookies) };
  const user = { id: claims.sub, name: String(claims.name ?? ""), email: String(claims.email ?? "") };
  return {
    status: 200,
    body: { user, expires: new Date(Date.now() + SESSION_MAX_AGE * 1000).toISOString() },
    cookies: [await sessionCookie(user)],
  };
}

/** POST /api/auth/signout: clears the session cookie (and every chunk of it). */
export function signout(req: AuthRequest): AuthOutcome {
  if (!req.isJsonBody && !csrfVerified(req)) {
    return respond(req, 200, `${authBase(origin())}/signout?csrf=true`, []);
  }
  const url = resolveCallbackUrl(req.body.callbackUrl, origin());
  return respond(req, 200, url, [setCookie(cookieNames().callbackUrl, url), ...clearSessionCookies(req.cookies)]);
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
