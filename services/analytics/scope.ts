import { fieldError } from "../../lib/errors";
import { isServiceAvailable } from "../../lib/registry";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import type { Scope } from "./answers";
import type { RangeQuery } from "./analytics.schemas";
import { frameOf } from "./buckets";

/** The workspace's zone (`settings.timezone`, else UTC): the default of `timezone`. */
async function workspaceZone(ctx: AppContext, workspaceId: WorkspaceId): Promise<string> {
  const workspace = await systemCall<{ settings?: { timezone?: unknown } }>(
    ctx,
    workspaceId,
    "workspaces.get",
    {
      workspaceId,
    },
  );
  const zone = workspace.settings?.timezone;
  return typeof zone === "string" && zone ? zone : "UTC";
}

/** The answers that take `segmentId` (from the members' rows or per-contact facts, segment.repo.ts). */
export const SEGMENT_ANSWERS = [
  "overview",
  "timeseries",
  "activity",
  "revenue",
  "deliverability",
  "domains",
  "funnel",
  "sources",
  "cohorts",
  "attribution",
];

/**
 * What an answer covers: the workspace, its buckets in the requested zone and
 * the filters. `segment` says whether the answer can be narrowed to a
 * segment's members; where it cannot (its figures come from per-contact
 * firsts or attribution kept for everyone), `segmentId` is refused by name
 * rather than answered for everyone. An unknown segment is 404.
 */
export async function scopeOf(
  ctx: AppContext,
  query: Partial<RangeQuery>,
  { segment = false }: { segment?: boolean } = {},
): Promise<Scope> {
  const workspaceId = workspaceOf(ctx);
  if (query.segmentId !== undefined) {
    if (!segment)
      throw fieldError(
        "segmentId",
        `is not supported by this answer (only by ${SEGMENT_ANSWERS.join(", ")}): its figures are kept for the whole workspace`,
      );
    await knownSegment(ctx, query.segmentId);
  }
  const timezone = query.timezone ?? (await workspaceZone(ctx, workspaceId));
  return {
    workspaceId,
    frame: frameOf({ from: query.from, to: query.to, granularity: query.granularity, timezone }),
    channel: query.channel,
    campaignId: query.campaignId,
    segmentId: query.segmentId,
  };
}

/** An unknown segment is 404 (the segments area answers it), wherever that area is deployed. */
async function knownSegment(ctx: AppContext, segmentId: string): Promise<void> {
  if (!isServiceAvailable(ctx.broker, "segments")) return;
  const workspaceId = workspaceOf(ctx);
  await systemCall(ctx, workspaceId, "segments.get", { workspaceId, segmentId });
}

/** An unknown campaign is 404 (the campaigns area answers it), wherever that area is deployed. */
export async function knownCampaign(ctx: AppContext, campaignId: string): Promise<void> {
  if (!isServiceAvailable(ctx.broker, "campaigns")) return;
  const workspaceId = workspaceOf(ctx);
  await systemCall(ctx, workspaceId, "campaigns.get", { workspaceId, campaignId });
}
