import { requires } from "../../lib/access";
import { defineAction } from "../../lib/define-service";
import { fieldError, found, notFound, validationError } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { validateEventWhere, type FieldCondition, type FilterGroup } from "./filter-schema";
import type { SegmentsService } from "./segments.this";
import * as repo from "./segments.repo";
import * as membersRepo from "./members.repo";
import * as matchingRepo from "./matching.repo";
import { results, schemas } from "./segments.schemas";

const read = requires("segments.read");
const write = requires("segments.write");

const WS = "/workspaces/:workspaceId/segments";
const tags = ["Segments"];

/** The workspace's static segment: 404 when there is none, 400 when it is dynamic (its members follow its filter). */
async function staticSegment(ws: WorkspaceId, segmentId: string) {
  const segment = found(await repo.getSegment(ws, segmentId), "Segment");
  if (segment.type !== "static")
    throw validationError("Members of a dynamic segment follow its filter", [
      { field: "contactIds", message: "only static segments take explicit members" },
    ]);
  return segment;
}

/** The segments service's member actions (mixed into `segments`); dynamic segments follow through `followStatic`. */
export const memberActions = {
  actions: {
    /** Members with contact summaries, newest entry first (paginated). segments.read. */
    members: defineAction({
      rest: `GET ${WS}/:segmentId/members`,
      ...read,
      openapi: { tags, summary: "List members with contact summaries" },
      params: schemas.members,
      result: results.members,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        found(await repo.getSegment(ws, ctx.params.segmentId), "Segment");
        return membersRepo.listMembers(ws, ctx.params.segmentId, pageRequest(ctx.params));
      },
    }),

    /** Internal (campaign conditions): whether a contact matches a filter now; 400 naming the bad node. */
    matches: defineAction({
      params: schemas.matches,
      result: results.matches,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        await repo.checkFilter(ws, ctx.params.filter, "");
        return {
          matches: await matchingRepo.contactMatches(
            ws,
            ctx.params.contactId,
            ctx.params.filter as FilterGroup,
          ),
        };
      },
    }),

    /** Internal (the website script's focus items): which of some segments a contact is a member of now. */
    memberOf: defineAction({
      params: schemas.memberOf,
      result: results.memberOf,
      handler: async (ctx) => ({
        segmentIds: await membersRepo.memberOf(workspaceOf(ctx), ctx.params.contactId, ctx.params.segmentIds),
      }),
    }),

    /** Internal (pushing an audience elsewhere): a page of member ids in id order, after `after`; 404 naming segmentId. */
    memberIds: defineAction({
      params: schemas.memberIds,
      result: results.memberIds,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { segmentId, after, limit } = ctx.params;
        if (!(await repo.getSegment(ws, segmentId)))
          throw notFound("Segment", { field: "segmentId", message: "is not a segment of this workspace" });
        return { contactIds: await membersRepo.memberIdsPage(ws, segmentId, after ?? "", limit) };
      },
    }),

    /** Internal (dynamic content): those of up to 1,000 contacts a filter matches now; 400 naming a bad node. */
    matchingContacts: defineAction({
      params: schemas.matchingContacts,
      result: results.matchingContacts,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        await repo.checkFilter(ws, ctx.params.filter, "");
        const { contactIds, filter } = ctx.params;
        return { contactIds: await matchingRepo.contactsMatching(ws, contactIds, filter as FilterGroup) };
      },
    }),

    /** Internal (campaign event triggers and waits): whether one event meets conditions on its fields; 400 naming the bad one. */
    eventMatches: defineAction({
      params: schemas.eventMatches,
      result: results.matches,
      async handler(ctx) {
        const issues = validateEventWhere(ctx.params.where, "where");
        if (issues.length)
          throw validationError(`Invalid where: ${issues[0].field} ${issues[0].message}`, issues);
        const where = ctx.params.where as unknown as FieldCondition[];
        return { matches: await matchingRepo.eventMatches(workspaceOf(ctx), ctx.params.eventId, where) };
      },
    }),

    /** Add contacts to a static segment. segments.write. */
    addMembers: defineAction({
      rest: `POST ${WS}/:segmentId/members`,
      ...write,
      openapi: { tags, summary: "Add contacts to a static segment" },
      params: schemas.addMembers,
      result: results.added,
      async handler(this: SegmentsService, ctx) {
        const ws = workspaceOf(ctx);
        await staticSegment(ws, ctx.params.segmentId);
        const added = await membersRepo.addStaticMembers(ws, ctx.params.segmentId, ctx.params.contactIds);
        await this.followStatic(ws, ctx.params.segmentId, ctx.params.contactIds);
        const { memberCount } = found(await repo.getSegment(ws, ctx.params.segmentId), "Segment");
        return { added, memberCount };
      },
    }),

    /** Remove contacts from a static segment (body `{contactIds}` or `?contactIds=a,b`). segments.write. */
    removeMembers: defineAction({
      rest: `DELETE ${WS}/:segmentId/members`,
      ...write,
      openapi: { tags, summary: "Remove contacts from a static segment" },
      params: schemas.removeMembers,
      result: results.removed,
      async handler(this: SegmentsService, ctx) {
        const ws = workspaceOf(ctx);
        const raw = ctx.params.contactIds;
        const ids = Array.isArray(raw)
          ? raw
          : raw
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean);
        if (ids.length === 0 || ids.length > 1000)
          throw fieldError("contactIds", "must name 1 to 1000 contacts");
        await staticSegment(ws, ctx.params.segmentId);
        const removed = await membersRepo.removeStaticMembers(ctx.params.segmentId, ids);
        await this.followStatic(ws, ctx.params.segmentId, ids);
        const { memberCount } = found(await repo.getSegment(ws, ctx.params.segmentId), "Segment");
        return { success: true as const, removed, memberCount };
      },
    }),
  },
};
