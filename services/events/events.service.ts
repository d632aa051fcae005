import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { defineAction, defineService } from "../../lib/define-service";
import { pageRequest } from "../../lib/pagination";
import { Nullable } from "../../lib/schema";
import { workspaceOf } from "../../lib/tenancy";
import { queueStatsAction } from "../../lib/queue-stats";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { OutboxRelayMixin } from "../../mixins/outbox-relay";
import { backfillTime } from "./backfill";
import { recordEvent, recordEvents, retryChains } from "./chain";
import { chainRetryFigures } from "./chain-retries.repo";
import * as repo from "./events.repo";
import { retentionActions } from "../../lib/retention";
import { clampEventsLimit, schemas } from "./events.schemas";

const read = requires("contacts.read");
const sessionRead = requires("contacts.read", { auth: "session" });
const sessionWrite = requires("contacts.write", { auth: "session" });

/** Recorded activity events and the ordered chain every origin goes through. */
export default defineService({
  name: "events",
  mixins: [DatabaseMixin, OutboxRelayMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    // Internal (retention): countBefore and purgeBefore over the workspace's events (lib/retention.ts).
    ...retentionActions(repo.countBefore, repo.deleteBefore),

    /** Record an event, now or at a past `timestamp` (backfill); answers after the chain (segments, campaigns, score). Session only. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/events",
      ...sessionWrite,
      params: schemas.create,
      status: 201,
      result: schemas.createResult,
      openapi: {
        tags: ["Events"],
        summary: "Record an activity event, now or at a past `timestamp` (answers after the 6.3 chain)",
      },
      handler(ctx) {
        // The path's workspaceId rides along unread: the workspace comes from ctx.meta.
        const { timestamp, ...input } = ctx.params;
        return recordEvent(this.broker, ctx, { ...input, timestamp: backfillTime(timestamp) });
      },
    }),

    /** Newest events first, filtered by contact and type; limit default 50, max 200. Session only. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/events",
      ...sessionRead,
      params: schemas.list,
      result: schemas.listResult,
      openapi: { tags: ["Events"], summary: "List events with their contact" },
      handler(ctx) {
        const { contactId, type, limit } = ctx.params;
        return repo.listEvents(workspaceOf(ctx), { contactId, type }, clampEventsLimit(limit));
      },
    }),

    /** The workspace's activity feed: recorded events newest first with their contact (filters type, contactId, from, to). contacts.read. */
    activity: defineAction({
      rest: "GET /workspaces/:workspaceId/activity",
      ...read,
      params: schemas.activity,
      result: schemas.activityResult,
      openapi: {
        tags: ["Events"],
        summary:
          "The activity feed: recorded events newest first, each with its contact (filters type, contactId, from, to)",
      },
      handler(ctx) {
        const { type, contactId, from, to } = ctx.params;
        return repo.activityFeed(
          workspaceOf(ctx),
          { type, contactId, from: from ? new Date(from) : undefined, to: to ? new Date(to) : undefined },
          pageRequest(ctx.params),
        );
      },
    }),

    /** Internal: the one entry for every recorded event (API, inbound webhooks, forms, tracking, channel inbound). */
    record: defineAction({
      params: schemas.record,
      result: schemas.createResult,
      handler(ctx) {
        return recordEvent(this.broker, ctx, ctx.params);
      },
    }),

    /** Internal (an inbound batch): `record` for many events in one statement, each chain run; null: no such contact. */
    recordBatch: defineAction({
      params: schemas.recordBatch,
      result: Type.Array(Nullable(schemas.createResult)),
      handler(ctx) {
        return recordEvents(this.broker, ctx, ctx.params.events);
      },
    }),

    /** Internal (timer, cron tick): one pass over the events whose chain failed after they were stored, each run again. */
    retryChains: defineAction({
      result: Type.Object({ more: Type.Boolean() }),
      handler: async function (ctx) {
        return { more: await retryChains(ctx.broker, this.logger) };
      },
    }),

    /** Internal (timer, the REPL's `queues`): the chain-retry queue's figures, into the queue gauges. */
    queueStats: queueStatsAction(async () => [await chainRetryFigures()]),

    /** Internal (the website script, forms): a visitor identified takes its session's anonymous events. */
    claimSession: defineAction({
      params: schemas.claimSession,
      result: Type.Object({ claimed: Type.Integer() }),
      handler: async (ctx) => ({
        claimed: await repo.claimSession(workspaceOf(ctx), ctx.params.sessionId, ctx.params.contactId),
      }),
    }),

    /** Internal: a contact's newest events (timeline, GDPR export). */
    listForContact: defineAction({
      params: schemas.listForContact,
      result: schemas.listResult,
      handler(ctx) {
        return repo.listEvents(
          workspaceOf(ctx),
          { contactId: ctx.params.contactId },
          clampEventsLimit(ctx.params.limit),
        );
      },
    }),
  },
});
