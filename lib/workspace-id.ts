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
