import { Type } from "@sinclair/typebox";
import { requires } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import * as answers from "./answers";
import { schemas } from "./analytics.schemas";
import { rebuildRollups } from "./rebuild";
import { foldRollups } from "./rollups.repo";
import { knownCampaign, scopeOf } from "./scope";

const WS = "/workspaces/:workspaceId/analytics";
const READ = requires("analytics.read");
const RANGE =
  "Query: from, to (inclusive, whole buckets; the last 30 days), granularity (day), timezone (the workspace's), channel, campaignId";
const SEGMENT =
  "; segmentId: the segment's current members only, from their rows or per-contact facts (an unknown segment 404)";
/** Cohorts and attribution take no channel or campaign filter. */
const RANGE_ONLY =
  "Query: from, to (inclusive, whole buckets; the last 30 days), granularity (day), timezone (the workspace's)";
const doc = (summary: string, query = RANGE) => ({
  tags: ["Analytics"],
  summary,
  description: query + SEGMENT,
});

/**
 * Analytics answers (contract-messaging 12), read from rollups and
 * per-contact facts the database keeps as facts happen (migrations 0083,
 * 0084, 0089; since 0085 the rollups' deltas are appended with each fact and
 * folded in every ANALYTICS_FOLD_MS), never from raw rows, except realtime's
 * last 30 minutes and the rollup answers narrowed to a segment (its members'
 * rows; the per-contact answers narrow their facts to the members).
 * analytics.read.
 */
