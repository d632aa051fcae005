import type { ActionSchema, Middleware } from "moleculer";
import { decideAccess } from "../lib/access";
import { forbidden, unauthorized } from "../lib/errors";
import type { AppContext } from "../lib/moleculer-types";
import type { Role } from "../models";

type Handler = (ctx: AppContext) => Promise<unknown>;

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
    const decl = { auth: action.auth, permission: action.permission, role: action.role };

    return async function authorize(ctx: AppContext) {
      const principal = ctx.meta.principal;
      const params = (ctx.params ?? {}) as { workspaceId?: unknown };
      const workspaceId = typeof params.workspaceId === "string" ? params.workspaceId : undefined;

      let role: Role | undefined;
      if (workspaceId && principal?.kind === "user") {
        role = (await ctx.call("workspaces.membership", { workspaceId, userId: principal.userId })) as Role | undefined;
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
