import { ANALYTICS_ACTIONS, type AnalyticsEndpoint } from "../../lib/analytics";
import { ErrorCode, toHttpError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { optionalStepRuns } from "../../lib/registry";
import type { AnalyticsAnswer } from "../analytics/analytics.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * `GET {ws}/dashboard-widgets?data=true`: each widget with its `result`, the
 * answer of its analytics action called with its params as the caller (so the
 * caller's access applies) in the caller's workspace. A widget whose params no
 * longer make a valid query (a removed campaign, a bad metric) gets `error`,
 * the body its refusal (a 4xx) would have as a request, and the list still
 * answers; anything else (a 5xx) fails the list as it would fail the widget.
 * Analytics not deployed in this shape: each widget's `error` says so;
 * analytics gone (an outage): the list fails, 503.
 */
export async function withResults<W extends { endpoint: string; params: Record<string, unknown> }>(
  ctx: AppContext,
  workspaceId: WorkspaceId,
  widgets: W[],
) {
  if (!optionalStepRuns(ctx.broker, ANALYTICS_ACTIONS.overview)) {
    const error = { error: "Analytics is not deployed", code: ErrorCode.SERVICE_UNAVAILABLE };
    return widgets.map((widget) => ({ ...widget, result: null, error }));
  }
  return Promise.all(
    widgets.map(async (widget) => {
      try {
        const result = (await ctx.call(ANALYTICS_ACTIONS[widget.endpoint as AnalyticsEndpoint], {
          ...widget.params,
          workspaceId,
        })) as AnalyticsAnswer;
        return { ...widget, result, error: null };
      } catch (err) {
        const refusal = toHttpError(err, false);
        if (refusal.status >= 500) throw err;
        return { ...widget, result: null, error: refusal.body };
      }
    }),
  );
}
