import type { ActionSchema, Middleware } from "moleculer";
import { decideAccess } from "../lib/access";
import { forbidden, unauthorized } from "../lib/errors";
import type { AppContext } from "../lib/moleculer-types";
import type { Role } from "../models";

type Handler = (ctx: AppContext) => Promise<unknown>;

/** The path(s) of an action's `rest` declaration: "GET /a/:b", { path }, or a list of either. */
function restPaths(rest: unknown): string[] {
  if (Array.isArray(rest)) return rest.flatMap(restPaths);
  if (typeof rest === "string") return [rest];
  if (rest && typeof rest === "object" && typeof (rest as { path?: unknown }).path === "string")
    return [(rest as { path: string }).path];
  return [];
}

/**
 * Enforces each action's declared `auth`, `permission` and `role` on the
 * node that runs it, so a call that arrives by NATS or from another service
 * is held to the same rule as one from the gateway. It also fixes the
 * tenancy: `ctx.meta.workspaceId` comes from the path's `workspaceId` only
 * after membership (or the API key's workspace) has been checked.
 */
export const AuthorizeMiddleware = {
  localAction(next: Handler, action: ActionSchema) {
    if (action.rest && !action.auth) {
      throw new Error(`Action '${action.name}' has a REST route but declares no 'auth'`);
    }
    if (!action.auth) return next;
    const decl = {
      auth: action.auth,
      permission: action.permission,
      role: action.role,
      keyScope: action.keyScope,
    };
    // A REST action takes its workspace from its path only: a `workspaceId` in the body or
    // query of a route without `:workspaceId` must never choose the tenancy scope.
    const workspaceFromParams =
      !action.rest || restPaths(action.rest).some((p) => p.includes(":workspaceId"));

    return async function authorize(ctx: AppContext) {
      const principal = ctx.meta.principal;
      // A streamed body (type "stream" routes, e.g. contact import) is the params; its path params ride in meta.
      const streamed = typeof (ctx.params as { pipe?: unknown } | undefined)?.pipe === "function";
      const params = (streamed ? (ctx.meta as { $params?: object }).$params : ctx.params) ?? {};
      const pathWorkspace = (params as { workspaceId?: unknown }).workspaceId;
      const workspaceId =
        workspaceFromParams && typeof pathWorkspace === "string" ? pathWorkspace : undefined;

      let role: Role | undefined;
      if (workspaceId && principal?.kind === "user") {
        role = (await ctx.call("workspaces.membership", { workspaceId, userId: principal.userId })) as
          Role | undefined;
      }
      const decision = decideAccess(decl, principal, { workspaceId, role: role ?? undefined });
      if (!decision.allow) {
        throw decision.status === 401 ? unauthorized(decision.reason) : forbidden(decision.reason);
      }
      if (workspaceId) {
        ctx.meta.workspaceId = workspaceId;
        ctx.meta.role = role ?? undefined;
      }
      return next(ctx);
    };
  },
} satisfies Middleware;
