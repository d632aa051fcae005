import { requires } from "../../lib/access";
import type { Context } from "moleculer";
import { actingUserId } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { fieldError, found, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { optionalStepRuns } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { queueStatsAction } from "../../lib/queue-stats";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { computeMembership, prepareFilter, recomputeJob } from "./compute";
import { evaluateContacts, recomputeAffected, refreshTimeRelative, type Trigger } from "./membership";
import type { MembershipChange } from "./membership.repo";
import { memberActions } from "./members.actions";
import type { SegmentsService } from "./segments.this";
import * as repo from "./segments.repo";
import * as membersRepo from "./members.repo";
import * as matchingRepo from "./matching.repo";
import { results, schemas } from "./segments.schemas";

const remove = requires("segments.delete");
const read = requires("segments.read");
const write = requires("segments.write");

/** Broker event with every entry and exit, for campaign triggers "entered/exited segment". */
export const MEMBERSHIP_CHANGED_EVENT = "segments.membership.changed";

const WS = "/workspaces/:workspaceId/segments";
const tags = ["Segments"];
const DAY_MS = 86_400_000;
/** How often the service looks for time-relative segments due a refresh (each is refreshed every SEGMENT_TIME_REFRESH_MS). */
/** Membership changes per broker event, so a large refresh never makes one huge message. */
const ANNOUNCE_CHUNK = 1000;

/** Segments: definitions, exact incremental membership, recompute jobs, members, growth and preview. */
export default defineService<SegmentsService>({
  name: "segments",
  mixins: [DatabaseMixin, memberActions, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /** Segments of the workspace, newest first (paginated). segments.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      ...read,
      openapi: { tags, summary: "List segments" },
      params: schemas.list,
      result: results.list,
      handler: (ctx) => repo.listSegments(workspaceOf(ctx), pageRequest(ctx.params), ctx.params.type),
    }),

    /**
     * Create a segment. A dynamic one is computed before the answer (exact
     * memberCount); in a workspace over SEGMENT_SYNC_LIMIT contacts it answers
     * 202 with `memberCount: null` and a `jobId`. segments.write.
     */
    create: defineAction({
      rest: `POST ${WS}`,
      ...write,
      openapi: { tags, summary: "Create a segment (dynamic: membership computed before the answer)" },
      params: schemas.create,
      status: 201,
      result: results.segment,
      alsoAnswers: { 202: results.computing },
      async handler(this: SegmentsService, ctx) {
        const ws = workspaceOf(ctx);
        const { name, description, type = "dynamic", filter, contactIds } = ctx.params;
        const id = repo.newSegmentId();
        if (type === "static") {
          if (filter !== undefined) throw fieldError("filter", "applies only to dynamic segments");
          if (contactIds) await membersRepo.assertContacts(ws, contactIds);
          await repo.insertSegment(ws, id, { name, description, type }, null, false);
          if (contactIds) await membersRepo.addStaticMembers(ws, id, contactIds);
          return found(await repo.getSegment(ws, id), "Segment");
        }
        if (filter === undefined) throw fieldError("filter", "is required for a dynamic segment");
        if (contactIds !== undefined) throw fieldError("contactIds", "apply only to static segments");
        const { facts, background } = await prepareFilter(ws, filter, id);
        await repo.insertSegment(ws, id, { name, description, type, filter }, facts, background);
        return this.computed(ctx, ws, id, background);
      },
    }),

    /** Count and first matches of an unsaved filter, within SEGMENT_PREVIEW_TIMEOUT_MS (else 400 QUERY_TOO_EXPENSIVE). segments.read. */
    preview: defineAction({
      rest: `POST ${WS}/preview`,
      ...read,
      openapi: { tags, summary: "Count and sample of an unsaved filter (time-bounded)" },
      params: schemas.preview,
      result: results.preview,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        await repo.checkFilter(ws, ctx.params.filter, "\u0000preview");
        return matchingRepo.preview(ws, ctx.params.filter);
      },
    }),

    /** One segment with its member count. segments.read. */
    get: defineAction({
      rest: `GET ${WS}/:segmentId`,
      ...read,
      openapi: { tags, summary: "Get a segment with its member count" },
      params: schemas.get,
      result: results.segment,
      handler: async (ctx) => found(await repo.getSegment(workspaceOf(ctx), ctx.params.segmentId), "Segment"),
    }),

    /** Rename, describe or change the filter (membership recomputed before the answer). segments.write. */
    update: defineAction({
      rest: `PATCH ${WS}/:segmentId`,
      ...write,
      openapi: { tags, summary: "Update a segment (a new filter recomputes membership)" },
      params: schemas.update,
      result: results.segment,
      alsoAnswers: { 202: results.computing },
      async handler(this: SegmentsService, ctx) {
        const ws = workspaceOf(ctx);
        const { segmentId, name, description, filter } = ctx.params;
        const current = found(await repo.getSegment(ws, segmentId), "Segment");
        if (filter === undefined) {
          await repo.updateSegmentRow(ws, segmentId, { name, description });
          return found(await repo.getSegment(ws, segmentId), "Segment");
        }
        if (current.type === "static") throw fieldError("filter", "applies only to dynamic segments");
        const { facts, background } = await prepareFilter(ws, filter, segmentId);
        const changes = { name, description, filter, facts, computing: background || undefined };
        await repo.updateSegmentRow(ws, segmentId, changes);
        return this.computed(ctx, ws, segmentId, background);
      },
    }),

    /** Delete a segment (409 while another segment's filter uses it). segments.delete. */
    remove: defineAction({
      rest: `DELETE ${WS}/:segmentId`,
      ...remove,
      openapi: { tags, summary: "Delete a segment" },
      params: schemas.get,
      result: results.success,
      async handler(ctx) {
        if (!(await repo.deleteSegment(workspaceOf(ctx), ctx.params.segmentId))) throw notFound("Segment");
        return { success: true as const };
      },
    }),

    /** Recompute a dynamic segment as a job; its result is `{added, removed, memberCount}`. segments.write. */
    recompute: defineAction({
      rest: `POST ${WS}/:segmentId`,
      ...write,
      openapi: { tags, summary: "Recompute a dynamic segment as a job" },
      params: schemas.get,
      status: 202,
      result: results.job,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const segment = found(await repo.getSegment(ws, ctx.params.segmentId), "Segment");
        if (segment.type !== "dynamic")
          throw fieldError("segmentId", "is a static segment; its members are explicit");
        const { jobId } = await recomputeJob(ws, segment.id, actingUserId(ctx), this.logger);
        return { jobId };
      },
    }),

    /** Daily member count, entries and exits (UTC days; default the last 30). segments.read. */
    growth: defineAction({
      rest: `GET ${WS}/:segmentId/growth`,
      ...read,
      openapi: { tags, summary: "Daily member count, entries and exits" },
      params: schemas.growth,
      result: results.growth,
      async handler(ctx) {
        const to = ctx.params.to ? new Date(ctx.params.to) : new Date();
        const from = ctx.params.from
          ? new Date(ctx.params.from)
          : new Date(to.getTime() - ((ctx.params.days ?? 30) - 1) * DAY_MS);
        if (from > to) throw fieldError("from", "must not be after to");
        if (to.getTime() - from.getTime() > 366 * DAY_MS)
          throw fieldError("from", "the range may span at most 366 days");
        const segment = found(await repo.getSegment(workspaceOf(ctx), ctx.params.segmentId), "Segment");
        return membersRepo.growth(segment, { from, to });
      },
    }),

    /**
     * Internal (activity chain, scoring): re-evaluate one contact. With an
     * event, only segments whose filter uses that event type (and their
     * dependents); with `scoreChanged`, only those that use `score`.
     */
    evaluateContact: defineAction({
      params: schemas.evaluateContact,
      result: results.evaluateContact,
      async handler(this: SegmentsService, ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, eventId, scoreChanged } = ctx.params;
        let trigger: Trigger = { kind: "contact" };
        if (scoreChanged) trigger = { kind: "score" };
        else if (eventId)
          trigger = {
            kind: "event",
            eventType: ctx.params.eventType ?? (await matchingRepo.eventTypeOf(ws, eventId)),
          };
        const result = await evaluateContacts(ws, [contactId], trigger, eventId, ctx.meta.configVersions);
        this.announce(ws, result, eventId);
        if (trigger.kind === "contact") await this.scoreContactRules(ctx, ws, [contactId]);
        return {
          entered: result.entered.map((e) => e.segmentId),
          exited: result.exited.map((e) => e.segmentId),
        };
      },
    }),

    /**
     * Internal (contacts service after any write): re-evaluate contacts against
     * every dynamic segment, then score the contact-condition rules (whose score
     * change re-evaluates the score segments once more). With `scoreChanged`
     * (scoring, after a score change): only the segments that use `score`.
     */
    evaluateContacts: defineAction({
      params: schemas.evaluateContacts,
      result: results.evaluateContacts,
      async handler(this: SegmentsService, ctx) {
        const ws = workspaceOf(ctx);
        const { contactIds, scoreChanged } = ctx.params;
        const result = await evaluateContacts(ws, contactIds, { kind: scoreChanged ? "score" : "contact" });
        this.announce(ws, result);
        if (!scoreChanged) await this.scoreContactRules(ctx, ws, contactIds);
        return { entered: result.entered.length, exited: result.exited.length };
      },
    }),

    /**
     * Internal (service timer, cron tick): recompute every time-relative
     * segment (`within_last`, event `within`) whose refresh is due, so members
     * leave and enter as time passes; changes are logged and announced.
     */
    refreshTimeBased: defineAction({
      handler(this: SegmentsService) {
        return this.refreshTimeBased();
      },
    }),

    /** Internal (timer, operators' `queues`): time-relative segments' refreshes, set in this process's gauges too. */
    queueStats: queueStatsAction(async () => [await repo.timeRefreshQueueFigures()]),

    /** Internal (scoring recalculation): full recompute of every segment whose filter uses `score`. */
    recomputeScoreSegments: defineAction({
      handler: (ctx) => recomputeAffected(workspaceOf(ctx), { kind: "score" }),
    }),
  },

  methods: {
    /** The saved segment, computed now; or with its job's id, answered 202, when it computes in the background. */
    async computed(
      ctx: Context<unknown, { $statusCode?: number }>,
      ws: WorkspaceId,
      id: string,
      background: boolean,
    ) {
      const { jobId } = await computeMembership(ws, id, background, actingUserId(ctx), this.logger);
      const segment = found(await repo.getSegment(ws, id), "Segment");
      if (!jobId) return segment;
      ctx.meta.$statusCode = 202;
      return { ...segment, jobId };
    },

    /** A static segment changed by hand: dynamic segments that reference it follow for those contacts. */
    async followStatic(ws: WorkspaceId, segmentId: string, contactIds: string[]) {
      if ((await repo.dependentCount(ws, segmentId)) === 0) return;
      this.announce(ws, await evaluateContacts(ws, contactIds, { kind: "contact" }));
    },

    refreshTimeBased() {
      return refreshTimeRelative(
        (ws: WorkspaceId, changes: { entered: MembershipChange[]; exited: MembershipChange[] }) =>
          this.announce(ws, changes),
        (id: string, err: unknown) => this.logger.warn(`Time refresh of segment ${id} failed`, err),
      );
    },

    /** Contact-condition scoring rules follow a contact change (segments have seen the old score by now). */
    async scoreContactRules(ctx: Context, ws: WorkspaceId, contactIds: string[]) {
      if (!contactIds.length || !optionalStepRuns(this.broker, "scoring.applyContactRules")) return;
      await systemCall(ctx, ws, "scoring.applyContactRules", { contactIds });
    },

    announce(
      ws: WorkspaceId,
      result: { entered: MembershipChange[]; exited: MembershipChange[] },
      eventId?: string,
    ) {
      const { entered, exited } = result;
      for (let i = 0; i < Math.max(entered.length, exited.length); i += ANNOUNCE_CHUNK) {
        this.broker.emit(MEMBERSHIP_CHANGED_EVENT, {
          workspaceId: ws,
          eventId: eventId ?? null,
          entered: entered.slice(i, i + ANNOUNCE_CHUNK),
          exited: exited.slice(i, i + ANNOUNCE_CHUNK),
        });
      }
    },
  },
});
