import type { Context, ServiceBroker } from "moleculer";
import { SYSTEM } from "./access";
import type { AppMeta } from "./moleculer-types";
import type { WorkspaceId } from "./tenancy";

/** Meta a system call carries besides the system principal and the workspace. */
export type SystemCallMeta = Pick<AppMeta, "configVersions">;

/** A context carries its broker; a broker does not. */
const isContext = (from: Context | ServiceBroker): from is Context => "broker" in from;

/**
 * Calls `action` as the system within `workspaceId`. From a context it goes through
 * broker.call with that context as parent (same request id and trace), never ctx.call:
 * Moleculer merges the callee's meta back into the caller's, which would leave the
 * caller acting as the system and answering with the callee's status and headers.
 */
export function systemCall<T = unknown>(
  from: Context | ServiceBroker,
  workspaceId: WorkspaceId | undefined,
  action: string,
  params: object = {},
  meta: SystemCallMeta = {},
): Promise<T> {
  const opts = { meta: { ...meta, principal: SYSTEM, workspaceId } };
  if (isContext(from)) return from.broker.call<T, object>(action, params, { ...opts, parentCtx: from });
  return from.call<T, object>(action, params, opts);
}
