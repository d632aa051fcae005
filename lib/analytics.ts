/**
 * The analytics answers by name (contract-messaging section 12): what a
 * dashboard widget or a report names as its `endpoint`, each served at
 * `{ws}/analytics/<name>` (`overview` is `{ws}/analytics` itself).
 */
export const ANALYTICS_ENDPOINTS = [
  "overview",
  "timeseries",
  "campaigns",
  "cohorts",
  "deliverability",
  "domains",
  "funnel",
  "realtime",
  "revenue",
  "sources",
  "attribution",
  "activity",
] as const;

export type AnalyticsEndpoint = (typeof ANALYTICS_ENDPOINTS)[number];

/** The analytics action answering each name (`campaigns` takes the widget's or report's `campaignId`). */
export const ANALYTICS_ACTIONS: Record<AnalyticsEndpoint, string> = {
  overview: "analytics.overview",
  timeseries: "analytics.timeseries",
  campaigns: "analytics.campaign",
  cohorts: "analytics.cohorts",
  deliverability: "analytics.deliverability",
  domains: "analytics.domains",
  funnel: "analytics.funnel",
  realtime: "analytics.realtime",
  revenue: "analytics.revenue",
  sources: "analytics.sources",
  attribution: "analytics.attribution",
  activity: "analytics.activity",
};
