import { requires } from "../../lib/access";
import type { Context } from "moleculer";
import { actingUserId } from "../../lib/audit";
import { defineAction, defineService, type ServiceThis } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import { startJob } from "../../lib/jobs";
import type { AppMeta } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { optionalStepRuns } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { queueStatsAction } from "../../lib/queue-stats";
import { decayQueueFigures } from "./decay.repo";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { decayDue } from "./decay";
import * as engine from "./engine";
import { checkRule } from "./rules";
import * as repo from "./scoring.repo";
import { results, schemas } from "./scoring.schemas";

const contactsRead = requires("contacts.read");
const contactsWrite = requires("contacts.write");
const segmentsRemove = requires("segments.delete");
const segmentsRead = requires("segments.read");
const segmentsWrite = requires("segments.write");

type Ctx = Context<unknown, AppMeta>;

/** The scoring service's `this`: how score changes reach segments, and the decay pass. */
type ScoringService = ServiceThis<{
  scoreChanged(ctx: Ctx, ws: WorkspaceId, contactId: string, eventId?: string): Promise<void>;
  scoresChanged(ws: WorkspaceId, contactIds: string[], ctx?: Ctx): Promise<void>;
  ruleSaved(ctx: Ctx, ws: WorkspaceId, ruleId: string): Promise<void>;
  applyDecay(): Promise<{ contacts: number; points: number }>;
}>;

const HISTORY_DEFAULT = 50;
const HISTORY_MAX = 200;
/** How often the service expires due points (also run by `GET /api/cron/tick`). */
/** Score segments follow changed contacts one batch at a time; past this many, a full recompute is cheaper. */
const EVALUATE_BATCH = 1000;
const FULL_RECOMPUTE_ABOVE = 20_000;

