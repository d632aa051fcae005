import type { LoggerInstance } from "moleculer";
import { config } from "../../lib/config";
import { startJob } from "../../lib/jobs";
import type { FilterGroup } from "./filter-schema";
import { recomputeWithDependents } from "./membership";
import * as repo from "./segments.repo";
import * as matchingRepo from "./matching.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Saving a dynamic segment's filter and computing its membership: the one
 * path of create and update. A workspace over SEGMENT_SYNC_LIMIT contacts
 * computes as a job; otherwise the membership is exact before the answer.
 */

/** Check a filter (400 naming the bad node) and decide whether its computation runs in the background. */
export async function prepareFilter(workspaceId: WorkspaceId, filter: FilterGroup, segmentId: string) {
  const facts = await repo.checkFilter(workspaceId, filter, segmentId);
  const background = (await matchingRepo.contactCount(workspaceId)) > config().segmentSyncLimit;
  return { facts, background };
}

/** Recompute a segment and the segments that use it, as a job; its result is `{segmentId, added, removed, memberCount}`. */
export function recomputeJob(
  workspaceId: WorkspaceId,
  segmentId: string,
  createdBy: string | null,
  logger: LoggerInstance,
) {
  return startJob(
    { workspaceId, type: "segments.recompute", createdBy, total: 1 },
    async (progress) => {
      const result = await recomputeWithDependents(workspaceId, segmentId);
      await repo.setComputing(segmentId, false);
      await progress(1, 1);
      return { segmentId, ...result };
    },
    (err) => {
      logger.error(`Recompute of segment ${segmentId} failed`, err);
      repo.setComputing(segmentId, false).catch(() => undefined);
    },
  );
}

/** Compute the membership now, or start the job: the job's id when it runs in the background. */
export async function computeMembership(
  workspaceId: WorkspaceId,
  segmentId: string,
  background: boolean,
  createdBy: string | null,
  logger: LoggerInstance,
): Promise<{ jobId?: string }> {
  if (background) return { jobId: (await recomputeJob(workspaceId, segmentId, createdBy, logger)).jobId };
  await recomputeWithDependents(workspaceId, segmentId);
  return {};
}
