import { Type, type Static, type TObject } from "@sinclair/typebox";
import { Component, DateTime, Nullable, Params, StringEnum } from "../../lib/schema";
import { GRANULARITIES } from "./buckets";
import { SOURCES } from "./rebuild-ranges";

/** Params and answers of the analytics routes (contract-messaging 12). */

const Id = Type.String({ minLength: 1, maxLength: 64 });

/** How many steps a funnel takes. */
export const FUNNEL_STEPS = { min: 2, max: 5 } as const;

/** Which of a contact's touches a conversion is attributed to. */
export const ATTRIBUTION_MODELS = ["first_touch", "last_touch", "linear"] as const;
export type AttributionModel = (typeof ATTRIBUTION_MODELS)[number];

/** What a message count is kept for, in the contract's order. */
export const COUNT_KEYS = [
  "sent",
  "delivered",
  "opened",
  "clicked",
  "bounced",
  "complained",
  "unsubscribed",
  "failed",
  "suppressed",
] as const;
export type CountKey = (typeof COUNT_KEYS)[number];

/** What `timeseries?metric=` takes: a count, or one of the workspace's other figures. */
export const METRICS = [...COUNT_KEYS, "events", "contacts", "submissions", "revenue"] as const;
export type Metric = (typeof METRICS)[number];

const Moment = Type.Union([Type.String({ format: "date-time" }), Type.String({ format: "date" })], {
  description: "ISO 8601 date-time, or a date (its whole day in the answer's zone)",
});

/** The contract's query, shared by every ranged answer. */
const rangeQuery = {
  workspaceId: Id,
  from: Type.Optional(Moment),
  to: Type.Optional(Moment),
  granularity: Type.Optional(StringEnum(GRANULARITIES, { description: "Bucket size (`day`)" })),
  timezone: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: "IANA zone of the buckets (the workspace's)" }),
  ),
  channel: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  campaignId: Type.Optional(Id),
  segmentId: Type.Optional(Id),
};
const Query = () => Params(rangeQuery);
export type RangeQuery = Static<TObject<typeof rangeQuery>>;

const Count = Type.Number({ minimum: 0 });
export const CountsSchema = Component(
  "AnalyticsCounts",
  Type.Object(Object.fromEntries(COUNT_KEYS.map((key) => [key, Count])) as Record<CountKey, typeof Count>),
);
export const RatesSchema = Component(
  "AnalyticsRates",
  Type.Object(
    Object.fromEntries(COUNT_KEYS.map((key) => [key, Type.Number()])) as Record<
      CountKey,
      ReturnType<typeof Type.Number>
    >,
    { description: "Each count divided by `sent` (0 when nothing was sent)" },
  ),
);
export type Counts = Static<typeof CountsSchema>;
export type Rates = Static<typeof RatesSchema>;

export const PointSchema = Component(
  "AnalyticsPoint",
  Type.Object({ t: DateTime({ description: "Bucket start (UTC)" }), value: Type.Number() }),
);
const Points = Type.Array(PointSchema, { description: "One per bucket of the range, empty ones 0" });

const RebuiltDays = Nullable(Type.Object({ from: DateTime(), to: DateTime() }));

