import { requires } from "../../lib/access";
import { actingUserId, audit } from "../../lib/audit";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { retentionPolicy, type RetentionPolicy } from "../../lib/retention";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { countAll, cutoffsOf, startPurge } from "./purge";
import * as repo from "./retention.repo";
import { results, schemas } from "./retention.schemas";

const settingsManage = requires("settings.manage");

/**
 * Daily purges one process runs at once: the step claims only as many
 * workspaces as there is room for, the rest at its next passes, so a day's
 * purges never pile up beside the ingest.
 */
const DAILY_PURGES_AT_ONCE = 2;

/** The retention service's `this`: the purges running in this process, and how one is started. */
type RetentionService = ServiceThis<{
  purgesRunning: number;
  runPurge(workspaceId: WorkspaceId, policy: RetentionPolicy, createdBy: string | null): Promise<string>;
}>;

/** Data retention: each kind of fact kept a number of days, purged daily and on request. */
export default defineService<RetentionService>({
  name: "retention",
  mixins: [DatabaseMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /**
     * Save the policy as `settings.retention` and purge now (202, a
     * `retention.purge` job); `dryRun` answers what a purge would delete now
     * (200) and saves nothing. settings.manage.
     */
    apply: defineAction({
      rest: "POST /workspaces/:workspaceId/data-retention",
      ...settingsManage,
      params: schemas.apply,
      status: 202,
      result: results.started,
      alsoAnswers: { 200: results.dryRun },
      openapi: {
        tags: ["Data retention"],
        summary:
          "Set how many days events, messages, form submissions and webhook deliveries are kept, and purge now (or dry-run)",
      },
      async handler(this: RetentionService, ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, dryRun, ...setting } = ctx.params;
        const policy = retentionPolicy(setting);
        if (dryRun) {
          ctx.meta.$statusCode = 200;
          return { policy, wouldDelete: await countAll(ctx, ws, cutoffsOf(policy, new Date())) };
        }
        await systemCall(ctx, ws, "workspaces.mergeSettings", { settings: { retention: policy } });
        const jobId = await this.runPurge(ws, policy, actingUserId(ctx));
        await repo.noteRun(ws);
        await audit(ctx, "retention.updated", { type: "workspace", id: ws }, { policy, jobId });
        return { jobId, policy };
      },
    }),

    /** Internal (timer, cron tick): start the purge of each workspace not yet purged today (UTC), once across replicas. */
    runDaily: defineAction({
      result: results.runDaily,
      async handler(this: RetentionService) {
        const room = DAILY_PURGES_AT_ONCE - this.purgesRunning;
        const due = room > 0 ? await repo.claimDue(room) : [];
        let started = 0;
        for (const { workspaceId, setting } of due) {
          // One workspace's failure to start is logged; the others claimed with it still start.
          try {
            await this.runPurge(workspaceId, retentionPolicy(setting), null);
            started += 1;
          } catch (err) {
            this.logger.error(`Retention purge of workspace ${workspaceId} did not start`, err);
          }
        }
        return { started };
      },
    }),
  },

  created() {
    this.purgesRunning = 0;
  },

  methods: {
    /** Start a purge job, counted among this process's running purges until it ends; answers its job id. */
    async runPurge(workspaceId: WorkspaceId, policy: RetentionPolicy, createdBy: string | null) {
      const { jobId, done } = await startPurge(this.broker, this.logger, workspaceId, policy, createdBy);
      this.purgesRunning += 1;
      void done.finally(() => (this.purgesRunning -= 1));
      return jobId;
    },
  },
});
