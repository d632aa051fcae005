import type { Context } from "moleculer";
import type { ServiceThis } from "../../lib/define-service";
import type { WorkspaceId } from "../../lib/tenancy";
import type { refreshTimeRelative } from "./membership";
import type { MembershipChange } from "./membership.repo";
import type * as repo from "./segments.repo";

export type Segment = NonNullable<Awaited<ReturnType<typeof repo.getSegment>>>;
export type MembershipChanges = { entered: MembershipChange[]; exited: MembershipChange[] };

/** The segments service's `this`: what computes, follows and announces memberships (members.actions.ts too). */
export type SegmentsService = ServiceThis<{
  computed(
    ctx: Context<unknown, { $statusCode?: number }>,
    ws: WorkspaceId,
    id: string,
    background: boolean,
  ): Promise<Segment | (Segment & { jobId: string })>;
  followStatic(ws: WorkspaceId, segmentId: string, contactIds: string[]): Promise<void>;
  refreshTimeBased(): ReturnType<typeof refreshTimeRelative>;
  scoreContactRules(ctx: Context, ws: WorkspaceId, contactIds: string[]): Promise<void>;
  announce(ws: WorkspaceId, result: MembershipChanges, eventId?: string): void;
}>;
