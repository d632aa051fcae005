import { Type } from "@sinclair/typebox";
import { defineAction, defineService } from "../../lib/define-service";
import { ownerOf, PERIODIC_STEPS } from "../../lib/periodic-steps";
import { isServiceAvailable } from "../../lib/registry";
import { DateTime } from "../../lib/schema";

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
        // One pass of every periodic step (lib/periodic-steps.ts), for deployments that prefer an external clock
        // (a Kubernetes CronJob) to the services' own timers; a step whose service is not deployed is named so.
        const results: Record<string, unknown> = {};
        for (const step of PERIODIC_STEPS) {
          results[step.action] = isServiceAvailable(this.broker, ownerOf(step))
            ? await ctx.call(step.action)
            : "not deployed";
        }
        return { ok: true as const, ranAt: new Date().toISOString(), results };
      },
    }),
  },
});
