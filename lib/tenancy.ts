import type { AppContext } from "./moleculer-types";
import type { WorkspaceId } from "./workspace-id";

// The branded id lives in its own module so the low layers (database, context types) can name it without this one.
export { asWorkspaceId, type WorkspaceId } from "./workspace-id";

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
