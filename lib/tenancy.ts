import type { AppContext } from "./moleculer-types";

declare const workspaceIdBrand: unique symbol;

/**
 * A workspace id the code may scope a query by: from the tenancy scope
 * (`workspaceOf`), or vouched for with `asWorkspaceId` where it comes from a
 * row or a message of that workspace. The first argument of `query`.
 */
export type WorkspaceId = string & { readonly [workspaceIdBrand]: true };

/**
 * An id known to name the workspace the work belongs to: a claimed row's
 * `workspace_id`, an event or job that carries the scope of the call that
 * raised it. Never a value from a request body.
 */
export const asWorkspaceId = (id: string): WorkspaceId => id as WorkspaceId;

/**
 * The one tenancy scope: the workspace a call runs in, set by the Authorize
 * middleware after checking membership or the API key. Never from a body.
 */
export function workspaceOf(ctx: AppContext): WorkspaceId {
  const workspaceId = ctx.meta.workspaceId;
  if (!workspaceId) throw new Error(`${ctx.action?.name ?? "call"} ran without a workspace scope`);
  return workspaceId;
}

/** The signed-in user's id; actions declared `auth: "session"` always have one. */
export function userOf(ctx: AppContext): string {
  const p = ctx.meta.principal;
  if (p?.kind !== "user") throw new Error(`${ctx.action?.name ?? "call"} needs a user principal`);
  return p.userId;
}

/** Broadcast once a workspace and everything in it is gone; services drop what they cached for it. */
export const WORKSPACE_DELETED_EVENT = "workspaces.workspace.deleted";
