import type { ServiceBroker } from "moleculer";
import type { FieldIssue } from "./errors";
import type { AppContext } from "./moleculer-types";
import { systemCall } from "./system-call";
import { workspaceOf } from "./tenancy";

/** Whether some node currently runs the named service (optional steps skip an absent one). */
export function isServiceAvailable(broker: ServiceBroker, name: string): boolean {
  return broker.registry
    .getServiceList({ onlyAvailable: true, skipInternal: true })
    .some((s) => s.name === name);
}

/**
 * Whether a record another service keeps is the caller's workspace's: `action`
 * (that service's get) answers, or its 404 says no. An issue on `field`
 * otherwise, or when no node runs the service to ask.
 */
export async function referenceIssue(
  ctx: AppContext,
  field: string,
  action: string,
  params: Record<string, string>,
): Promise<FieldIssue | null> {
  const service = action.split(".")[0];
  if (!isServiceAvailable(ctx.broker, service))
    return { field, message: `cannot be checked: ${service} is not deployed` };
  const ws = workspaceOf(ctx);
  try {
    await systemCall(ctx, ws, action, { workspaceId: ws, ...params });
    return null;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return { field, message: "is not one of the workspace's" };
    throw err;
  }
}
