import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Context } from "moleculer";
import ApiGateway, { type ApiSettingsSchema } from "moleculer-web";
import { Type } from "@sinclair/typebox";
import serveStatic from "serve-static";
import swaggerUiDist from "swagger-ui-dist";
import { parse as parseCookies } from "cookie";
import { config } from "../../lib/config";
import { acquireDatabase, releaseDatabase } from "../../lib/database";
import {
  defineAction,
  defineService,
  type ServiceSettings,
  type ServiceThis,
} from "../../lib/define-service";
import { toHttpError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { buildOpenApi } from "../../lib/openapi";
import { PUBLIC_DIR } from "../../lib/paths";
import { servePage } from "../../lib/pages";
import { multipartFieldsParser } from "../../lib/uploads";
import { setSecurityHeaders } from "../../lib/security-headers";
import { forwardedHeaders } from "../providers/callbacks";
import { checkHealth, HealthSchema } from "../../lib/health";
import { requestIdOf, withRequestId } from "../../lib/request-id";
import { SESSIONS_REVOKED_EVENT } from "../../lib/session-token";
import {
  authenticateRequest,
  clientIp,
  forgetSessions,
  trustFunction,
  type GatewayRequest,
} from "./authenticate";

const BODY_LIMIT = "1mb";

/** Keep the exact bytes of JSON and form bodies for signature checks (`rawBody: true` actions). */
function keepRawBody(req: IncomingMessage & { rawBody?: Buffer }, _res: ServerResponse, buf: Buffer) {
  req.rawBody = buf;
}

/**
 * A multipart post's text fields (multipartFieldsParser) as the form they
 * carry, for callbacks signed over fields (a mail an emailapi2 route
 * forwards); a signature over the body's bytes cannot verify from it.
 */
function multipartAsForm(req: GatewayRequest & { body?: unknown }): string {
  const multipart = (req.headers["content-type"] ?? "").toLowerCase().startsWith("multipart/form-data");
  if (!multipart || typeof req.body !== "object" || req.body === null) return "";
  return new URLSearchParams(req.body as Record<string, string>).toString();
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  if (res.headersSent) return;
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(body));
}

/** What actions may read of the request: who asks from where, and what they send and accept. */
function requestMeta(ctx: AppContext, req: GatewayRequest): void {
  ctx.meta.ip = clientIp(req);
  ctx.meta.method = req.headRequest ? "HEAD" : req.method;
  ctx.meta.contentType = req.headers["content-type"];
  ctx.meta.userAgent = req.headers["user-agent"];
  ctx.meta.accept = req.headers.accept;
  if (typeof req.headers.origin === "string") ctx.meta.origin = req.headers.origin;
  if (typeof req.headers.referer === "string") ctx.meta.referrer = req.headers.referer;
  if (typeof req.headers["if-none-match"] === "string") ctx.meta.ifNoneMatch = req.headers["if-none-match"];
  if (typeof req.headers.range === "string") ctx.meta.range = req.headers.range;
}

/** The gateway's `this`: the moleculer-web methods it calls and the ones it overrides. */
/**
 * The gateway's settings, moleculer-web's keys this service sets (its routes'
 * hooks are typed where they are written, with our context and request).
 */
type GatewaySettings = ServiceSettings &
  Pick<
    ApiSettingsSchema,
    | "port"
    | "ip"
    | "logRequest"
    | "logResponse"
    | "log4XXResponses"
    | "logRequestParams"
    | "logResponseData"
    | "cors"
    | "assets"
  > & {
    /** Options of the request's first call; moleculer-web's type has no function form. */
    rootCallOptions(options: { requestID?: string }, req: GatewayRequest): void;
    routes: Array<Record<string, unknown>>;
    /** Every error answered as the contract's JSON (its `this` is the gateway). */
    onError(req: GatewayRequest, res: ServerResponse, err: Error): void;
  };

