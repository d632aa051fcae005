import type { ServiceSchema } from "moleculer";
import { config } from "../../lib/config";
import { database } from "../../lib/database";
import { fieldError } from "../../lib/errors";
import { startJob } from "../../lib/jobs";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { SYSTEM } from "../../lib/access";
import { isServiceAvailable } from "../../lib/registry";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Segment } from "../../models";
import { QueryTypes } from "sequelize";
import type { FilterGroup } from "./filter-schema";
import {
  evaluateContacts,
  recomputeAffected,
  recomputeWithDependents,
  refreshTimeRelative,
  type MembershipChange,
  type Trigger,
} from "./membership";
import * as repo from "./segments.repo";
import { schemas } from "./segments.schemas";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

/** Broker event with every entry and exit, for campaign triggers "entered/exited segment". */
export const MEMBERSHIP_CHANGED_EVENT = "segments.membership.changed";

const DAY_MS = 86_400_000;
/** How often the service looks for time-relative segments due a refresh (each is refreshed every SEGMENT_TIME_REFRESH_MS). */
const REFRESH_CHECK_MS = 60_000;
/** Membership changes per broker event, so a large refresh never makes one huge message. */
const ANNOUNCE_CHUNK = 1000;
const createdBy = (ctx: Ctx) => (ctx.meta.principal?.kind === "user" ? ctx.meta.principal.userId : null);

