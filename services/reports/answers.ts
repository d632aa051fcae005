import { LRUCache } from "lru-cache";
import type { Context, ServiceBroker } from "moleculer";
import { ANALYTICS_ACTIONS, type AnalyticsEndpoint } from "../../lib/analytics";
import { validationError, type FieldIssue } from "../../lib/errors";
import { compileParamsChecker, type Checker } from "../../lib/schema";
import { systemCall } from "../../lib/system-call";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * A report runs one analytics answer (lib/analytics.ts) by name, over the
 * broker, for its workspace. Its params are checked, when saved, against the
 * answer's own params schema as the node serving it declares it, so a saved
 * report always runs with what that route would take from a request.
 */

/** The analytics action answering `endpoint` (the report schema admits only the names lib/analytics.ts lists). */
const actionOf = (endpoint: string) => ANALYTICS_ACTIONS[endpoint as AnalyticsEndpoint];

/** Compiled checkers by action and schema: one per answer, a few more while nodes of two versions run. */
const checkers = new LRUCache<string, Checker>({ max: 100 });

/** The params schema the serving node declares for `action`, if any node serves it. */
function declaredParams(broker: ServiceBroker, action: string): object | null | undefined {
  const listed = broker.registry
    .getActionList({ onlyAvailable: true, skipInternal: true, withEndpoints: false })
    .find((item: { name: string }) => item.name === action) as { action?: { params?: object } } | undefined;
  return listed ? (listed.action?.params ?? null) : undefined;
}

const prefixed = (issues: FieldIssue[]): FieldIssue[] =>
  issues.map(({ field, message }) => ({ field: field ? `params.${field}` : "params", message }));

/**
 * `params` as the answer takes them (unknown keys dropped, defaults filled,
 * text read as numbers where the answer wants numbers), or a 400 naming the
 * field (`endpoint` when no node serves the answer, `params.<name>` otherwise).
 */
export function checkedParams(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  endpoint: string,
  params: Record<string, unknown>,
): Record<string, unknown> {
  const action = actionOf(endpoint);
  const schema = declaredParams(broker, action);
  if (schema === undefined)
    throw validationError(`endpoint '${endpoint}' is not answered by any running node`, [
      { field: "endpoint", message: `'${endpoint}' is not answered by any running node` },
    ]);
  if (schema === null) return {};
  const key = `${action}:${JSON.stringify(schema)}`;
  let check = checkers.get(key);
  if (!check) {
    check = compileParamsChecker(schema as Parameters<typeof compileParamsChecker>[0]);
    checkers.set(key, check);
  }
  // The workspace comes from the report; a `workspaceId` in the saved params is not the caller's to set.
  const { workspaceId: _ignored, ...rest } = params;
  const value: Record<string, unknown> = { ...structuredClone(rest), workspaceId };
  const verdict = check(value, true);
  if (verdict !== true) {
    const issues = prefixed(verdict);
    throw validationError(`${issues[0].field}: ${issues[0].message}`, issues);
  }
  const { workspaceId: _ws, ...checked } = value;
  return checked;
}

/** An answer's 400 names its fields as the route's query; here they are the report's `params`. */
function asReportError(err: unknown): unknown {
  const e = err as { code?: number; type?: string; name?: string; message?: string; data?: unknown };
  if (e?.code !== 400 || e.type !== "VALIDATION_ERROR") return err;
  const raw = Array.isArray(e.data) ? e.data : ((e.data as { details?: unknown })?.details ?? []);
  const issues = prefixed(
    (raw as Array<{ field?: string; message?: string }>).map((i) => ({
      field: String(i.field ?? ""),
      message: String(i.message ?? "is invalid"),
    })),
  );
  return issues.length ? validationError(`${issues[0].field}: ${issues[0].message}`, issues) : err;
}

/** Run the answer for the workspace, as the system (the caller's access was checked by the report's route). */
export async function runAnswer(
  from: Context | ServiceBroker,
  workspaceId: WorkspaceId,
  endpoint: string,
  params: Record<string, unknown>,
): Promise<unknown> {
  try {
    return await systemCall(from, workspaceId, actionOf(endpoint), { ...params, workspaceId });
  } catch (err) {
    throw asReportError(err);
  }
}
