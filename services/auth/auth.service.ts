import { Type } from "@sinclair/typebox";
import { authSecret } from "../../lib/auth-secret";
import { config } from "../../lib/config";
import { defineAction, defineService } from "../../lib/define-service";
import type { AppContext } from "../../lib/moleculer-types";
import { servePage } from "../../lib/pages";
import { Nullable } from "../../lib/schema";
import { consume, resetLimiters } from "../../lib/rate-limit";
import { closeRedis } from "../../lib/redis";
import { SESSIONS_REVOKED_EVENT } from "../../lib/session-token";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { apiKeyActions } from "./api-keys.actions";
import * as repo from "./auth.repo";
import { responses, schemas, UserSchema } from "./auth.schemas";
import { authBase, SIGNIN_ERRORS, unsupported } from "./nextauth";
import { passwordResetActions } from "./password-reset.actions";
import * as signin from "./signin";
import { readRetry } from "../../lib/resilience";

const REGISTRATIONS_PER_IP = { name: "register-ip", points: 10, durationSeconds: 60 * 60 };

function authRequest(ctx: AppContext<object>): signin.AuthRequest {
  return {
    body: ctx.params as Record<string, unknown>,
    cookies: ctx.meta.cookies ?? {},
    isJsonBody: (ctx.meta.contentType ?? "").includes("application/json"),
    ip: ctx.meta.ip ?? "unknown",
  };
}

/** Turn a sign-in outcome into moleculer-web's response meta. */
function send(ctx: AppContext<object>, outcome: signin.AuthOutcome) {
  ctx.meta.$statusCode = outcome.status;
  ctx.meta.$responseHeaders = { "Cache-Control": "private, no-cache, no-store" };
  if (outcome.cookies.length) ctx.meta.$responseHeaders["Set-Cookie"] = outcome.cookies;
  if (outcome.redirect) {
    ctx.meta.$location = outcome.redirect;
    return null;
  }
  return outcome.body;
}

/** NextAuth's redirect to the custom sign-in page, with the callback url and any error. */
function toSigninPage(ctx: AppContext<{ callbackUrl?: string; error?: string }>) {
  const query = new URLSearchParams({ callbackUrl: ctx.params.callbackUrl ?? config().publicUrl });
  if (ctx.params.error !== undefined) query.set("error", ctx.params.error);
  return send(ctx, { status: 302, redirect: `/auth/signin?${query}`, cookies: [] });
}

function text(ctx: AppContext<object>, status: number, body: string) {
  ctx.meta.$statusCode = status;
  ctx.meta.$responseType = "text/plain; charset=utf-8";
  return body;
}

