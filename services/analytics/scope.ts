import { isServiceAvailable } from "../../lib/registry";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import type { Scope } from "./answers";
import type { RangeQuery } from "./analytics.schemas";
import { frameOf } from "./buckets";
import { foldEvents } from "./rollups.repo";

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

/**
 * What an answer covers: the workspace, its buckets in the requested zone and
 * the filters; `segmentId` narrows every answer to the segment's current
 * members (segment.repo.ts). An unknown segment is 404. Every stored event's
 * facts are derived first (waiting for a fold under way), so an answer counts
 * an event the moment it is stored.
 */
export async function scopeOf(ctx: AppContext, query: Partial<RangeQuery>): Promise<Scope> {
  const workspaceId = workspaceOf(ctx);
  // Side by side: none needs another's answer, and the answer reads only once all have settled.
  const [timezone] = await Promise.all([
    query.timezone ?? workspaceZone(ctx, workspaceId),
    foldEvents(true),
    query.segmentId === undefined ? null : knownSegment(ctx, query.segmentId),
  ]);
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
