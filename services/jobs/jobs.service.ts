import type { ServiceSchema } from "moleculer";
import { failAbandonedJobs, listJobs } from "../../lib/jobs";
import type { AppContext } from "../../lib/moleculer-types";
import { pageOf, pageParams, pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Workspace } from "../../models";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const SWEEP_INTERVAL_MS = 60_000;

/** Long-running work (imports, bulk changes, recomputes) and its progress. */
const JobsService: ServiceSchema = {
  name: "jobs",
  mixins: [DbMixin(Workspace)],
  settings: { rest: "/" },

  actions: {
    /** Jobs of the workspace, newest first; filters id, type, status. Any member or key. */
    list: {
      rest: "GET /workspaces/:workspaceId/jobs",
      openapi: { tags: ["Jobs"], summary: "List jobs (imports, bulk changes, recomputes) with their progress, newest first" },
      auth: "any",
      params: {
        $$strict: "remove",
        workspaceId: "string",
        ...pageParams,
        id: { type: "string", max: 64, optional: true },
        type: { type: "string", max: 100, optional: true },
        status: { type: "enum", values: ["queued", "running", "completed", "failed", "cancelled"], optional: true },
      },
      async handler(ctx: Ctx) {
        const page = pageRequest(ctx.params);
        const { id, type, status } = ctx.params;
        const { rows, total } = await listJobs(workspaceOf(ctx), { id, type, status }, page.limit, page.offset);
        return pageOf(rows, total, page);
      },
    },

    /** Internal (cron tick): fail jobs whose worker died. */
    sweep: {
      handler: () => failAbandonedJobs(),
    },
  },

  started() {
    this.sweepTimer = setInterval(() => {
      failAbandonedJobs().catch((err) => this.logger.warn("Job sweep failed", err));
    }, SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
  },

  stopped() {
    clearInterval(this.sweepTimer);
  },
};

export default JobsService;
