import { Type } from "@sinclair/typebox";
import { requires } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import * as answers from "./answers";
import { schemas } from "./analytics.schemas";
import { foldRollups } from "./rollups.repo";
import { knownCampaign, scopeOf } from "./scope";

const WS = "/workspaces/:workspaceId/analytics";
const READ = requires("analytics.read");
const RANGE =
  "Query: from, to (inclusive, whole buckets; the last 30 days), granularity (day), timezone (the workspace's), channel, campaignId";
const doc = (summary: string) => ({ tags: ["Analytics"], summary, description: RANGE });

/**
 * Analytics answers (contract-messaging 12), read from rollups the database
 * keeps as facts happen (migrations 0083, 0085: deltas appended with each
 * fact, folded into the rollups every ANALYTICS_FOLD_MS), never from raw rows,
 * except realtime's last 30 minutes. analytics.read.
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

    /** Internal (timer, cron tick): fold the appended rollup deltas into the rollups until none is left; answers how many. */
    foldRollups: defineAction({
      result: Type.Integer(),
      handler: () => foldRollups(),
    }),
  },
});