/** Lead scoring: rules (segments.* scopes), a contact's score and history (contacts.* scopes), the chain's score step. */
export default defineService<ScoringService>({
  name: "scoring",
  mixins: [DatabaseMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /** Scoring rules, newest first (paginated). segments.read. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/scoring-rules",
      ...segmentsRead,
      openapi: { tags: ["Scoring"], summary: "List scoring rules" },
      params: schemas.list,
      result: results.list,
      handler: (ctx) => repo.listRules(workspaceOf(ctx), pageRequest(ctx.params)),
    }),

    /**
     * Create a rule: an event type (optional `where`, caps, `decay: {days}`) or
     * a contact `condition` (its points held while the contact matches; given
     * to matching contacts before the answer), points (may be negative). segments.write.
     */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/scoring-rules",
      ...segmentsWrite,
      openapi: {
        tags: ["Scoring"],
        summary: "Create a scoring rule (event or contact condition)",
        description:
          "Exactly one of `eventType` and `condition` (400 naming the field). An event rule may take `where`, " +
          "`maxPerContact`, `periodCap` and `decay: {days}` (its points expire that many days after the event). " +
          "A condition rule (a filter group of the segments language, without `score`, segment or time conditions) " +
          "gives its points once to each contact while it matches, and takes them back when it stops; " +
          "contacts matching when the rule is saved are scored before the answer.",
      },
      params: schemas.create,
      status: 201,
      result: results.rule,
      async handler(this: ScoringService, ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, ...input } = ctx.params; // the workspace comes from ctx.meta
        const id = await repo.insertRule(ws, input, checkRule(input));
        await this.ruleSaved(ctx, ws, id);
        return found(await repo.findRule(ws, id), "Scoring rule");
      },
    }),

    /** Rebuild every rule-given score of the workspace from its events, as a job. segments.write. */
    recalculate: defineAction({
      rest: "POST /workspaces/:workspaceId/scoring-rules/recalculate",
      ...segmentsWrite,
      openapi: { tags: ["Scoring"], summary: "Rebuild all rule scores from events as a job" },
      params: schemas.recalculate,
      status: 202,
      result: results.job,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { jobId } = await startJob(
          { workspaceId: ws, type: "scoring.recalculate", createdBy: actingUserId(ctx) },
          async (progress) => {
            const result = await engine.recalculate(ws, progress);
            if (optionalStepRuns(this.broker, "segments.recomputeScoreSegments")) {
              await systemCall(this.broker, ws, "segments.recomputeScoreSegments", {});
            }
            return result;
          },
        );
        return { jobId };
      },
    }),

    /** One rule. segments.read. */
    get: defineAction({
      rest: "GET /workspaces/:workspaceId/scoring-rules/:ruleId",
      ...segmentsRead,
      openapi: { tags: ["Scoring"], summary: "Get a scoring rule" },
      params: schemas.get,
      result: results.rule,
      handler: async (ctx) => found(await repo.findRule(workspaceOf(ctx), ctx.params.ruleId), "Scoring rule"),
    }),

    /**
     * Change a rule (event rules: applies to events from now on, recalculate to
     * rebuild the past; condition rules: contacts follow the new condition
     * before the answer). A rule's kind does not change. segments.write.
     */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/scoring-rules/:ruleId",
      ...segmentsWrite,
      openapi: { tags: ["Scoring"], summary: "Update a scoring rule" },
      params: schemas.update,
      result: results.rule,
      async handler(this: ScoringService, ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, ruleId, ...changes } = ctx.params;
        const stored = found(await repo.findRule(ws, ruleId), "Scoring rule");
        if (!(await repo.updateRule(ws, ruleId, changes, checkRule(changes, stored))))
          throw notFound("Scoring rule");
        await this.ruleSaved(ctx, ws, ruleId);
        return found(await repo.findRule(ws, ruleId), "Scoring rule");
      },
    }),

    /** Delete a rule; points it gave stay in the history. segments.delete. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/scoring-rules/:ruleId",
      ...segmentsRemove,
      openapi: { tags: ["Scoring"], summary: "Delete a scoring rule" },
      params: schemas.get,
      result: results.success,
      async handler(ctx) {
        if (!(await repo.deleteRule(workspaceOf(ctx), ctx.params.ruleId))) throw notFound("Scoring rule");
        return { success: true as const };
      },
    }),

    /** A contact's score and history, newest first (`limit` default 50, max 200). contacts.read. */
    scores: defineAction({
      rest: "GET /workspaces/:workspaceId/contacts/:contactId/scores",
      ...contactsRead,
      openapi: { tags: ["Scoring"], summary: "A contact's score and history" },
      params: schemas.scores,
      result: results.score,
      async handler(ctx) {
        const limit = Math.min(HISTORY_MAX, ctx.params.limit ?? HISTORY_DEFAULT);
        return found(await repo.scoreOf(workspaceOf(ctx), ctx.params.contactId, limit), "Contact");
      },
    }),

    /** Adjust a score by hand `{points, reason}`; score-based segments follow before the answer. contacts.write. */
    adjust: defineAction({
      rest: "POST /workspaces/:workspaceId/contacts/:contactId/scores",
      ...contactsWrite,
      openapi: { tags: ["Scoring"], summary: "Adjust a contact's score by hand" },
      params: schemas.adjust,
      status: 201,
      result: results.score,
      async handler(this: ScoringService, ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, points, reason } = ctx.params;
        found(await engine.adjustScore(ws, contactId, points, reason ?? null), "Contact");
        await this.scoreChanged(ctx, ws, contactId);
        return found(await repo.scoreOf(ws, contactId, HISTORY_DEFAULT), "Contact");
      },
    }),

    /**
     * Internal, the chain's last step: score one event (idempotent per event
     * id). When the score changed, segments that use `score` are evaluated
     * once more before this returns.
     */
    applyEvent: defineAction({
      params: schemas.applyEvent,
      result: results.applyEvent,
      async handler(this: ScoringService, ctx) {
        const ws = workspaceOf(ctx);
        const { eventId, contactId, type, metadata, timestamp } = ctx.params;
        const event = { eventId, contactId, type, metadata: metadata ?? undefined, timestamp };
        const result = await engine.applyEvent(ws, event, ctx.meta.configVersions);
        if (result && result.score !== result.scoreBefore)
          await this.scoreChanged(ctx, ws, contactId, eventId);
        return result ?? { scoreBefore: null, score: null, applied: [] };
      },
    }),

    /**
     * Internal (segments, after the contacts service's writes): the contacts'
     * condition rules follow; score segments are evaluated once more for the
     * contacts whose score changed. Answers at once without a condition rule.
     */
    applyContactRules: defineAction({
      params: schemas.applyContactRules,
      result: results.applyContactRules,
      async handler(this: ScoringService, ctx) {
        const ws = workspaceOf(ctx);
        const changed = await engine.applyContactRules(ws, ctx.params.contactIds);
        await this.scoresChanged(ws, changed, ctx);
        return { changed: changed.length };
      },
    }),

    /** Internal (service timer, cron tick): expire decayed points of every workspace; score segments follow. */
    applyDecay: defineAction({
      handler(this: ScoringService) {
        return this.applyDecay();
      },
    }),

    /** Internal (timer, operators' `queues`): score entries still to decay, set in this process's gauges too. */
    queueStats: queueStatsAction(async () => [await decayQueueFigures()]),
  },

  methods: {
    async scoreChanged(ctx: Ctx, ws: WorkspaceId, contactId: string, eventId?: string) {
      // Segments gone (an outage) fail the event's chain, which is queued again (events/chain.ts).
      if (!optionalStepRuns(this.broker, "segments.evaluateContact")) return;
      // The event's chain probed the definitions' versions once; the score segments are read at those too.
      await systemCall(
        ctx,
        ws,
        "segments.evaluateContact",
        { contactId, eventId, scoreChanged: true },
        { configVersions: ctx.meta.configVersions },
      );
    },

    /** Score segments follow many contacts whose score changed (rule saved, decay, contact writes). */
    async scoresChanged(ws: WorkspaceId, contactIds: string[], ctx?: Ctx) {
      if (!contactIds.length || !optionalStepRuns(this.broker, "segments.evaluateContacts")) return;
      const call = (action: string, params: object) => systemCall(ctx ?? this.broker, ws, action, params);
      if (contactIds.length > FULL_RECOMPUTE_ABOVE) {
        await call("segments.recomputeScoreSegments", {});
        return;
      }
      for (let i = 0; i < contactIds.length; i += EVALUATE_BATCH) {
        await call("segments.evaluateContacts", {
          contactIds: contactIds.slice(i, i + EVALUATE_BATCH),
          scoreChanged: true,
        });
      }
    },

    /** After a rule write: a condition rule scores the workspace now. */
    async ruleSaved(ctx: Ctx, ws: WorkspaceId, ruleId: string) {
      await this.scoresChanged(ws, await engine.syncRule(ws, ruleId), ctx);
    },

    async applyDecay() {
      const decayed = await decayDue();
      const byWorkspace = new Map<WorkspaceId, string[]>();
      for (const d of decayed) {
        const ids = byWorkspace.get(d.workspaceId) ?? [];
        ids.push(d.contactId);
        byWorkspace.set(d.workspaceId, ids);
      }
      for (const [ws, contactIds] of byWorkspace) await this.scoresChanged(ws, contactIds);
      return { contacts: decayed.length, points: decayed.reduce((sum, d) => sum + d.points, 0) };
    },
  },
});
