import { defineAction, defineService } from "../../lib/define-service";
import { failAbandonedJobs, listJobs } from "../../lib/jobs";
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

    /** Internal (timer, cron tick): fail jobs whose worker died. */
    sweep: {
      handler: () => failAbandonedJobs(),
    },
  },
});