export const schemas = {
  overview: Query(),
  overviewResult: Type.Object({
    contacts: Type.Object({
      total: Type.Number({ description: "Contacts held at the end of the range" }),
      new: Type.Number({ description: "Contacts created in the range" }),
    }),
    counts: CountsSchema,
    rates: RatesSchema,
    events: Type.Number(),
    submissions: Type.Number(),
    revenue: Type.Number(),
  }),
  timeseries: Params({ ...rangeQuery, metric: StringEnum(METRICS) }),
  timeseriesResult: Type.Object({ metric: StringEnum(METRICS), points: Points }),
  campaign: Params({ ...rangeQuery, campaignId: Id }),
  campaignResult: Type.Object({
    enrollments: Type.Number({ description: "Enrollments made in the range" }),
    counts: CountsSchema,
    rates: RatesSchema,
    nodes: Type.Array(Type.Object({ nodeId: Type.String(), entered: Type.Number() }), {
      description: "Enrollments that first entered each workflow node in the range, most first",
    }),
    links: Type.Array(Type.Object({ url: Type.String(), clicks: Type.Number() }), {
      description: "Verified clicks per link (its first 500 characters), most first",
    }),
  }),
  deliverability: Query(),
  deliverabilityResult: Type.Object({
    channels: Type.Array(
      Type.Object({
        channel: Type.String(),
        counts: CountsSchema,
        rates: RatesSchema,
        suppressed: Type.Record(Type.String(), Type.Number(), { description: "Suppressed sends by reason" }),
      }),
    ),
  }),
  domains: Query(),
  domainsResult: Type.Object({
    domains: Type.Array(Type.Object({ domain: Type.String(), counts: CountsSchema, rates: RatesSchema }), {
      description: "Email recipients' domains, most sent first (at most 100)",
    }),
  }),
  activity: Query(),
  activityResult: Type.Object({
    points: Points,
    byType: Type.Array(Type.Object({ type: Type.String(), count: Type.Number() }), {
      description: "Events by type, most first",
    }),
  }),
  revenue: Query(),
  revenueResult: Type.Object({
    total: Type.Number(),
    orders: Type.Number(),
    points: Points,
    byCampaign: Type.Array(
      Type.Object({ campaignId: Nullable(Type.String()), revenue: Type.Number(), orders: Type.Number() }),
      { description: "Revenue by the purchase's `metadata.campaignId` (null: none), most first" },
    ),
  }),
  funnel: Params({
    workspaceId: Id,
    from: rangeQuery.from,
    to: rangeQuery.to,
    timezone: rangeQuery.timezone,
    segmentId: rangeQuery.segmentId,
    steps: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: `Event types in order, comma-separated (${FUNNEL_STEPS.min} to ${FUNNEL_STEPS.max})`,
    }),
    windowDays: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 365,
        default: 30,
        description: "Each later step counts within this many days of the contact's first step",
      }),
    ),
  }),
  funnelResult: Type.Object({
    steps: Type.Array(
      Type.Object({
        type: Type.String(),
        contacts: Type.Integer(),
        rate: Type.Number({ description: "Contacts of this step over those of the first" }),
      }),
      {
        description:
          "By each contact's first time of each type: step 1, contacts whose first one is in the range; each next step, those whose first one came after the step before, within the window",
      },
    ),
  }),
  sources: Params({
    workspaceId: Id,
    from: rangeQuery.from,
    to: rangeQuery.to,
    timezone: rangeQuery.timezone,
    segmentId: rangeQuery.segmentId,
    conversion: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        default: "purchase",
        description: "The conversion's event type (`purchase`)",
      }),
    ),
  }),
  sourcesResult: Type.Object({
    sources: Type.Array(
      Type.Object({
        utmSource: Type.String(),
        utmMedium: Nullable(Type.String()),
        contacts: Type.Integer({ description: "Contacts who first came from it in the range" }),
        conversions: Type.Integer({
          description: "Of those, the ones whose first conversion followed, in the range",
        }),
      }),
      { description: "By UTM source and medium, most contacts first (at most 100)" },
    ),
  }),
  cohorts: Params({
    workspaceId: Id,
    from: rangeQuery.from,
    to: rangeQuery.to,
    granularity: rangeQuery.granularity,
    timezone: rangeQuery.timezone,
    segmentId: rangeQuery.segmentId,
    event: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          "The event type whose first time puts a contact in a cohort (none: the contact's creation)",
      }),
    ),
  }),
  cohortsResult: Type.Object({
    cohorts: Type.Array(
      Type.Object({
        cohort: DateTime({ description: "The cohort's bucket start (UTC)" }),
        size: Type.Integer({ description: "Contacts whose first event (else creation) is in the bucket" }),
        retention: Type.Array(Type.Number(), {
          description:
            "Share of the cohort that did any event in its own bucket (0), the next one (1), ... up to the range's end",
        }),
      }),
      { description: "One per bucket of the range (at most 120), empty ones with size 0" },
    ),
  }),
  attribution: Params({
    workspaceId: Id,
    from: rangeQuery.from,
    to: rangeQuery.to,
    timezone: rangeQuery.timezone,
    segmentId: rangeQuery.segmentId,
    model: Type.Optional(
      StringEnum(ATTRIBUTION_MODELS, {
        default: "last_touch",
        description: "Which of the contact's touches a conversion goes to: the first, the last, or each 1/n",
      }),
    ),
    conversion: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        default: "purchase",
        description:
          "The conversion's event type (`purchase`); any but `page_view` and `message.*`, which are not attributed",
      }),
    ),
  }),
  attributionResult: Type.Object({
    model: StringEnum(ATTRIBUTION_MODELS),
    touches: Type.Array(
      Type.Object({
        kind: StringEnum(["campaign", "source"] as const, {
          description: "A campaign message sent to the contact, or a UTM source it came from",
        }),
        key: Type.String({ description: "The campaign id, or the UTM source" }),
        conversions: Type.Number({
          description: "Conversions in the range attributed to it (linear: fractions)",
        }),
        revenue: Type.Number({ description: "Their `metadata.amount`, attributed the same way" }),
      }),
      {
        description:
          "Over each conversion's touches in the 30 days up to it, by kind and key; most conversions first, at most 100",
      },
    ),
  }),
  realtime: Params({ workspaceId: Id }),
  realtimeResult: Type.Object({
    activeVisitors: Type.Integer({
      description: "Distinct contacts (else sessions) with an event in the last 30 minutes",
    }),
    points: Type.Array(PointSchema, { description: "Events per minute, the last 30 minutes" }),
    recentEvents: Type.Array(
      Type.Object({
        id: Type.String(),
        type: Type.String(),
        contactId: Nullable(Type.String()),
        occurredAt: DateTime(),
      }),
    ),
  }),
  rebuildRollups: Params({
    from: Type.Optional(
      Type.String({ format: "date-time", description: "From its UTC day (everything kept)" }),
    ),
    to: Type.Optional(Type.String({ format: "date-time", description: "Through its UTC day (today)" })),
  }),
  rebuildRollupsResult: Type.Object(
    Object.fromEntries(SOURCES.map((source) => [source, RebuiltDays])) as Record<
      (typeof SOURCES)[number],
      typeof RebuiltDays
    >,
    { description: "Each source's UTC days rebuilt (`to` exclusive); null where left as they were" },
  ),
};

/** Any analytics answer: what a dashboard widget's `result` holds. */
export const AnalyticsAnswerSchema = Component(
  "AnalyticsAnswer",
  Type.Union(
    [
      schemas.overviewResult,
      schemas.timeseriesResult,
      schemas.campaignResult,
      schemas.cohortsResult,
      schemas.deliverabilityResult,
      schemas.domainsResult,
      schemas.funnelResult,
      schemas.realtimeResult,
      schemas.revenueResult,
      schemas.sourcesResult,
      schemas.attributionResult,
      schemas.activityResult,
    ],
    { description: "The analytics answer of the widget's endpoint (see the Analytics routes)" },
  ),
);
export type AnalyticsAnswer = Static<typeof AnalyticsAnswerSchema>;
