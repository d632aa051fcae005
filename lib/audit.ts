import type { AppContext } from "./moleculer-types";

/** The signed-in user behind a call, or null (an API key, the system): who created a thing. */
export function actingUserId(ctx: { meta: AppContext["meta"] }): string | null {
  const p = ctx.meta.principal;
  return p?.kind === "user" ? p.userId : null;
}

/** Who did it, from the caller's principal. */
export function actorOf(ctx: AppContext): { actorType: string; actorId: string | null } {
  const p = ctx.meta.principal;
  if (p?.kind === "user") return { actorType: "user", actorId: p.userId };
  if (p?.kind === "apiKey") return { actorType: "api_key", actorId: p.apiKeyId };
  return { actorType: "system", actorId: null };
}

/**
 * The one way to write an audit entry: actor and ip come from the context,
 * the workspace from the tenancy scope. Awaited, so a logged change is never lost.
 */
export async function audit(
  ctx: AppContext,
  action: string,
  target: { type: string; id: string | null },
  metadata: Record<string, unknown> = {},
): Promise<void> {
  await ctx.call("workspaces.recordAudit", {
    workspaceId: ctx.meta.workspaceId,
    ...actorOf(ctx),
    action,
    targetType: target.type,
    targetId: target.id,
    ip: ctx.meta.ip ?? null,
    metadata,
  });
}
