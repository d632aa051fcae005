import { requires } from "../../lib/access";
import { actingUserId, audit } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { retentionPolicy } from "../../lib/retention";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { countAll, cutoffsOf, startPurge } from "./purge";
import * as repo from "./retention.repo";
import { results, schemas } from "./retention.schemas";

const settingsManage = requires("settings.manage");

/** Workspaces claimed per pass of the daily step; the rest are claimed at the next pass. */
const CLAIM_PER_PASS = 50;

/** Data retention: each kind of fact kept a number of days, purged daily and on request. */
export default defineService({
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
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, dryRun, ...setting } = ctx.params;
        const policy = retentionPolicy(setting);
        if (dryRun) {
          ctx.meta.$statusCode = 200;
          return { policy, wouldDelete: await countAll(ctx, ws, cutoffsOf(policy, new Date())) };
        }
        await systemCall(ctx, ws, "workspaces.mergeSettings", { settings: { retention: policy } });
        const { jobId } = await startPurge(this.broker, this.logger, ws, policy, actingUserId(ctx));
        await repo.noteRun(ws, jobId);
        await audit(ctx, "retention.updated", { type: "workspace", id: ws }, { policy, jobId });
        return { jobId, policy };
      },
    }),

    /** Internal (hourly timer, cron tick): start the purge of each workspace not yet purged today (UTC), once across replicas. */
    runDaily: defineAction({
      result: results.runDaily,
      async handler() {
        const due = await repo.claimDue(CLAIM_PER_PASS);
        for (const { workspaceId, setting } of due) {
          const { jobId } = await startPurge(
            this.broker,
            this.logger,
            workspaceId,
            retentionPolicy(setting),
            null,
          );
          await repo.noteRun(workspaceId, jobId);
        }
        return { started: due.length };
      },
    }),
  },
});
