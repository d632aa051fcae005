import { BEGINNING, rebuildRanges, type DayRange, type RebuildSource } from "./rebuild-ranges";
import * as repo from "./rebuild.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Rebuild a workspace's analytics rollups and per-contact facts from its raw
 * rows in one set-based pass (for a bulk load written with the triggers off,
 * or to repair): every count the triggers and the fold keep, recomputed for
 * whole UTC days, none that retention trimmed (rebuild-ranges.ts).
 * What no raw row holds is kept as counted: opt-outs (outbox facts),
 * contacts removed, and the contacts' counts where a removal followed.
 * Attribution uses every touch held in the 30 days before a conversion; the
 * triggers use those stored before it, so a touch stored after its
 * conversion counts once rebuilt.
 */

export type RebuildAnswer = Record<RebuildSource, DayRange | null>;

export async function rebuildRollups(
  workspaceId: WorkspaceId,
  requested: { from?: Date; to?: Date },
): Promise<RebuildAnswer> {
  const ranges = rebuildRanges(
    { from: requested.from ?? BEGINNING, to: requested.to ?? new Date() },
    await repo.keptRows(workspaceId),
  );
  const done = await repo.rebuild(workspaceId, ranges);
  const answer = { ...ranges };
  for (const source of Object.keys(done) as RebuildSource[]) if (!done[source]) answer[source] = null;
  return answer;
}
