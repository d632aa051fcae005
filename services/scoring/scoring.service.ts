import type { ServiceSchema } from "moleculer";
import { SYSTEM } from "../../lib/access";
import { startJob } from "../../lib/jobs";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { isServiceAvailable } from "../../lib/registry";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { ScoringRule } from "../../models";
import * as repo from "./scoring.repo";
import { schemas } from "./scoring.schemas";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const HISTORY_DEFAULT = 50;
const HISTORY_MAX = 200;

/** Lead scoring: rules (segments.* scopes), a contact's score and history (contacts.* scopes), the chain's score step. */
const ScoringService: ServiceSchema = {
  name: "scoring",
  mixins: [DbMixin(ScoringRule)],
  settings: { rest: "/" },

  actions: {
    /** Scoring rules, newest first (paginated). segments.read. */
    list: {
      rest: "GET /workspaces/:workspaceId/scoring-rules",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "List scoring rules" },
      permission: "segments.read",
      params: schemas.list,
      handler: (ctx: Ctx) => repo.listRules(workspaceOf(ctx), pageRequest(ctx.params)),
    },

    /** Create a rule: event type, optional `where`, points (may be negative), caps. segments.write. */
    create: {
      rest: "POST /workspaces/:workspaceId/scoring-rules",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "Create a scoring rule" },
      permission: "segments.write",
      params: schemas.create,
      async handler(ctx: Ctx) {
        const { name, eventType, where, points, maxPerContact, periodCap, active } = ctx.params;
        const rule = await repo.createRule(workspaceOf(ctx), {
          name,
          eventType,
          where,
          points,
          maxPerContact,
          periodCap,
          active,
        });
        ctx.meta.$statusCode = 201;
        return rule;
      },
    },

    /** Rebuild every rule-given score of the workspace from its events, as a job. segments.write. */
    recalculate: {
      rest: "POST /workspaces/:workspaceId/scoring-rules/recalculate",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "Rebuild all rule scores from events as a job" },
      permission: "segments.write",
      params: schemas.recalculate,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const createdBy = ctx.meta.principal?.kind === "user" ? ctx.meta.principal.userId : null;
        const { jobId } = await startJob(
          { workspaceId: ws, type: "scoring.recalculate", createdBy },
          async (progress) => {
            const result = await repo.recalculate(ws, progress);
            if (isServiceAvailable(this.broker, "segments")) {
              await this.broker.call(
                "segments.recomputeScoreSegments",
                {},
                { meta: { principal: SYSTEM, workspaceId: ws } },
              );
            }
            return result;
          },
        );
        ctx.meta.$statusCode = 202;
        return { jobId };
      },
    },

    /** One rule. segments.read. */
    get: {
      rest: "GET /workspaces/:workspaceId/scoring-rules/:ruleId",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "Get a scoring rule" },
      permission: "segments.read",
      params: schemas.get,
      handler: (ctx: Ctx) => repo.getRule(workspaceOf(ctx), ctx.params.ruleId),
    },

    /** Change a rule (applies to events from now on; recalculate to rebuild the past). segments.write. */
    update: {
      rest: "PATCH /workspaces/:workspaceId/scoring-rules/:ruleId",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "Update a scoring rule" },
      permission: "segments.write",
      params: schemas.update,
      handler(ctx: Ctx) {
        const { ruleId, name, eventType, where, points, maxPerContact, periodCap, active } = ctx.params;
        return repo.updateRule(workspaceOf(ctx), ruleId, {
          name,
          eventType,
          where,
          points,
          maxPerContact,
          periodCap,
          active,
        });
      },
    },

    /** Delete a rule; points it gave stay in the history. segments.delete. */
    remove: {
      rest: "DELETE /workspaces/:workspaceId/scoring-rules/:ruleId",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "Delete a scoring rule" },
      permission: "segments.delete",
      params: schemas.get,
      async handler(ctx: Ctx) {
        await repo.deleteRule(workspaceOf(ctx), ctx.params.ruleId);
        return { success: true };
      },
    },

    /** A contact's score and history, newest first (`limit` default 50, max 200). contacts.read. */
    scores: {
      rest: "GET /workspaces/:workspaceId/contacts/:contactId/scores",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "A contact's score and history" },
      permission: "contacts.read",
      params: schemas.scores,
      handler(ctx: Ctx) {
        const limit = Math.min(HISTORY_MAX, ctx.params.limit ?? HISTORY_DEFAULT);
        return repo.scoreOf(workspaceOf(ctx), ctx.params.contactId, limit);
      },
    },

    /** Adjust a score by hand `{points, reason}`; score-based segments follow before the answer. contacts.write. */
    adjust: {
      rest: "POST /workspaces/:workspaceId/contacts/:contactId/scores",
      auth: "any",
      openapi: { tags: ["Scoring"], summary: "Adjust a contact's score by hand" },
      permission: "contacts.write",
      params: schemas.adjust,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, points, reason } = ctx.params;
        await repo.adjustScore(ws, contactId, points, reason ?? null);
        await this.scoreChanged(ctx, ws, contactId);
        ctx.meta.$statusCode = 201;
        return repo.scoreOf(ws, contactId, HISTORY_DEFAULT);
      },
    },

    /**
     * Internal, the chain's last step: score one event (idempotent per event
     * id). When the score changed, segments that use `score` are evaluated
     * once more before this returns.
     */
    applyEvent: {
      params: schemas.applyEvent,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { eventId, contactId, type, metadata, timestamp } = ctx.params;
        const result = await repo.applyEvent(ws, { eventId, contactId, type, metadata, timestamp });
        if (result && result.score !== result.scoreBefore)
          await this.scoreChanged(ctx, ws, contactId, eventId);
        return result ?? { scoreBefore: null, score: null, applied: [] };
      },
    },
  },

  methods: {
    async scoreChanged(ctx: Ctx, ws: string, contactId: string, eventId?: string) {
      if (!isServiceAvailable(this.broker, "segments")) return;
      await ctx.call(
        "segments.evaluateContact",
        { contactId, eventId, scoreChanged: true },
        { meta: { principal: SYSTEM, workspaceId: ws } },
      );
    },
  },
};

export default ScoringService;