type Gateway = ServiceThis<
  {
    logResponse(req: GatewayRequest, res: ServerResponse): void;
    checkOrigin(origin: string, allowed: unknown): boolean;
    httpHandler(req: GatewayRequest, res: ServerResponse, next?: unknown): unknown;
    routeHandler(
      ctx: unknown,
      route: unknown,
      req: GatewayRequest & { _body?: boolean },
      res: ServerResponse,
      found?: { alias: { type?: string } },
    ): unknown;
    writeCorsHeaders(
      route: { cors?: { origin?: unknown } },
      req: GatewayRequest,
      res: ServerResponse,
      isPreFlight: boolean,
    ): unknown;
    authenticate(
      ctx: AppContext,
      route: unknown,
      req: GatewayRequest,
    ): ReturnType<typeof authenticateRequest>;
  },
  GatewaySettings
>;

/** The moleculer-web gateway: routes come from each action's `rest`, access from its declarations. */
const ApiService = defineService<Gateway>({
  name: "api",
  mixins: [ApiGateway],

  settings: {
    port: config().port,
    ip: config().host,
    rest: "/",
    logRequest: null,
    logResponse: "info",
    log4XXResponses: false,
    logRequestParams: null,
    logResponseData: null,
    cors: config().corsOrigins.length
      ? {
          origin: config().corsOrigins,
          methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
          allowedHeaders: [
            "Content-Type",
            "Authorization",
            "X-Webhook-Signature",
            "Idempotency-Key",
            "X-Request-Id",
          ],
          exposedHeaders: ["Retry-After", "Idempotent-Replayed", "X-Request-Id"],
          credentials: true,
          maxAge: 3600,
        }
      : undefined,
    assets: { folder: PUBLIC_DIR, options: { index: false } },
    // The request's id (httpHandler) is its first call's, so every call and event it leads to carries it.
    rootCallOptions(options: { requestID?: string }, req: GatewayRequest) {
      options.requestID = req.requestId;
    },
    routes: [
      {
        // Swagger UI's own files, from its npm package: the reference works offline. Before "api", which would claim the path.
        name: "docs-assets",
        path: "/api/docs/assets",
        mappingPolicy: "restrict",
        bodyParsers: false,
        use: [serveStatic(swaggerUiDist.getAbsoluteFSPath(), { index: false })],
      },
      {
        name: "api",
        path: "/api",
        autoAliases: true,
        mappingPolicy: "restrict",
        authentication: true,
        authorization: false, // the Authorize broker middleware does it, on the node that runs the action
        bodyParsers: {
          json: { limit: BODY_LIMIT, verify: keepRawBody },
          urlencoded: { extended: false, limit: BODY_LIMIT, verify: keepRawBody },
        },
        // Text fields of multipart/form-data posts (RFC 8058 one-click unsubscribe); uploads are stream routes.
        use: [multipartFieldsParser()],
        onBeforeCall(ctx: AppContext, _route: unknown, req: GatewayRequest) {
          requestMeta(ctx, req);
          const idempotencyKey = req.headers["idempotency-key"];
          if (typeof idempotencyKey === "string") ctx.meta.idempotencyKey = idempotencyKey;
          // Only the actions that read cookies get them (auth's csrf, sign-in, session, sign-out); authenticate reads
          // the session cookie from the request itself, so no other call, nor any call made from it, carries them.
          if (req.$action?.cookies) ctx.meta.cookies = req.cookies ??= parseCookies(req.headers.cookie ?? "");
          if (req.$action?.rawBody) {
            ctx.meta.rawBody = req.rawBody?.toString("utf8") ?? multipartAsForm(req);
            ctx.meta.requestHeaders = forwardedHeaders(req.headers);
            ctx.meta.requestUrl = req.originalUrl ?? req.url;
          }
        },
      },
      {
        name: "pages",
        path: "/",
        mappingPolicy: "restrict",
        bodyParsers: false,
        onBeforeCall(ctx: AppContext, _route: unknown, req: GatewayRequest) {
          requestMeta(ctx, req);
        },
        aliases: {
          "GET /": "api.home",
          "GET auth/signin": "auth.signinPage",
          "GET auth/signup": "auth.signupPage",
          "GET auth/reset-password": "auth.resetPage",
          "GET api/docs": "api.docs",
          "GET f/:formId": "forms.page",
          "GET p/:workspaceSlug/:slug": "content.serve",
        },
      },
    ],
    onError(req: GatewayRequest, res: ServerResponse, err: Error) {
      // moleculer-web refuses a route's own action it will not call (internal, not listed) as SERVICE_NOT_FOUND too.
      const routeMissing =
        err instanceof ApiGateway.Errors.NotFoundError ||
        ((err as { type?: string }).type === "SERVICE_NOT_FOUND" &&
          (err as { data?: { action?: string } }).data?.action === req.$alias?.action);
      const answer = toHttpError(err, routeMissing);
      if (answer.status >= 500) {
        this.logger.error(`${req.method} ${req.originalUrl ?? req.url} failed: ${err?.stack ?? String(err)}`);
      }
      sendJson(res, answer.status, answer.body, answer.headers);
      // A custom onError skips moleculer-web's own response log line; keep one line per request.
      this.logResponse(req, res);
    },
  },

  methods: {
    /**
     * HEAD is answered as GET (Node leaves the body out of a HEAD response by
     * itself). OPTIONS never runs an action: moleculer-web would route it by its
     * Access-Control-Request-Method (GET when absent), so anything that is not a
     * CORS preflight answered by the CORS settings is a missing route. Every
     * answer, static files and errors included, gets the security headers and
     * the request id, under which everything the request logs is written.
     */
    httpHandler(req: GatewayRequest, res: ServerResponse, next?: unknown) {
      setSecurityHeaders(req, res);
      req.requestId = requestIdOf(req.headers);
      res.setHeader("X-Request-Id", req.requestId);
      return withRequestId({ requestID: req.requestId }, () => {
        if (req.method === "HEAD") {
          req.method = "GET";
          req.headRequest = true;
        } else if (
          req.method === "OPTIONS" &&
          !(this.settings.cors && req.headers["access-control-request-method"])
        ) {
          const answer = toHttpError(null, true);
          sendJson(res, answer.status, answer.body);
          this.logResponse(req, res);
          return undefined;
        }
        return ApiGateway.methods!.httpHandler.call(this, req, res, next);
      });
    },

    /**
     * A stream route reads its own body whatever its type (an upload's JSON
     * variant too): no body parser may consume it first, or the request that
     * is the action's params is no stream any more (and cannot cross nodes).
     * body-parser leaves a request it takes as parsed alone.
     */
    routeHandler(
      ctx: unknown,
      route: unknown,
      req: GatewayRequest & { _body?: boolean },
      res: ServerResponse,
      found?: { alias: { type?: string } },
    ) {
      if (found?.alias.type === "stream") req._body = true;
      return ApiGateway.methods!.routeHandler.call(this, ctx, route, req, res, found);
    },

    /**
     * CORS headers only for the allowed origins. moleculer-web would answer
     * any other Origin with 403, our own pages' same-origin posts and public
     * forms included; without the headers a browser keeps the answer from a
     * foreign page, and cookie-authenticated writes from it are refused by
     * authentication (refuseCrossSiteWrite). A preflight from such an
     * origin is still refused.
     */
    writeCorsHeaders(
      route: { cors?: { origin?: unknown } },
      req: GatewayRequest,
      res: ServerResponse,
      isPreFlight: boolean,
    ) {
      const origin = req.headers.origin;
      // moleculer-web passes isPreFlight=true on every request; a preflight is an OPTIONS naming its method.
      const preflight = req.method === "OPTIONS" && Boolean(req.headers["access-control-request-method"]);
      if (origin && route.cors && !preflight && !this.checkOrigin(origin, route.cors.origin)) return;
      return ApiGateway.methods!.writeCorsHeaders.call(this, route, req, res, isPreFlight);
    },

    authenticate(ctx: AppContext, _route: unknown, req: GatewayRequest) {
      return authenticateRequest(this.broker, ctx, req);
    },
  },

  created() {
    trustFunction(); // a TRUST_PROXY that cannot be read stops the start, not a request
    // moleculer-web made the server in its own `created`, which runs first. Node closes an idle connection
    // after 5 s; the headers' timeout must outlast the keep-alive one (Node's http docs).
    const { server } = this as unknown as { server: Server };
    server.keepAliveTimeout = config().httpKeepAliveMs;
    server.headersTimeout = config().httpKeepAliveMs + 1000;
    // A 201 without Location is valid HTTP (the target URI names the collection);
    // moleculer-web warns on each one, which costs a synchronous log write per create.
    const warn = this.logger.warn.bind(this.logger);
    this.logger.warn = (...args: unknown[]) => {
      if (
        typeof args[0] === "string" &&
        args[0].startsWith("The 'ctx.meta.$location' is missing for status code '201'")
      )
        return;
      // A visitor who leaves a page closes its event stream (or a download) early: the usual end, not a fault.
      if (
        args[0] === "Stream got an error." &&
        (args[1] as { err?: { code?: string } } | undefined)?.err?.code === "ERR_STREAM_PREMATURE_CLOSE"
      )
        return;
      warn(...args);
    };
  },

  async started() {
    await acquireDatabase();
  },

  async stopped() {
    // Runs before moleculer-web closes the server. A connection whose answer ends after the close would
    // stay open for the whole keep-alive time and hold the stop: from now on an answered one closes.
    const { server } = this as unknown as { server: Server };
    server.keepAliveTimeout = 1;
    server.closeIdleConnections();
    await releaseDatabase();
  },

  events: {
    [SESSIONS_REVOKED_EVENT](ctx: AppContext<{ sessionId?: string; userId?: string }>) {
      forgetSessions(ctx.params);
    },
  },

  actions: {
    // moleculer-web's alias listing would bypass the declared access rules.
    listAliases: false,

    // moleculer-web's request action, traced without the query (tokens and signatures ride there) or its params.
    rest: {
      tracing: {
        tags: { params: false },
        spanName: (ctx: Context) => {
          const { req } = ctx.params as { req: GatewayRequest };
          return `${req.method} ${(req.url ?? "").split("?")[0]}`;
        },
      },
    },

    /** Database and transporter reachability; 503 when either is gone. Public. */
    health: defineAction({
      rest: "GET /health",
      auth: "public",
      openapi: {
        tags: ["System"],
        summary: "Service health",
        responses: {
          "200": { description: "Healthy", content: { "application/json": { schema: HealthSchema } } },
          "503": {
            description: "The database cannot be reached, or the transporter is disconnected",
            content: { "application/json": { schema: HealthSchema } },
          },
        },
      },
      async handler(ctx) {
        const result = await checkHealth(this.broker);
        if (result.status !== "ok") ctx.meta.$statusCode = 503;
        return result;
      },
    }),

    /** OpenAPI 3.1 description generated from every action's declarations. Public. */
    openapi: defineAction({
      rest: "GET /openapi",
      auth: "public",
      result: Type.Record(Type.String(), Type.Unknown(), { description: "An OpenAPI 3.1.0 document" }),
      openapi: { tags: ["System"], summary: "OpenAPI 3.1 description" },
      handler() {
        return buildOpenApi(this.broker.registry.getServiceList({ withActions: true }), config().publicUrl);
      },
    }),

    /** The API reference: Swagger UI over `/api/openapi`, with try-it-out. Public. */
    docs: defineAction({
      auth: "public",
      handler: (ctx) => servePage(ctx, "docs.html"),
    }),

    /** The landing page after sign-in: links to the reference, the health and the REPL how-to. Public. */
    home: defineAction({
      auth: "public",
      handler: (ctx) => servePage(ctx, "index.html"),
    }),
  },
});

export default ApiService;
