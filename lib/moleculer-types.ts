import type { Context } from "moleculer";
import type { AccessDeclaration, Principal } from "./access";
import type { Role } from "../models";
import type { WorkspaceId } from "./workspace-id";
import type { Versions } from "./versioned-cache";

/** Our keys on an action schema, typed by module augmentation rather than `any`. */
declare module "moleculer" {
  interface ActionSchema extends AccessDeclaration {
    /** Keep the raw request body in `ctx.meta.rawBody` (signature checks). */
    rawBody?: boolean;
    /**
     * Hand the handler the request's cookies in `ctx.meta.cookies`: only the
     * auth service's actions that read them (csrf, sign-in, session,
     * sign-out) declare it, so no other call, and no call made from another
     * action, carries a session cookie.
     */
    cookies?: boolean;
    /** Extra OpenAPI facts for the generated description. */
    openapi?: {
      summary?: string;
      description?: string;
      tags?: string[];
      responses?: Record<string, unknown>;
      /** Error statuses past 4xx the route answers with the error body (a remote API's 502). */
      failures?: number[];
      requestBody?: Record<string, unknown>;
    };
  }
}

/** What the gateway and the authorize middleware put into `ctx.meta`. Kept small. */
export interface AppMeta {
  principal?: Principal;
  workspaceId?: WorkspaceId;
  role?: Role;
  ip?: string;
  userAgent?: string;
  rawBody?: string;
  /** Request headers, kept only for `rawBody: true` actions (signature headers). */
  requestHeaders?: Record<string, string | string[] | undefined>;
  /** The request's path and query as it arrived, kept only for `rawBody: true` actions (Twilio signs the URL). */
  requestUrl?: string;
  /** The request's cookies, only for `cookies: true` actions. */
  cookies?: Record<string, string>;
  /** The request's method; `HEAD` for a HEAD request, which the gateway answers as GET without side effects. */
  method?: string;
  contentType?: string;
  /** The `Idempotency-Key` request header (lib/idempotency.ts). */
  idempotencyKey?: string;
  /** The `Origin` request header: public posts from other sites (forms) are held to the workspace's allowed origins. */
  origin?: string;
  /** The `If-None-Match` request header: answers with an ETag (the website script's config) may be 304. */
  ifNoneMatch?: string;
  /** The request's `Range` header (asset downloads answer parts of a file). */
  range?: string;
  /** The `Referer` request header: a landing page's visit records where it came from. */
  referrer?: string;
  /** The `Accept` request header: public pages answer HTML when a browser prefers it. */
  accept?: string;
  $statusCode?: number;
  $statusMessage?: string;
  $responseType?: string;
  $responseHeaders?: Record<string, string | string[]>;
  $location?: string;
  /** The events chain: the cached areas' versions probed when the event arrived (lib/versioned-cache.ts). */
  configVersions?: Versions;
}

export type AppContext<P = Record<string, unknown>> = Context<P, AppMeta>;