/** Segments: definitions, exact incremental membership, recompute jobs, members, growth and preview. */
const SegmentsService: ServiceSchema = {
  name: "segments",
  mixins: [DbMixin(Segment)],
  settings: { rest: "/" },

  actions: {
    /** Segments of the workspace, newest first (paginated). segments.read. */
    list: {
      rest: "GET /workspaces/:workspaceId/segments",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "List segments" },
      permission: "segments.read",
      params: schemas.list,
      handler: (ctx: Ctx) => repo.listSegments(workspaceOf(ctx), pageRequest(ctx.params), ctx.params.type),
    },

    /**
     * Create a segment. A dynamic one is computed before the answer (exact
     * memberCount); in a workspace over SEGMENT_SYNC_LIMIT contacts it answers
     * 202 with `memberCount: null` and a `jobId`. segments.write.
     */
    create: {
      rest: "POST /workspaces/:workspaceId/segments",
      auth: "any",
      openapi: {
        tags: ["Segments"],
        summary: "Create a segment (dynamic: membership computed before the answer)",
      },
      permission: "segments.write",
      params: schemas.create,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { name, description, type, filter, contactIds } = ctx.params;
        const id = repo.newSegmentId();
        if (type === "static") {
          if (filter !== undefined) throw fieldError("filter", "applies only to dynamic segments");
          if (contactIds) await repo.assertContacts(ws, contactIds);
          await repo.insertSegment(ws, id, { name, description, type }, null, false);
          if (contactIds) await repo.addStaticMembers(ws, id, contactIds);
          ctx.meta.$statusCode = 201;
          return repo.getSegment(ws, id);
        }
        if (filter === undefined) throw fieldError("filter", "is required for a dynamic segment");
        if (contactIds !== undefined) throw fieldError("contactIds", "apply only to static segments");
        const facts = await repo.checkFilter(ws, filter, id);
        const background = (await repo.contactCount(ws)) > config().segmentSyncLimit;
        await repo.insertSegment(ws, id, { name, description, type, filter }, facts, background);
        return this.computeAndAnswer(ctx, ws, id, background, 201);
      },
    },

    /** Count and first matches of an unsaved filter, within SEGMENT_PREVIEW_TIMEOUT_MS (else 400 QUERY_TOO_EXPENSIVE). segments.read. */
    preview: {
      rest: "POST /workspaces/:workspaceId/segments/preview",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Count and sample of an unsaved filter (time-bounded)" },
      permission: "segments.read",
      params: schemas.preview,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        await repo.checkFilter(ws, ctx.params.filter, "\u0000preview");
        return repo.preview(ws, ctx.params.filter as FilterGroup);
      },
    },

    /** One segment with its member count. segments.read. */
    get: {
      rest: "GET /workspaces/:workspaceId/segments/:segmentId",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Get a segment with its member count" },
      permission: "segments.read",
      params: schemas.get,
      handler: (ctx: Ctx) => repo.getSegment(workspaceOf(ctx), ctx.params.segmentId),
    },

    /** Rename, describe or change the filter (membership recomputed before the answer). segments.write. */
    update: {
      rest: "PATCH /workspaces/:workspaceId/segments/:segmentId",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Update a segment (a new filter recomputes membership)" },
      permission: "segments.write",
      params: schemas.update,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { segmentId, name, description, filter } = ctx.params;
        const current = await repo.getSegment(ws, segmentId);
        if (filter === undefined) {
          await repo.updateSegmentRow(ws, segmentId, { name, description });
          return repo.getSegment(ws, segmentId);
        }
        if (current.type === "static") throw fieldError("filter", "applies only to dynamic segments");
        const facts = await repo.checkFilter(ws, filter, segmentId);
        const background = (await repo.contactCount(ws)) > config().segmentSyncLimit;
        await repo.updateSegmentRow(ws, segmentId, {
          name,
          description,
          filter,
          facts,
          computing: background || undefined,
        });
        return this.computeAndAnswer(ctx, ws, segmentId, background, 200);
      },
    },

    /** Delete a segment (409 while another segment's filter uses it). segments.delete. */
    remove: {
      rest: "DELETE /workspaces/:workspaceId/segments/:segmentId",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Delete a segment" },
      permission: "segments.delete",
      params: schemas.get,
      async handler(ctx: Ctx) {
        await repo.deleteSegment(workspaceOf(ctx), ctx.params.segmentId);
        return { success: true };
      },
    },

    /** Recompute a dynamic segment as a job; its result is `{added, removed, memberCount}`. segments.write. */
    recompute: {
      rest: "POST /workspaces/:workspaceId/segments/:segmentId",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Recompute a dynamic segment as a job" },
      permission: "segments.write",
      params: schemas.get,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const segment = await repo.getSegment(ws, ctx.params.segmentId);
        if (segment.type !== "dynamic")
          throw fieldError("segmentId", "is a static segment; its members are explicit");
        const { jobId } = await this.recomputeJob(ctx, ws, segment.id);
        ctx.meta.$statusCode = 202;
        return { jobId };
      },
    },

    /** Daily member count, entries and exits (UTC days; default the last 30). segments.read. */
    growth: {
      rest: "GET /workspaces/:workspaceId/segments/:segmentId/growth",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Daily member count, entries and exits" },
      permission: "segments.read",
      params: schemas.growth,
      handler(ctx: Ctx) {
        const to: Date = ctx.params.to ?? new Date();
        const from: Date = ctx.params.from ?? new Date(to.getTime() - ((ctx.params.days ?? 30) - 1) * DAY_MS);
        if (from > to) throw fieldError("from", "must not be after to");
        if (to.getTime() - from.getTime() > 366 * DAY_MS)
          throw fieldError("from", "the range may span at most 366 days");
        return repo.growth(workspaceOf(ctx), ctx.params.segmentId, { from, to });
      },
    },

    /** Members with contact summaries, newest entry first (paginated). segments.read. */
    members: {
      rest: "GET /workspaces/:workspaceId/segments/:segmentId/members",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "List members with contact summaries" },
      permission: "segments.read",
      params: schemas.members,
      handler: (ctx: Ctx) =>
        repo.listMembers(workspaceOf(ctx), ctx.params.segmentId, pageRequest(ctx.params)),
    },

    /** Add contacts to a static segment. segments.write. */
    addMembers: {
      rest: "POST /workspaces/:workspaceId/segments/:segmentId/members",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Add contacts to a static segment" },
      permission: "segments.write",
      params: schemas.addMembers,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const added = await repo.addStaticMembers(ws, ctx.params.segmentId, ctx.params.contactIds);
        await this.followStatic(ws, ctx.params.segmentId, ctx.params.contactIds);
        const { memberCount } = await repo.getSegment(ws, ctx.params.segmentId);
        return { added, memberCount };
      },
    },

    /** Remove contacts from a static segment (body `{contactIds}` or `?contactIds=a,b`). segments.write. */
    removeMembers: {
      rest: "DELETE /workspaces/:workspaceId/segments/:segmentId/members",
      auth: "any",
      openapi: { tags: ["Segments"], summary: "Remove contacts from a static segment" },
      permission: "segments.write",
      params: schemas.removeMembers,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const raw = ctx.params.contactIds;
        const ids: string[] = Array.isArray(raw)
          ? raw
          : String(raw)
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean);
        if (ids.length === 0 || ids.length > 1000)
          throw fieldError("contactIds", "must name 1 to 1000 contacts");
        const removed = await repo.removeStaticMembers(ws, ctx.params.segmentId, ids);
        await this.followStatic(ws, ctx.params.segmentId, ids);
        const { memberCount } = await repo.getSegment(ws, ctx.params.segmentId);
        return { success: true, removed, memberCount };
      },
    },

    /**
     * Internal (activity chain, scoring): re-evaluate one contact. With an
     * event, only segments whose filter uses that event type (and their
     * dependents); with `scoreChanged`, only those that use `score`.
     */
    evaluateContact: {
      params: schemas.evaluateContact,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, eventId, scoreChanged } = ctx.params;
        let trigger: Trigger = { kind: "contact" };
        if (scoreChanged) trigger = { kind: "score" };
        else if (eventId)
          trigger = { kind: "event", eventType: ctx.params.eventType ?? (await this.eventType(ws, eventId)) };
        const result = await evaluateContacts(ws, [contactId], trigger, eventId, ctx.meta.configVersions);
        this.announce(ws, result, eventId);
        if (trigger.kind === "contact") await this.scoreContactRules(ctx, ws, [contactId]);
        return {
          entered: result.entered.map((e) => e.segmentId),
          exited: result.exited.map((e) => e.segmentId),
        };
      },
    },

    /**
     * Internal (contacts service after any write): re-evaluate contacts against
     * every dynamic segment, then score the contact-condition rules (whose score
     * change re-evaluates the score segments once more). With `scoreChanged`
     * (scoring, after a score change): only the segments that use `score`.
     */
    evaluateContacts: {
      params: schemas.evaluateContacts,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { contactIds, scoreChanged } = ctx.params;
        const result = await evaluateContacts(ws, contactIds, { kind: scoreChanged ? "score" : "contact" });
        this.announce(ws, result);
        if (!scoreChanged) await this.scoreContactRules(ctx, ws, contactIds);
        return { entered: result.entered.length, exited: result.exited.length };
      },
    },

    /**
     * Internal (service timer, cron tick): recompute every time-relative
     * segment (`within_last`, event `within`) whose refresh is due, so members
     * leave and enter as time passes; changes are logged and announced.
     */
    refreshTimeBased: {
      handler() {
        return this.refreshTimeBased();
      },
    },

    /** Internal (scoring recalculation): full recompute of every segment whose filter uses `score`. */
    recomputeScoreSegments: {
      handler: (ctx: Ctx) => recomputeAffected(workspaceOf(ctx), { kind: "score" }),
    },
  },

  methods: {
    /** Compute membership now, or as a job in a big workspace (202 with memberCount null). */
    async computeAndAnswer(ctx: Ctx, ws: string, id: string, background: boolean, status: number) {
      if (background) {
        const { jobId } = await this.recomputeJob(ctx, ws, id);
        ctx.meta.$statusCode = 202;
        return { ...(await repo.getSegment(ws, id)), jobId };
      }
      await recomputeWithDependents(ws, id);
      ctx.meta.$statusCode = status;
      return repo.getSegment(ws, id);
    },

    recomputeJob(ctx: Ctx, ws: string, id: string) {
      return startJob(
        { workspaceId: ws, type: "segments.recompute", createdBy: createdBy(ctx), total: 1 },
        async (progress) => {
          const result = await recomputeWithDependents(ws, id);
          await repo.setComputing(id, false);
          await progress(1, 1);
          return { segmentId: id, ...result };
        },
        (err) => {
          this.logger.error(`Recompute of segment ${id} failed`, err);
          repo.setComputing(id, false).catch(() => undefined);
        },
      );
    },

    /** A static segment changed by hand: dynamic segments that reference it follow for those contacts. */
    async followStatic(ws: string, segmentId: string, contactIds: string[]) {
      const sequelize = await database();
      const [{ n }] = await sequelize.query<{ n: string }>(
        `SELECT count(*) AS n FROM segments WHERE workspace_id = $1 AND $2 = ANY(depends_on)`,
        { bind: [ws, segmentId], type: QueryTypes.SELECT },
      );
      if (Number(n) === 0) return;
      this.announce(ws, await evaluateContacts(ws, contactIds, { kind: "contact" }));
    },

    async eventType(ws: string, eventId: string): Promise<string | undefined> {
      const sequelize = await database();
      const [row] = await sequelize.query<{ type: string }>(
        `SELECT type FROM events WHERE workspace_id = $1 AND id = $2`,
        {
          bind: [ws, eventId],
          type: QueryTypes.SELECT,
        },
      );
      return row?.type;
    },

    refreshTimeBased() {
      return refreshTimeRelative(
        (ws: string, changes: { entered: MembershipChange[]; exited: MembershipChange[] }) =>
          this.announce(ws, changes),
        (id: string, err: unknown) => this.logger.warn(`Time refresh of segment ${id} failed`, err),
      );
    },

    /** Contact-condition scoring rules follow a contact change (segments have seen the old score by now). */
    async scoreContactRules(ctx: Ctx, ws: string, contactIds: string[]) {
      if (!contactIds.length || !isServiceAvailable(this.broker, "scoring")) return;
      await ctx.call(
        "scoring.applyContactRules",
        { contactIds },
        { meta: { principal: SYSTEM, workspaceId: ws } },
      );
    },

    announce(
      ws: string,
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

  started() {
    const period = Math.min(REFRESH_CHECK_MS, Math.max(1000, config().segmentTimeRefreshMs));
    this.refreshTimer = setInterval(() => {
      this.refreshTimeBased().catch((err: unknown) => this.logger.warn("Time refresh failed", err));
    }, period);
    this.refreshTimer.unref();
  },

  stopped() {
    clearInterval(this.refreshTimer);
  },
};

export default SegmentsService;