/** Users, NextAuth-compatible sessions, password reset, and workspace API keys. */
export default defineService({
  name: "auth",
  mixins: [DatabaseMixin, passwordResetActions, apiKeyActions, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /** Create an account. Public; 10 per client IP per hour (not for `npm run setup`). */
    register: defineAction({
      rest: "POST /auth/register",
      auth: "public",
      params: schemas.register,
      status: 201,
      result: UserSchema,
      openapi: { tags: ["Auth"], summary: "Register a user" },
      async handler(ctx) {
        // The limit is per client address; the service's own setup command (the system principal) is no client.
        if (ctx.meta.principal?.kind !== "system")
          await consume(REGISTRATIONS_PER_IP, ctx.meta.ip ?? "unknown");
        return repo.createUser(ctx.params.name, ctx.params.email, ctx.params.password);
      },
    }),

    /** NextAuth csrf token; sets the csrf cookie when the request has no valid one. */
    csrf: defineAction({
      rest: "GET /auth/csrf",
      auth: "public",
      cookies: true,
      openapi: {
        tags: ["Auth"],
        summary: "NextAuth csrf token (sets the csrf cookie)",
        responses: responses.csrf,
      },
      handler(ctx) {
        const result = signin.csrf(ctx.meta.cookies ?? {});
        return send(ctx, { status: 200, body: { csrfToken: result.token }, cookies: result.cookies });
      },
    }),

    providers: defineAction({
      rest: "GET /auth/providers",
      auth: "public",
      openapi: { tags: ["Auth"], summary: "Sign-in providers (credentials)", responses: responses.providers },
      handler: () => signin.providers(),
    }),

    /** Credentials sign-in: form (with csrf) or JSON; JSON `{url}` or a 302, as NextAuth v4. */
    callback: defineAction({
      rest: "POST /auth/callback/:provider",
      auth: "public",
      cookies: true,
      params: schemas.callback,
      openapi: {
        tags: ["Auth"],
        summary: "Sign in with email and password (NextAuth credentials)",
        responses: responses.callback,
      },
      async handler(ctx) {
        if (ctx.params.provider !== "credentials") return text(ctx, 400, unsupported("POST"));
        return send(ctx, await signin.credentialsCallback(authRequest(ctx)));
      },
    }),

    /**
     * Credentials are only ever posted. NextAuth itself answers this with a
     * 500; a browser that lands here is sent where NextAuth sends a callback
     * it cannot complete: the error page, which shows the sign-in page.
     */
    callbackGet: defineAction({
      rest: "GET /auth/callback/:provider",
      auth: "public",
      params: schemas.provider,
      openapi: {
        tags: ["Auth"],
        summary: "Credentials callback by GET (redirects to the error page)",
        responses: responses.callbackGet,
      },
      handler(ctx) {
        if (ctx.params.provider !== "credentials") return text(ctx, 400, unsupported("GET"));
        return send(ctx, {
          status: 302,
          redirect: `${authBase(config().publicUrl)}/error?error=Callback`,
          cookies: [],
        });
      },
    }),

    /** The current session, `{}` when signed out. */
    session: defineAction({
      rest: "GET /auth/session",
      auth: "public",
      cookies: true,
      openapi: {
        tags: ["Auth"],
        summary: "The current session (rolls the cookie forward), {} when signed out",
        responses: responses.session,
      },
      async handler(ctx) {
        return send(ctx, await signin.session(ctx.meta.cookies ?? {}));
      },
    }),

    /** The client's `update()`: the session again, once the csrf token checks out (else 400 `{}`). */
    updateSession: defineAction({
      rest: "POST /auth/session",
      auth: "public",
      cookies: true,
      params: schemas.updateSession,
      openapi: {
        tags: ["Auth"],
        summary: "Refresh the session (NextAuth update)",
        responses: responses.updateSession,
      },
      async handler(ctx) {
        return send(ctx, await signin.updateSession(authRequest(ctx)));
      },
    }),

    /** Ends the session on the server (every replica forgets it at once) and clears its cookie. */
    signout: defineAction({
      rest: "POST /auth/signout",
      auth: "public",
      cookies: true,
      params: schemas.signout,
      openapi: {
        tags: ["Auth"],
        summary: "Sign out: ends the session and clears its cookie",
        responses: responses.signout,
      },
      async handler(ctx) {
        const outcome = await signin.signout(authRequest(ctx));
        if (outcome.revokedSessionId) {
          await this.broker.broadcast(SESSIONS_REVOKED_EVENT, { sessionId: outcome.revokedSessionId });
        }
        return send(ctx, outcome);
      },
    }),

    /** NextAuth's sign-out page: a form that posts the csrf token. */
    signoutPage: defineAction({
      rest: "GET /auth/signout",
      auth: "public",
      openapi: { tags: ["Auth"], summary: "Sign-out page (HTML)", responses: responses.signoutPage },
      handler: (ctx) => servePage(ctx, "signout.html"),
    }),

    /** NextAuth sends sign-in to the custom page. */
    signin: defineAction({
      rest: "GET /auth/signin",
      auth: "public",
      params: schemas.signin,
      openapi: { tags: ["Auth"], summary: "Sign-in page (redirect)", responses: responses.signin },
      handler: (ctx) => toSigninPage(ctx),
    }),

    /** With a provider, too: NextAuth's GET signin ignores it when a custom page is set. */
    signinProvider: defineAction({
      rest: "GET /auth/signin/:provider",
      auth: "public",
      params: schemas.signinProvider,
      openapi: {
        tags: ["Auth"],
        summary: "Sign-in page for a provider (redirect)",
        responses: responses.signin,
      },
      handler: (ctx) => toSigninPage(ctx),
    }),

    error: defineAction({
      rest: "GET /auth/error",
      auth: "public",
      params: schemas.error,
      openapi: {
        tags: ["Auth"],
        summary: "Sign-in error (redirect to the sign-in page)",
        responses: responses.error,
      },
      handler(ctx) {
        const error = ctx.params.error ?? "Default";
        const target = SIGNIN_ERRORS.has(error)
          ? `${authBase(config().publicUrl)}/signin?error=${encodeURIComponent(error)}`
          : `/auth/signin?error=${encodeURIComponent(error)}`;
        return send(ctx, { status: 302, redirect: target, cookies: [] });
      },
    }),

    /** NextAuth's client-side logger sink. */
    log: defineAction({
      rest: "POST /auth/_log",
      auth: "public",
      openapi: { tags: ["Auth"], summary: "NextAuth client logger sink", responses: responses.log },
      handler: (ctx) => text(ctx, 200, ""),
    }),

    /** Anything else under /api/auth answers as NextAuth's catch-all does. */
    unsupported: defineAction({
      rest: ["/auth/:action", "/auth/:action/:provider"],
      auth: "public",
      openapi: {
        tags: ["Auth"],
        summary: "NextAuth catch-all (unsupported actions answer 400)",
        responses: responses.unsupported,
      },
      handler(ctx) {
        return text(ctx, 400, unsupported(ctx.meta.method ?? "GET"));
      },
    }),

    /** The HTML sign-in page at /auth/signin. */
    signinPage: defineAction({
      auth: "public",
      handler: (ctx) => servePage(ctx, "signin.html"),
    }),

    /** The HTML sign-up page at /auth/signup; it posts to `register` above (same limits), then signs in. */
    signupPage: defineAction({
      auth: "public",
      handler: (ctx) => servePage(ctx, "signup.html"),
    }),

    /** Internal (`npm run setup`): the user these credentials are of, or null. */
    checkCredentials: defineAction({
      params: schemas.checkCredentials,
      result: Nullable(UserSchema),
      handler: (ctx) => signin.checkCredentials(ctx.params.email, ctx.params.password),
    }),

    /** Internal: whether a session token still speaks for its user (not signed out, issued after the last reset). */
    sessionActive: defineAction({
      params: schemas.sessionActive,
      result: Type.Boolean(),
      retryPolicy: readRetry(),
      handler: (ctx) => repo.sessionActive(ctx.params.userId, ctx.params.sessionId, ctx.params.issuedAt),
    }),

    /** Internal (timer, cron tick): forget revocations of sessions that have expired anyway; answers how many. */
    pruneRevokedSessions: defineAction({
      result: Type.Integer(),
      handler: () => repo.pruneRevokedSessions(),
    }),
  },

  /** Fail fast without AUTH_SECRET in production; embedded, generate and keep it now. */
  created() {
    authSecret();
  },

  /** Limits live with the Redis client: close it, and forget limiters bound to it. */
  async stopped() {
    resetLimiters();
    await closeRedis();
  },
});