export default defineService({
  name: "analytics",
  mixins: [DatabaseMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /** Contacts, message counts and rates, events, submissions and revenue over the range. */
    overview: defineAction({
      rest: `GET ${WS}`,
      ...READ,
      params: schemas.overview,
      result: schemas.overviewResult,
      openapi: doc("Overview: contacts, message counts and rates, events, submissions, revenue"),
      handler: async (ctx) => answers.overview(await scopeOf(ctx, ctx.params)),
    }),

    /** One figure per bucket. */
    timeseries: defineAction({
      rest: `GET ${WS}/timeseries`,
      ...READ,
      params: schemas.timeseries,
      result: schemas.timeseriesResult,
      openapi: doc("A metric per bucket (a message count, events, contacts, submissions, revenue)"),
      handler: async (ctx) => answers.timeseries(await scopeOf(ctx, ctx.params), ctx.params.metric),
    }),

    /** One campaign: enrollments, message counts and rates, node entries, link clicks. */
    campaign: defineAction({
      rest: `GET ${WS}/campaigns/:campaignId`,
      ...READ,
      params: schemas.campaign,
      result: schemas.campaignResult,
      openapi: doc(
        "A campaign: enrollments, message counts and rates, enrollments per node, clicks per link",
      ),
      handler: async (ctx) => {
        const scope = await scopeOf(ctx, ctx.params);
        await knownCampaign(ctx, ctx.params.campaignId);
        return answers.campaign({ ...scope, campaignId: ctx.params.campaignId });
      },
    }),

    /** Message counts and rates by channel, with suppressions by reason. */
    deliverability: defineAction({
      rest: `GET ${WS}/deliverability`,
      ...READ,
      params: schemas.deliverability,
      result: schemas.deliverabilityResult,
      openapi: doc("Message counts and rates by channel, suppressed sends by reason"),
      handler: async (ctx) => answers.deliverability(await scopeOf(ctx, ctx.params)),
    }),

    /** Email counts and rates by recipient domain. */
    domains: defineAction({
      rest: `GET ${WS}/domains`,
      ...READ,
      params: schemas.domains,
      result: schemas.domainsResult,
      openapi: doc("Email counts and rates by recipient domain"),
      handler: async (ctx) => answers.domains(await scopeOf(ctx, ctx.params)),
    }),

    /** Events per bucket and by type. */
    activity: defineAction({
      rest: `GET ${WS}/activity`,
      ...READ,
      params: schemas.activity,
      result: schemas.activityResult,
      openapi: doc("Recorded events per bucket and by type"),
      handler: async (ctx) => answers.activity(await scopeOf(ctx, ctx.params)),
    }),

    /** Purchases' `metadata.amount`: total, orders, per bucket and by campaign. */
    revenue: defineAction({
      rest: `GET ${WS}/revenue`,
      ...READ,
      params: schemas.revenue,
      result: schemas.revenueResult,
      openapi: doc("Revenue of `purchase` events (metadata.amount): total, orders, per bucket, by campaign"),
      handler: async (ctx) => answers.revenue(await scopeOf(ctx, ctx.params)),
    }),

    /** Contacts through a sequence of event types, by their first times, within a window. */
    funnel: defineAction({
      rest: `GET ${WS}/funnel`,
      ...READ,
      params: schemas.funnel,
      result: schemas.funnelResult,
      openapi: doc(
        "A funnel of event types (steps=a,b,c; windowDays, 30): contacts whose first a is in the range, then those whose first b followed, ...",
      ),
      handler: async (ctx) => {
        const steps = answers.stepsOf(ctx.params.steps);
        return answers.funnel(await scopeOf(ctx, ctx.params), steps, ctx.params.windowDays ?? 30);
      },
    }),

    /** Contacts by the UTM source and medium they first came from, and their conversions. */
    sources: defineAction({
      rest: `GET ${WS}/sources`,
      ...READ,
      params: schemas.sources,
      result: schemas.sourcesResult,
      openapi: doc(
        "Contacts by the UTM source and medium they first came from in the range, and how many then converted (conversion, `purchase`)",
      ),
      handler: async (ctx) =>
        answers.sources(await scopeOf(ctx, ctx.params), ctx.params.conversion ?? "purchase"),
    }),

    /** Contacts by the bucket of their first `event` (else creation), and the share active in each bucket after. */
    cohorts: defineAction({
      rest: `GET ${WS}/cohorts`,
      ...READ,
      params: schemas.cohorts,
      result: schemas.cohortsResult,
      openapi: doc(
        "Cohorts (event: their first time of it; none: contacts created) per bucket, each with the share of its contacts that did any event in its own bucket and each later one",
        RANGE_ONLY,
      ),
      handler: async (ctx) => answers.cohorts(await scopeOf(ctx, ctx.params), ctx.params.event ?? null),
    }),

    /** Conversions and their revenue by the touches they are attributed to. */
    attribution: defineAction({
      rest: `GET ${WS}/attribution`,
      ...READ,
      params: schemas.attribution,
      result: schemas.attributionResult,
      openapi: doc(
        "Conversions (conversion, `purchase`) in the range and their metadata.amount attributed to campaign messages sent and UTM sources of the 30 days before each (model: first_touch, last_touch (default), linear)",
        RANGE_ONLY,
      ),
      handler: async (ctx) =>
        answers.attribution(
          await scopeOf(ctx, ctx.params),
          ctx.params.model ?? "last_touch",
          ctx.params.conversion ?? "purchase",
        ),
    }),

    /** The last 30 minutes: visitors, events per minute, newest events. */
    realtime: defineAction({
      rest: `GET ${WS}/realtime`,
      ...READ,
      params: schemas.realtime,
      result: schemas.realtimeResult,
      openapi: {
        tags: ["Analytics"],
        summary: "The last 30 minutes: active visitors, events per minute, newest events",
      },
      handler: (ctx) => answers.realtime(workspaceOf(ctx)),
    }),

    /**
     * Internal (timer, cron tick): derive the stored events' facts (migration 0112), then fold the appended rollup
     * deltas into the rollups until none is left; answers how many deltas were folded.
     */
    foldRollups: defineAction({
      result: Type.Integer(),
      handler: () => foldRollups(),
    }),

    /**
     * Internal (operators' `rebuild-analytics`, the bench): rebuild the workspace's rollups and per-contact facts
     * from its raw rows for the UTC days of the range, none older than its oldest raw row kept (rebuild.ts).
     */
    rebuildRollups: defineAction({
      // A year of a large workspace's facts takes minutes: no request timeout, whoever calls.
      timeout: 0,
      params: schemas.rebuildRollups,
      result: schemas.rebuildRollupsResult,
      handler: (ctx) =>
        rebuildRollups(workspaceOf(ctx), {
          from: ctx.params.from === undefined ? undefined : new Date(ctx.params.from),
          to: ctx.params.to === undefined ? undefined : new Date(ctx.params.to),
        }),
    }),
  },
});
