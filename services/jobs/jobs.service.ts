import { defineAction, defineService } from "../../lib/define-service";
import { requirePermission } from "../../lib/access";
import { audit } from "../../lib/audit";
import { cancelJob, failAbandonedJobs, jobQueueFigures, listJobs } from "../../lib/jobs";
import { outboxQueueFigures } from "../../lib/outbox";
import { queueStatsAction } from "../../lib/queue-stats";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { schemas } from "./jobs.schemas";

/** Long-running work (imports, bulk changes, recomputes) and its progress. */
export default defineService({
  name: "jobs",
  mixins: [DatabaseMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /** Jobs of the workspace, newest first; filters id, type, status. Any member or key. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/jobs",
      auth: "any",
      params: schemas.list,
      result: schemas.listResult,
      openapi: {
        tags: ["Jobs"],
        summary: "List jobs (imports, bulk changes, recomputes) with their progress, newest first",
      },
      async handler(ctx) {
        const { id, type, status } = ctx.params;
        return listJobs(workspaceOf(ctx), { id, type, status }, pageRequest(ctx.params));
      },
    }),

    /**
     * Stop a running job that is safe to stop halfway (imports, integration
     * pushes): what it did stays. The caller needs the permission the job names;
     * 409 INVALID_STATE for a job that runs to its end or has ended.
     */
    cancel: defineAction({
      rest: "POST /workspaces/:workspaceId/jobs/:jobId/cancel",
      auth: "any",
      params: schemas.cancel,
      result: schemas.cancelResult,
      openapi: {
        tags: ["Jobs"],
        summary: "Cancel a running job that can stop halfway (its work so far stays)",
      },
      async handler(ctx) {
        const job = await cancelJob(workspaceOf(ctx), ctx.params.jobId, (permission) =>
          requirePermission(ctx.meta, permission, `Cancelling this job needs the ${permission} permission`),
        );
        await audit(ctx, "job.cancelled", { type: "job", id: job.id }, { jobType: job.type });
        return job;
      },
    }),

    /** Internal (timer, cron tick): fail jobs whose worker died. */
    sweep: {
      handler: () => failAbandonedJobs(),
    },

    /** Internal (timer, operators' `queues`): the shared machinery's queues, the domain event outbox and jobs. */
    queueStats: queueStatsAction(async () => [await outboxQueueFigures(), await jobQueueFigures()]),
  },
});
