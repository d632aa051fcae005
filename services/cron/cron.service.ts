import { Type } from "@sinclair/typebox";
import { defineAction, defineService } from "../../lib/define-service";
import { isServiceAvailable } from "../../lib/registry";
import { DateTime } from "../../lib/schema";

/**
 * One pass of every due queue, for deployments that prefer an external
 * clock (a Kubernetes CronJob) to the services' own timers. Each step is an
 * internal action of the service that owns the queue; steps of services not
 * deployed are skipped and reported as such.
 */
export const TICK_STEPS = [
  "webhooks.dispatchDue",
  "messages.processDue",
  "campaigns.processDue",
  "crm.notifyDueTasks",
  // Decay first: the score segments it moves are current before time-relative segments refresh.
  "scoring.applyDecay",
  "segments.refreshTimeBased",
  "jobs.sweep",
  "messages.sweepProviderCallbacks",
  "providers.sweepEventLog",
] as const;

const TickResult = Type.Object({
  ok: Type.Literal(true),
  ranAt: DateTime(),
  results: Type.Record(Type.String(), Type.Unknown(), {
    description: 'What each step did, by step (its own summary, or "not deployed")',
  }),
});

export default defineService({
  name: "cron",
  settings: { rest: "/" },

  actions: {
    /** Run every due queue once. Bearer CRON_SECRET. */
    tick: defineAction({
      rest: "GET /cron/tick",
      auth: "cron",
      result: TickResult,
      openapi: { tags: ["System"], summary: "Run one pass of every due queue (bearer CRON_SECRET)" },
      async handler(ctx) {
        const results: Record<string, unknown> = {};
        for (const step of TICK_STEPS) {
          const service = step.split(".")[0];
          if (!isServiceAvailable(this.broker, service)) {
            results[step] = "not deployed";
            continue;
          }
          results[step] = await ctx.call(step);
        }
        return { ok: true as const, ranAt: new Date().toISOString(), results };
      },
    }),
  },
});
