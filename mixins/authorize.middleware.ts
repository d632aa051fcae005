import type { ActionSchema, Middleware, ServiceSchema } from "moleculer";
import { LRUCache } from "lru-cache";
import { decideAccess } from "../lib/access";
import { forbidden, unauthorized } from "../lib/errors";
import type { AppContext } from "../lib/moleculer-types";
import type { Role } from "../models";
import { asWorkspaceId } from "../lib/tenancy";

type Handler = (ctx: AppContext) => Promise<unknown>;

/** The path(s) of an action's `rest` declaration: "GET /a/:b", { path }, or a list of either. */
function restPaths(rest: unknown): string[] {
  if (Array.isArray(rest)) return rest.flatMap(restPaths);
  if (typeof rest === "string") return [rest];
  if (rest && typeof rest === "object" && typeof (rest as { path?: unknown }).path === "string")
    return [(rest as { path: string }).path];
  return [];
}

/** Broadcast by the workspaces service when members change: every process forgets the roles it holds. */
export const MEMBERSHIP_CHANGED_EVENT = "workspaces.membership.changed";

/**
 * Roles this process looked up lately, so an authorized request costs no
 * broker call and no cacher round trip (Redis, with replicas) for its
 * membership. A member change clears them at once: the workspaces service
 * broadcasts MEMBERSHIP_CHANGED_EVENT, which every service that authorizes
 * receives (see `serviceCreating`); the TTL bounds what a lost broadcast
 * could leave. A lookup that was in flight across a clear is not kept.
 */
const ROLE_TTL_MS = 5_000;
const roles = new LRUCache<string, { role: Role | null }>({ max: 10_000, ttl: ROLE_TTL_MS });
let rolesCleared = 0;

export function forgetRoles(): void {
  roles.clear();
  rolesCleared++;
}

async function roleOf(ctx: AppContext, workspaceId: string, userId: string): Promise<Role | undefined> {
  const key = `${workspaceId}\n${userId}`;
  const known = roles.get(key);
  if (known) return known.role ?? undefined;
  const generation = rolesCleared;
  const role = (await ctx.call("workspaces.membership", { workspaceId, userId })) as Role | null;
  if (generation === rolesCleared) roles.set(key, { role: role ?? null });
  return role ?? undefined;
}

type EventHandler = (this: unknown, ctx: unknown) => Promise<void> | void;

/**
 * Enforces each action's declared `auth`, `permission` and `role` on the
 * node that runs it, so a call that arrives by NATS or from another service
 * is held to the same rule as one from the gateway. It also fixes the
 * tenancy: `ctx.meta.workspaceId` comes from the path's `workspaceId` only
 * after membership (or the API key's workspace) has been checked.
 */
export const AuthorizeMiddleware = {
  /** Each service with declared access forgets this process's roles when members change (beside its own handler, if any). */
  serviceCreating(_service: unknown, schema: ServiceSchema) {
    const declared = Object.values(schema.actions ?? {}).some(
      (action) => typeof action === "object" && action !== null && Boolean((action as ActionSchema).auth),
    );
    if (!declared) return;
    const own = schema.events?.[MEMBERSHIP_CHANGED_EVENT] as
      EventHandler | { handler?: EventHandler } | undefined;
    const handler = typeof own === "function" ? own : own?.handler;
    schema.events = {
      ...schema.events,
      async [MEMBERSHIP_CHANGED_EVENT](this: unknown, ctx: unknown) {
        forgetRoles();
        await handler?.call(this, ctx);
      },
    };
  },

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

      const role =
        workspaceId && principal?.kind === "user"
          ? await roleOf(ctx, workspaceId, principal.userId)
          : undefined;
      const decision = decideAccess(decl, principal, { workspaceId, role: role ?? undefined });
      if (!decision.allow) {
        throw decision.status === 401 ? unauthorized(decision.reason) : forbidden(decision.reason);
      }
      if (workspaceId) {
        ctx.meta.workspaceId = asWorkspaceId(workspaceId);
        ctx.meta.role = role ?? undefined;
      }
      return next(ctx);
    };
  },
} satisfies Middleware;
